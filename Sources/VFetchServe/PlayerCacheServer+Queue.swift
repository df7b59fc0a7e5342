import VFetchCore
import VFetchEngine

/// The persistent download queue the embedded server hosts, as `vfetch add`, `ls`, `pause`, `resume` and `rm`
/// use `vfetch serve`'s: at most N at once, saved in the cache directory (`queue.json`), and picked up again
/// where each download stopped on the next `start`.
extension PlayerCacheServer {
    /// One download in the queue.
    public struct QueuedDownload: Sendable, Equatable {
        /// Where it is in the queue: waiting its turn, running, paused, finished or failed.
        public enum State: String, Sendable, Codable {
            case queued, running, paused, done, failed
        }

        /// The queue's name for it.
        public var id: String
        /// Without its password.
        public var url: String
        /// Where it is in the queue.
        public var state: State
        /// The file it writes, once known.
        public var path: String?
        /// Why it failed.
        public var error: String?
        /// Bytes saved, once known.
        public var bytesDone: Int64?
        /// The file's size, once known.
        public var length: Int64?
        /// While it runs.
        public var bytesPerSecond: Double?
    }

    /// Queues `url` for `destination` (a file, or a directory in which the server's name is used), both
    /// absolute paths; HLS and DASH take `format` as `DownloadOptions.format` does, a file `mirrors` as
    /// `DownloadOptions.mirrors`. Returns its ID; throws `DownloadError.badURL` for a request the queue
    /// cannot take (a descriptor: the queue outlives this process), `formatUnavailable` for a bad selector.
    public func add(
        _ url: String, to destination: Destination, format: String? = nil, mirrors: [String] = []
    ) async throws(DownloadError) -> String {
        let (output, isDirectory) =
            switch destination {
            case .file(let path): (path, false)
            case .directory(let path): (path, true)
            case .descriptor: throw .badURL("\(url): a queued download goes to a file, not to a descriptor")
            }
        let request = DownloadQueue.Request(
            url: url, output: output, outputIsDirectory: isDirectory, format: format, mirrors: mirrors.isEmpty ? nil : mirrors)
        return try await queue.add(request)
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
        let updates = await queue.subscribe()
        return AsyncStream { continuation in
            let relay = Task {
                for await update in updates {
                    switch update {
                    case .state(let item), .progress(let item): continuation.yield(QueuedDownload(item))
                    case .removed, .notice: continue
                    }
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
