import Foundation
import NIOCore
import NIOPosix
import Synchronization
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchMedia
import VFetchStreams

/// The cache behind `vfetch serve`: live entries by ID over a `CacheDirectory`, kept under a size.
package final class PlayerCache: Sendable {
    package struct Settings: Sendable {
        package var maxBytes: Int64 = 10 << 30
        package var prefetch = ReaderDemand.Prefetch.full
        package var download = DownloadOptions()
        /// Threads for the cache's blocking disk work: enough for a few players' reads to go on
        /// while a size check, an index save or a slow disk holds one.
        package var diskThreads = 4
        package init() {}
    }

    package let directory: CacheDirectory
    package let settings: Settings
    /// The size the cache keeps within: `settings.maxBytes` until `setMaxBytes` changes it.
    private let cap: Mutex<Int64>
    package var maxBytes: Int64 { cap.withLock { $0 } }
    /// Where every blocking file operation of the server runs (reads for players, size checks,
    /// evictions, index saves, manifests): off the event loops, which would stop answering, and off
    /// Swift's cooperative pool, where a blocking call stalls unrelated tasks. Stopped by `shutdown`.
    package let disk: NIOThreadPool
    private let entries = Mutex<[String: CacheEntry]>([:])
    /// Held while the cache's size is checked, one check at a time: whether the last one found it full.
    private let trimming = Mutex(false)
    /// What the last size check found, and the growth since: `grew` stops the downloads itself when
    /// the check it queued could come too late (the disk's threads busy, a slow disk).
    private let growth = Mutex(Growth())
    private struct Growth {
        /// Bytes on disk at the last check, after its evictions.
        var total: Int64 = 0
        /// Of those, the bytes of entries nobody used then: what the next check could evict.
        var evictable: Int64 = 0
        var sinceTrim: Int64 = 0
        /// Whether the downloads are stopped until a check finds room.
        var stopped = false

        /// Whether even evicting every entry nobody used could not keep what may arrive before the next
        /// check under `maxBytes`.
        func mustStop(maxBytes: Int64, margin: Int64) -> Bool { total - evictable + sinceTrim + margin / 2 >= maxBytes }
    }
    /// Keys whose origin failed lately, with the message and until when it is given again without
    /// asking the origin: a player retrying a dead URL gets it at once, and failed URLs leave nothing
    /// on disk, however many a page sends.
    private let failures = Mutex<[String: Failure]>([:])
    /// The segments of the media playlists serve rewrote, and which are fetched ahead of players.
    private let lookahead = Mutex(SegmentLookahead())
    /// How the reads whose windows wait (`SegmentLookahead.whole`) were made, by the segment's key.
    private let readers = Mutex<[String: (url: String, publicOnly: Bool, loop: any EventLoop)]>([:])
    /// The kept playlists `/status` groups streams by, parsed off `disk`.
    private let keptDocuments: KeptDocuments
    static let failureMemory: Duration = .seconds(5)
    static let maxFailures = 256

    package init(directory: CacheDirectory, settings: Settings) {
        self.directory = directory
        self.settings = settings
        cap = Mutex(settings.maxBytes)
        disk = NIOThreadPool(numberOfThreads: settings.diskThreads)
        disk.start()
        keptDocuments = KeptDocuments(directory: directory)
    }

    /// Runs blocking disk work on `disk`; nothing once it is stopped.
    private func onDisk(_ work: @escaping @Sendable () -> Void) {
        disk.submit { state in
            guard case .active = state else { return }
            work()
        }
    }

    /// The entry for `key` (the URL unless the player gave one), made on first use; counts as an access.
    func entry(key: String, url: String) -> CacheEntry {
        let id = directory.touch(key: key, url: url)
        let isSegment = lookahead.withLock { $0.isSegment(url) }
        let (entry, isNew) = entries.withLock { entries in
            if let entry = entries[id] { return (entry, false) }
            var options = settings.download
            options.privateOutput = true
            let entry = CacheEntry(
                id: id, url: url, path: directory.entryPath(id), options: options, prefetch: settings.prefetch,
                isSegment: isSegment, maxBytes: maxBytes, disk: disk,
                downloadEnded: { [weak self] in
                    guard let self else { return }
                    onDisk { self.trim() }
                    readAhead(afterWhole: key)
                },
                grew: { [weak self] bytes in self?.grew(bytes) })
            entries[id] = entry
            return (entry, true)
        }
        if isNew { onDisk { self.trim() } }
        return entry
    }

    /// Serve rewrote the playlist at `url`: a media playlist listing `segments`, or a master offering `variants`.
    func learned(playlist url: String, segments: [String], variants: [String]) {
        lookahead.withLock { lookahead in
            lookahead.learned(playlist: url, segments: segments)
            lookahead.learned(master: url, variants: variants)
        }
    }

    /// Serve rewrote the static DASH manifest at `url`: each Representation's segments become a
    /// list of their own (named by the manifest and the Representation), and the Representations
    /// of a kind are alternatives, as an HLS master's variants are.
    func learned(manifest url: String, catalog: StreamCatalog) {
        var alternatives: [StreamTrack.Kind: [String]] = [:]
        lookahead.withLock { lookahead in
            for track in catalog.tracks {
                guard case .list(let list) = track.segments else { continue }
                let name = url + "#" + track.id
                var segments: [String] = []
                for segment in list.segments where segment.resource.url.absoluteString != segments.last {
                    segments.append(segment.resource.url.absoluteString)
                }
                lookahead.learned(playlist: name, segments: segments)
                alternatives[track.kind, default: []].append(name)
            }
            for (kind, names) in alternatives { lookahead.learned(master: url + "#" + kind.rawValue, variants: names) }
        }
    }

    /// A player asked for `url`: when it is a segment of a playlist serve rewrote, the next few are
    /// fetched into the cache in parallel (each an entry like any, its download started as a
    /// player's open would) once `url` is whole, and those fetched ahead of an earlier place are
    /// stopped at once. Only with `--prefetch full`: the other settings fetch only what players read.
    func readAhead(after url: String, publicOnly: Bool, on loop: any EventLoop) {
        guard settings.prefetch == .full else { return }
        let key = CacheIndex.key(url: url, playerKey: nil, forPage: publicOnly)
        let whole = entries.withLock { $0[CacheIndex.id(forKey: key)] }?.status.complete ?? false
        let action = lookahead.withLock { lookahead in
            if !whole {
                readers.withLock { readers in
                    readers[key] = (url, publicOnly, loop)
                    if readers.count > Self.maxFailures, let other = readers.keys.first(where: { $0 != key }) { readers[other] = nil }
                }
            }
            return lookahead.read(url, whole: whole)
        }
        perform(action, publicOnly: publicOnly, on: loop)
    }

    /// The download of the entry of `key` ended: the window its read left waiting starts.
    private func readAhead(afterWhole key: String) {
        guard let (url, publicOnly, loop) = readers.withLock({ $0.removeValue(forKey: key) }) else { return }
        perform(lookahead.withLock { $0.whole(url) }, publicOnly: publicOnly, on: loop)
    }

    /// Starts and stops the entries of the reader's kind (a page's, or a player's): see `CacheIndex.key`.
    private func perform(_ action: SegmentLookahead.Action, publicOnly: Bool, on loop: any EventLoop) {
        for next in action.start {
            let key = CacheIndex.key(url: next, playerKey: nil, forPage: publicOnly)
            // Nobody waits for the answer: a failure is met again, and answered, when a player asks.
            guard recentFailure(key: key, publicOnly: publicOnly) == nil else { continue }
            _ = entry(key: key, url: next).open(url: next, publicOnly: publicOnly, on: loop)
        }
        for far in action.cancel {
            let id = CacheIndex.id(forKey: CacheIndex.key(url: far, playerKey: nil, forPage: publicOnly))
            entries.withLock { $0[id] }?.cancelUnread()
        }
    }

    struct Failure: Sendable {
        var message: String
        /// What `vfetch get` would have exited with.
        var exitStatus: Int32?
        var until: ContinuousClock.Instant
        /// Met under a web page's rules (public addresses only): it tells nothing about a player's request.
        var publicOnly: Bool
    }

    /// Why `key`'s origin failed, if it did less than `failureMemory` ago for a request like this.
    func recentFailure(key: String, publicOnly: Bool) -> Failure? {
        let now = ContinuousClock.now
        return failures.withLock { failures in
            guard let failure = failures[key], failure.until > now, publicOnly || !failure.publicOnly else { return nil }
            return failure
        }
    }

    /// The origin failed before `entry` (of `key`) had any byte: remembered for a few seconds, and
    /// the entry is forgotten unless someone else uses it meanwhile.
    func failed(_ entry: CacheEntry, key: String, publicOnly: Bool, message: String, exitStatus: Int32?) {
        let now = ContinuousClock.now
        failures.withLock { failures in
            failures = failures.filter { $0.value.until > now }
            if failures.count >= Self.maxFailures, let oldest = failures.min(by: { $0.value.until < $1.value.until }) {
                failures[oldest.key] = nil
            }
            failures[key] = Failure(
                message: message, exitStatus: exitStatus, until: now + Self.failureMemory, publicOnly: publicOnly)
        }
        onDisk { [self] in
            guard ((try? PartialDownload(outputPath: entry.path))?.bytesDone ?? 0) == 0 else { return }
            entries.withLock { entries in
                guard entries[entry.id] === entry, entry.evict() else { return }
                entries[entry.id] = nil
                directory.remove(entry.id)
            }
        }
    }

    /// Keeps the cache within `maxBytes`, entries being downloaded included. Least recently used
    /// entries nobody reads or writes are evicted first; when what the downloads still fetch would
    /// not fit, they fetch only what their readers ask for; within half a margin of the limit,
    /// nothing more (a player asking for a missing byte gets 507) until room is made. Checks run
    /// every half margin of growth, so the files never pass the limit. It waits on the disk: call
    /// it on `disk`. With `room`, as much more is made free, and `add` (which takes it) runs before
    /// the next check.
    package func trim(making room: Int64 = 0, then add: () -> Void = {}) {
        trimming.withLock { full in
            let maxBytes = maxBytes
            let margin = Self.margin(maxBytes)
            // Growth from now on is not in `sizes`: it stays counted for `grew` after this check.
            let grownBefore = growth.withLock { $0.sinceTrim }
            let sizes = directory.diskUsage()
            // Chosen and removed under the lock, so no reader can pick up an entry on its way out.
            let (evicted, live, needed, inUse) = entries.withLock { entries in
                let inUse = Set(entries.filter { $0.value.isInUse }.keys)
                // What the running downloads still fetch (two margins where the length is not known yet): evicting
                // makes room for it before they fetch less. Bytes already on disk count once: `sizes` may hold more
                // than an entry has reported, even a whole small file before the entry heard its probe's answer
                // (counting both evicted one entry too many).
                let needed = entries.reduce(Int64(0)) { needed, entry in
                    let status = entry.value.status
                    guard status.downloading else { return needed }
                    let present = max(status.bytesPresent, sizes[entry.key] ?? 0)
                    return needed + max(0, (status.length ?? 2 * margin) - present)
                }
                let target = maxBytes - min(needed, 2 * margin) - room
                // An entry a reader took up since `inUse` was made stays (`evict` refuses it).
                let chosen = directory.evictions(sizes: sizes, maxBytes: target, inUse: inUse).filter { entries[$0]?.evict() ?? true }
                for id in chosen {
                    entries[id] = nil
                    directory.remove(id, sync: false)
                }
                return (chosen, Array(entries.values), needed, inUse)
            }
            if !evicted.isEmpty { directory.sync() }
            add()
            let total = sizes.filter { !evicted.contains($0.key) }.values.reduce(0, +) + room
            // Nothing more once even what may arrive before the next check would pass the limit;
            // readers only once what the downloads still fetch would not fit.
            var allowance: CacheEntry.Allowance =
                total + margin / 2 >= maxBytes
                ? .nothing : total + needed > maxBytes ? .readersOnly : .prefetch
            let evictable = sizes.filter { !evicted.contains($0.key) && !inUse.contains($0.key) }.values.reduce(0, +)
            // What arrived while this check ran may already call for the stop `grew` makes: it stays.
            let stopped = growth.withLock { growth in
                let since = max(0, growth.sinceTrim - grownBefore)
                growth = Growth(total: total, evictable: evictable, sinceTrim: since)
                growth.stopped = growth.mustStop(maxBytes: maxBytes, margin: margin)
                return growth.stopped
            }
            if stopped { allowance = .nothing }
            for entry in live { entry.allow(allowance) }
            if allowance == .nothing, !full {
                let limit = humanSize(maxBytes)
                ServeLog.cache.notice(
                    "the cache is full (--max-cache-size \(limit)) with files being read: fetching stops until a player leaves")
            }
            full = allowance == .nothing
        }
    }

    /// Removes the entries `name` names, as `vfetch cache rm` does when no server runs, but those in use
    /// (read by a player, or being fetched): nil when it names none. Call it on `disk`.
    package func remove(named name: String) -> (removed: [String], inUse: [String])? {
        let ids = directory.ids(named: name)
        guard !ids.isEmpty else { return nil }
        // Under the lock, as `trim` evicts: no reader picks up an entry on its way out.
        let (removed, inUse) = entries.withLock { entries in
            var (removed, inUse): ([String], [String]) = ([], [])
            for id in ids {
                guard entries[id]?.evict() ?? true else {
                    inUse.append(id)
                    continue
                }
                entries[id] = nil
                directory.remove(id, sync: false)
                removed.append(id)
            }
            return (removed, inUse)
        }
        directory.sync()
        directory.save()
        return (removed, inUse)
    }

    /// Keeps `playlist` as the copy of its URL to answer offline, within the cache's size: room is
    /// made before it is written (a check every few seconds would let playlists of up to 16 MiB
    /// pile up past the limit until then). One larger than a quarter of the cache is not kept, and
    /// the copy before it goes. Call it on `disk`.
    func keep(_ playlist: KeptPlaylist) throws(FileSystemError) {
        // Its line of facts and body, and the last block's rounding.
        let size = Int64(playlist.encoded().count) + 4096
        guard size <= maxBytes / 4 else { return directory.forgetPlaylist(url: playlist.facts.url) }
        var failure: FileSystemError?
        trim(making: size) {
            do throws(FileSystemError) { try directory.keep(playlist) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// What may arrive between two checks of the cache's size: checks run every `margin / 2` bytes.
    private var margin: Int64 { Self.margin(maxBytes) }
    private static func margin(_ maxBytes: Int64) -> Int64 { max(1 << 20, min(maxBytes / 8, 64 << 20)) }

    /// Keeps the cache within `bytes` from now on: entries fetch by it, and once the size check this
    /// makes returns, the least recently used entries past it are gone (those in use stay until their
    /// players leave). It waits on the disk: call it on `disk`.
    package func setMaxBytes(_ bytes: Int64) {
        cap.withLock { $0 = bytes }
        for entry in entries.withLock({ Array($0.values) }) { entry.setMaxBytes(bytes) }
        trim()
    }

    /// Entries grew by `bytes`: checks the size once they have grown by half a margin. When even
    /// evicting every entry nobody uses could not keep what arrives before that check under the
    /// limit, the downloads stop here and now, as the check would stop them: it may wait behind
    /// players' reads on the disk's threads while the downloads go on.
    private func grew(_ bytes: Int64) {
        let (maxBytes, margin) = (maxBytes, margin)
        let (due, stop) = growth.withLock { growth in
            growth.sinceTrim += bytes
            let stop = !growth.stopped && growth.mustStop(maxBytes: maxBytes, margin: margin)
            if stop { growth.stopped = true }
            return (growth.sinceTrim >= margin / 2, stop)
        }
        if stop {
            for entry in entries.withLock({ Array($0.values) }) { entry.allow(.nothing) }
        }
        if due || stop { onDisk { self.trim() } }
    }

    /// Saves the index and trims every few seconds, until cancelled.
    package func maintain() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            try? await disk.runIfActive { [self] in
                trim()
                directory.save()
            }
        }
    }

    /// Stops every download (each checkpoints), saves the index and stops the disk's threads.
    package func shutdown() async {
        for entry in entries.withLock({ Array($0.values) }) { await entry.stop() }
        try? await disk.runIfActive { [directory] in directory.save() }
        try? await disk.shutdownGracefully()
        await keptDocuments.shutdown()
    }

    /// What `GET /status` answers: entries (a stream as one, its files inside), bytes cached, readers, and per
    /// file the playable time ranges; URLs without their passwords.
    func status() async -> CacheStatus {
        let live = entries.withLock { $0 }
        let saved = (try? await disk.runIfActive { [directory] in directory.entries() })?.filter { !$0.isSecret } ?? []
        let documents = await keptDocuments.documents()
        var files: [String: CacheStatus.File] = [:]
        var members: [CachedStream.File] = []
        for info in saved {
            let now = live[info.id]?.status
            let present = now?.present ?? info.presentRanges
            let length = now?.length ?? info.length
            let cached = present.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }
            let complete = length.map { cached == $0 } ?? false
            var playable: [ClosedRange<Double>]?
            if let length {
                playable = await self.playable(path: SideFiles(output: directory.entryPath(info.id)).part, length: length, present: present)
            }
            files[info.id] = CacheStatus.File(
                id: info.id, url: redactedURL(info.url), key: redactedURL(info.key), length: length, bytesCached: cached,
                bytesOnDisk: info.bytesOnDisk, isComplete: complete,
                state: CacheEntryState(length: length, bytesCached: cached, failure: info.failure).name, lastAccess: info.lastAccess,
                readers: now?.readers ?? 0, isDownloading: now?.downloading ?? false, playable: playable)
            members.append(
                CachedStream.File(
                    id: info.id, url: info.url, bytesCached: cached, bytesOnDisk: info.bytesOnDisk, isComplete: complete,
                    lastAccess: info.lastAccess))
        }
        let all = Array(files.values)
        // A stream is one entry, its files' entries inside it.
        var list: [CacheStatus.Entry] = []
        for stream in CachedStream.group(documents: documents, files: members) {
            list.append(.stream(CacheStatus.Stream(stream.redacted, parts: stream.parts.compactMap { files.removeValue(forKey: $0) })))
        }
        list += files.values.map { .file($0) }
        return CacheStatus(
            entries: list.sorted { $0.id < $1.id }, bytesCached: all.reduce(0) { $0 + $1.bytesCached },
            readers: all.reduce(0) { $0 + $1.readers })
    }

    /// Seconds playable from the bytes present; empty when not media or no index yet.
    private func playable(path: String, length: Int64, present: [Range<Int64>]) async -> [ClosedRange<Double>] {
        guard !present.isEmpty, let (_, ranges) = try? await probeMedia(path: path, length: length, present: present)
        else { return [] }
        return ranges
    }
}
