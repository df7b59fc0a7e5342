import Foundation
import VFetchCore

/// A download of one file over many connections (`Download` adds streams and the remux on top).
///
/// ```swift
/// let download = FileDownload(url: "https://example.com/movie.mp4", to: .file("movie.mp4"))
/// Task { for await event in download.events { print(event) } }
/// let summary = try await download.run()
/// ```
public final class FileDownload: Sendable {
    public let url: String
    public let destination: Destination
    public let options: DownloadOptions
    /// Progress, notices and the summary, as they happen; ends when `run()` returns.
    public let events: AsyncStream<DownloadEvent>
    private let continuation: AsyncStream<DownloadEvent>.Continuation
    private let signal = CancelSignal()
    private let demand: ReaderDemand?

    public convenience init(url: String, to destination: Destination, options: DownloadOptions = DownloadOptions()) {
        self.init(url: url, to: destination, options: options, demand: nil)
    }

    /// A download for the player cache: `demand` steers it, and it keeps its finished file in place.
    package init(url: String, to destination: Destination, options: DownloadOptions, demand: ReaderDemand?) {
        self.url = url
        self.destination = destination
        self.options = options
        self.demand = demand
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Downloads the file; call once. The transfers run on a thread of their own, off the cooperative pool.
    public func run() async throws(DownloadError) -> DownloadSummary {
        defer { continuation.finish() }
        guard isFetchableURL(url) else { throw .badURL(url) }
        let (url, destination, options, events, signal, demand) = (url, destination, options, continuation, signal, demand)
        let result = await withTaskCancellationHandler {
            await onOwnThread(named: "vfetch-transfers") { () -> Result<DownloadSummary, DownloadError> in
                // The engines (and the side file's lock) are gone before the caller hears, so it may start again at once.
                do throws(DownloadError) {
                    var engine = try Engine(
                        url: url, destination: destination, options: options, events: events, signal: signal, demand: demand)
                    let result = engine.run()
                    // The probe vouched for the saved bytes, but a later response says the file changed:
                    // those bytes are of the old file, so start over once (a player cache handles this itself).
                    guard case .failure(.remoteChanged(let reason)) = result, engine.resumedBytes > 0, demand == nil
                    else { return result }
                    events.yield(.notice("remote file changed during the resume (\(reason)); starting over"))
                    var restart = options
                    restart.restart = true
                    engine = try Engine(url: url, destination: destination, options: restart, events: events, signal: signal)
                    return engine.run()
                } catch {
                    return .failure(error)
                }
            }
        } onCancel: {
            signal.cancel()
        }
        return try result.get()
    }

    /// Stops the download; `run()` then throws `DownloadError.interrupted` and the side file stays.
    public func cancel() { signal.cancel() }

    /// Makes the engine look at its readers' demand now rather than on its next turn.
    package func wake() { signal.wake() }
}
