import Synchronization
import VFetchEngine

/// Several URLs into one directory, at most `maxConcurrent` downloading at once, as `aria2c -j N -i LIST`:
/// each the ``Download`` of its URL, started in the list's order as others end.
///
/// ```swift
/// let list = DownloadList(urls: urls, into: "videos", maxConcurrent: 5)
/// Task { for await update in list.updates { print(update) } }
/// let results = await list.run()
/// ```
///
/// A failure does not stop the others; ``cancel()`` (or cancelling the task) stops those running and
/// starts no more.
public final class DownloadList: Sendable {
    /// The URLs, in the order they start.
    public let urls: [String]
    /// Where each goes, under the name its server or URL gives; made (with those above it) if missing.
    public let directory: String
    /// The options of every download.
    public let options: DownloadOptions
    /// How many download at once at most.
    public let maxConcurrent: Int
    /// Each download's events and end, as they happen; ends when ``run()`` returns. None is dropped (an
    /// end is never lost), so read it while the list runs.
    public let updates: AsyncStream<Update>
    private let continuation: AsyncStream<Update>.Continuation

    /// What happened to the download of `urls[index]`.
    public enum Update: Sendable {
        /// What it said (``Download/events``).
        case event(index: Int, DownloadEvent)
        /// It ended: its last update.
        case ended(index: Int, Result<DownloadSummary, DownloadError>)
    }
    private let state = Mutex(State())

    private struct State {
        /// By the index of their URL.
        var running: [Int: Download] = [:]
        var cancelled = false
    }

    /// Downloads of `urls` into `directory`, at most `maxConcurrent` at once; nothing happens until ``run()``.
    public init(urls: [String], into directory: String, options: DownloadOptions = DownloadOptions(), maxConcurrent: Int = 5) {
        self.urls = urls
        self.directory = directory
        self.options = options
        self.maxConcurrent = max(1, maxConcurrent)
        (updates, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Downloads every URL; call once. Answers each URL's result, in the order of ``urls``: nil for one
    /// never started (after ``cancel()``, or once one was interrupted).
    public func run() async -> [Result<DownloadSummary, DownloadError>?] {
        defer { continuation.finish() }
        var results = [Result<DownloadSummary, DownloadError>?](repeating: nil, count: urls.count)
        await withTaskCancellationHandler {
            await withTaskGroup(of: (Int, Result<DownloadSummary, DownloadError>).self) { group in
                var next = 0
                func start() -> Bool {
                    guard next < urls.count else { return false }
                    let (index, continuation) = (next, continuation)
                    let download = Download(url: urls[index], to: .directory(directory), options: options)
                    let started = state.withLock { state in
                        if !state.cancelled { state.running[index] = download }
                        return !state.cancelled
                    }
                    guard started else { return false }
                    next += 1
                    group.addTask {
                        let relay = Task { for await event in download.events { continuation.yield(.event(index: index, event)) } }
                        let result: Result<DownloadSummary, DownloadError>
                        do throws(DownloadError) { result = .success(try await download.run()) } catch { result = .failure(error) }
                        await relay.value
                        continuation.yield(.ended(index: index, result))
                        return (index, result)
                    }
                    return true
                }
                while next < maxConcurrent, start() {}
                for await (index, result) in group {
                    results[index] = result
                    state.withLock { $0.running[index] = nil }
                    // An interrupted download (Ctrl-C reached it) ends the list: the rest are not begun.
                    if case .failure(.interrupted) = result { cancel() }
                    _ = start()
                }
            }
        } onCancel: {
            cancel()
        }
        return results
    }

    /// Stops the downloads running (each keeps what it saved, for the next run) and starts no more.
    public func cancel() {
        let running = state.withLock { state in
            state.cancelled = true
            return state.running
        }
        for download in running.values { download.cancel() }
    }
}
