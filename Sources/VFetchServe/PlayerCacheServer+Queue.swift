import Foundation
import VFetchCore
import VFetchEngine
import VFetchStreams

/// The persistent download queue the embedded server hosts, as `vfetch add`, `ls`, `pause`, `resume` and `rm`
/// use `vfetch serve`'s: at most N at once, saved in the cache directory (`queue.json`), and picked up again
/// where each download stopped on the next `start`.
extension PlayerCacheServer {
    /// One download in the queue.
    public struct QueuedDownload: Sendable, Equatable {
        public enum State: String, Sendable, Codable {
            case queued, running, paused, done, failed
        }

        /// The queue's name for it.
        public var id: String
        /// Without its password.
        public var url: String
        public var state: State
        /// The file it writes, once known.
        public var path: String?
        /// Why it failed.
        public var error: String?
        public var bytesDone: Int64?
        public var length: Int64?
        /// While it runs.
        public var bytesPerSecond: Double?
    }

    /// Queues `url` for `destination` (a file, or a directory in which the server's name is used), both
    /// absolute paths; HLS and DASH take `format` as `DownloadOptions.format` does, a file `mirrors` as
    /// `DownloadOptions.mirrors`. Returns its ID; throws `DownloadError.badURL` for a request the queue
    /// cannot take, `formatUnavailable` for a bad selector.
    public func add(
        _ url: String, to destination: Destination, format: String? = nil, mirrors: [String] = []
    ) async throws(DownloadError) -> String {
        let (output, outputIsDirectory) =
            switch destination {
            case .file(let path): (path, false)
            case .directory(let path): (path, true)
            }
        let request = DownloadQueue.Request(
            url: url, output: output, outputIsDirectory: outputIsDirectory, format: format, mirrors: mirrors.isEmpty ? nil : mirrors)
        if let problem = request.problem { throw .badURL(problem) }
        do { _ = try TrackSelection(format) } catch { throw .formatUnavailable("format \(format ?? ""): \(error)") }
        return await queue.add(request)
    }

    /// Stops a queued or running download, keeping what it saved; false when there is no such ID.
    public func pause(_ id: String) async -> Bool { await queue.pause(id) }

    /// Queues a paused or failed download again, to go on from what it saved.
    public func resume(_ id: String) async -> Bool { await queue.resume(id) }

    /// Takes a download out of the queue, and with `deletingData` its unfinished file as well.
    public func remove(_ id: String, deletingData: Bool = false) async -> Bool {
        await queue.remove(id, deleteData: deletingData)
    }

    /// Every download, in queue order.
    public func downloads() async -> [QueuedDownload] { await queue.list().downloads.map(QueuedDownload.init) }

    /// How many downloads run at once (1-64; 3 unless set).
    public func setMaxConcurrentDownloads(_ count: Int) async {
        await queue.setLimits(maxConcurrent: min(max(count, 1), DownloadQueue.concurrencyRange.upperBound), maxBytesPerSecond: nil)
    }

    /// Each download as it changes (queued, started, progress about once a second, paused, done, failed), from
    /// now until the server stops or the stream is dropped.
    public func downloadUpdates() async -> AsyncStream<QueuedDownload> {
        let frames = await queue.subscribe()
        return AsyncStream { continuation in
            let relay = Task {
                for await frame in frames {
                    // `event: state|progress\ndata: {item}`; `removed` and `notice` carry no item.
                    guard frame.hasPrefix("event: state\n") || frame.hasPrefix("event: progress\n"),
                        let data = frame.split(separator: "\n").first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                        let item = try? JSONDecoder().decode(QueueAPI.Item.self, from: Data(data.utf8))
                    else { continue }
                    continuation.yield(QueuedDownload(item))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in relay.cancel() }
        }
    }
}

extension PlayerCacheServer.QueuedDownload {
    init(_ item: QueueAPI.Item) {
        self.init(
            id: item.id, url: item.url, state: State(rawValue: item.state.rawValue) ?? .failed, path: item.path, error: item.error,
            bytesDone: item.bytesDone, length: item.length, bytesPerSecond: item.rate)
    }
}
