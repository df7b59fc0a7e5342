import Foundation
import Synchronization
import VFetch
import VFetchCore
import VFetchMedia

/// The cache behind `vfetch serve`: live entries by ID over a `CacheDirectory`, kept under a size.
package final class PlayerCache: Sendable {
    package struct Settings: Sendable {
        package var maxBytes: Int64 = 10 << 30
        package var prefetch = ReaderDemand.Prefetch.full
        package var download = DownloadOptions()
        package init() {}
    }

    package let directory: CacheDirectory
    package let settings: Settings
    private let entries = Mutex<[String: CacheEntry]>([:])
    /// Keys whose origin failed lately, with the message and until when it is given again without
    /// asking the origin: a player retrying a dead URL gets it at once, and failed URLs leave nothing
    /// on disk, however many a page sends.
    private let failures = Mutex<[String: Failure]>([:])
    static let failureMemory: Duration = .seconds(5)
    static let maxFailures = 256

    package init(directory: CacheDirectory, settings: Settings) {
        self.directory = directory
        self.settings = settings
    }

    /// The entry for `key` (the URL unless the player gave one), made on first use; counts as an access.
    func entry(key: String, url: String) -> CacheEntry {
        let id = directory.touch(key: key, url: url)
        let (entry, isNew) = entries.withLock { entries in
            if let entry = entries[id] { return (entry, false) }
            let entry = CacheEntry(
                id: id, url: url, path: directory.entryPath(id), options: settings.download, prefetch: settings.prefetch
            ) { [weak self] in self?.trim() }
            entries[id] = entry
            return (entry, true)
        }
        if isNew { Task { self.trim() } }  // disk work, off the event loop
        return entry
    }

    private struct Failure {
        var message: String
        var until: ContinuousClock.Instant
        /// Met under a web page's rules (public addresses only): it tells nothing about a player's request.
        var publicOnly: Bool
    }

    /// Why `key`'s origin failed, if it did less than `failureMemory` ago for a request like this.
    func recentFailure(key: String, publicOnly: Bool) -> String? {
        let now = ContinuousClock.now
        return failures.withLock { failures in
            guard let failure = failures[key], failure.until > now, publicOnly || !failure.publicOnly else { return nil }
            return failure.message
        }
    }

    /// The origin failed before `entry` (of `key`) had any byte: remembered for a few seconds, and
    /// the entry is forgotten unless someone else uses it meanwhile.
    func failed(_ entry: CacheEntry, key: String, publicOnly: Bool, message: String) {
        let now = ContinuousClock.now
        failures.withLock { failures in
            failures = failures.filter { $0.value.until > now }
            if failures.count >= Self.maxFailures, let oldest = failures.min(by: { $0.value.until < $1.value.until }) {
                failures[oldest.key] = nil
            }
            failures[key] = Failure(message: message, until: now + Self.failureMemory, publicOnly: publicOnly)
        }
        Task {  // disk work, off the event loop
            guard ((try? PartialDownload(outputPath: entry.path))?.bytesDone ?? 0) == 0 else { return }
            entries.withLock { entries in
                guard entries[entry.id] === entry, !entry.isInUse else { return }
                entries[entry.id] = nil
                directory.remove(entry.id)
            }
        }
    }

    /// Evicts least recently used entries nobody reads or writes until the cache fits.
    package func trim() {
        let sizes = Dictionary(uniqueKeysWithValues: directory.entries().map { ($0.id, $0.bytesOnDisk) })
        // Chosen and removed under the lock, so no reader can pick up an entry on its way out.
        let evicted = entries.withLock { entries in
            let inUse = Set(entries.filter { $0.value.isInUse }.keys)
            let chosen = directory.evictions(sizes: sizes, maxBytes: settings.maxBytes, inUse: inUse)
            for id in chosen {
                entries[id] = nil
                directory.remove(id, sync: false)
            }
            return chosen
        }
        if !evicted.isEmpty { directory.sync() }
    }

    /// Saves the index and trims every few seconds, until cancelled.
    package func maintain() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            trim()
            directory.save()
        }
    }

    /// Stops every download (each checkpoints) and saves the index.
    package func shutdown() async {
        for entry in entries.withLock({ Array($0.values) }) { await entry.stop() }
        directory.save()
    }

    /// `GET /status` as JSON: entries, bytes cached, readers, and per entry the playable time ranges.
    func statusJSON() async -> [UInt8] {
        let status = await status()
        let data = (try? JSONSerialization.data(withJSONObject: status, options: [.sortedKeys])) ?? Data()
        return Array(data) + [10]
    }

    private func status() async -> [String: Any] {
        let live = entries.withLock { $0 }
        var list: [[String: Any]] = []
        var totalCached: Int64 = 0
        var totalReaders = 0
        for info in directory.entries() {
            let now = live[info.id]?.status
            let present = now?.present ?? info.presentRanges
            let length = now?.length ?? info.length
            let cached = present.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }
            totalCached += cached
            totalReaders += now?.readers ?? 0
            var item: [String: Any] = [
                "id": info.id, "url": redactedURL(info.url), "key": redactedURL(info.key), "bytes_cached": cached,
                "bytes_on_disk": info.bytesOnDisk, "readers": now?.readers ?? 0,
                "downloading": now?.downloading ?? false, "complete": length.map { cached == $0 } ?? false,
                "last_access": info.lastAccess,
            ]
            if let length {
                item["length"] = length
                item["playable"] = await playable(path: directory.entryPath(info.id) + ".part", length: length, present: present)
            }
            list.append(item)
        }
        return ["entries": list, "bytes_cached": totalCached, "readers": totalReaders]
    }

    /// Seconds playable from the bytes present, as [start, end] pairs; empty when not media or no index yet.
    private func playable(path: String, length: Int64, present: [Range<Int64>]) async -> [[Double]] {
        guard !present.isEmpty, let (_, ranges) = try? await probeMedia(path: path, length: length, present: present)
        else { return [] }
        return ranges.map { [$0.lowerBound, $0.upperBound] }
    }
}
