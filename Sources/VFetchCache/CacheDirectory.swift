import Foundation
import Synchronization
import VFetchCore
import VFetchEngine

/// The player cache on disk: per entry `ID.part` and `ID.vfetch` (a `vfetch get` side file and its
/// manifest, kept when complete), an `index.json` of keys and last accesses, and a `lock` held by
/// whoever changes the directory (the server, or `vfetch cache rm|clear|gc`).
package final class CacheDirectory: Sendable {
    /// One entry as the files say, for `vfetch cache ls` and `/status`.
    package struct EntryInfo: Sendable {
        package var id: String
        package var key: String
        package var url: String
        package var length: Int64?
        /// Bytes the manifest records as saved.
        package var bytesCached: Int64
        /// Disk space the sparse file takes.
        package var bytesOnDisk: Int64
        package var lastAccess: Double
        package var contentType: String?
        package var presentRanges: [Range<Int64>]
        /// Why the entry cannot be served (its manifest cannot be read), or nil.
        package var failure: String? = nil
        package var isComplete: Bool { length.map { bytesCached == $0 } ?? false }
        /// A secret (an AES key): kept for offline play, never listed.
        package var isSecret: Bool { CacheIndex.isSecretKey(key) || CacheIndex.isSecretEntry(id: id, url: url) }
        package var state: CacheEntryState { CacheEntryState(length: length, bytesCached: bytesCached, failure: failure) }
    }

    package let path: String
    let index: Mutex<(entries: CacheIndex, dirty: Bool)>
    private let saving = Mutex(())
    /// The open `lock` file while this process holds the directory; -1 once `unlock()`ed (or never locked).
    private let lockDescriptor: Mutex<Int32>

    /// Opens (creating it if need be) and, when `exclusive`, locks the directory; `.busy` when another
    /// process holds the lock. Without the lock only reading is safe.
    package init(path: String, exclusive: Bool = true) throws(DownloadError) {
        self.path = path
        try Self.makePrivate(path)
        var fd: Int32 = -1
        if exclusive {
            do { fd = try FileSystem.open(SideFiles.lock(in: path), .readWrite, creating: 0o600) } catch { throw .forOutput(error) }
            do { try FileSystem.lock(fd) } catch {
                FileSystem.close(fd)
                throw .busy(path + " (a vfetch serve uses this cache; stop it first)")
            }
        }
        lockDescriptor = Mutex(fd)
        index = Mutex((Self.readIndex(path), false))
    }

    deinit { unlock() }

    /// Lets another process (or a later start in this one) have the directory: after the last save.
    package func unlock() {
        lockDescriptor.withLock { fd in
            if fd >= 0 {
                // Released before the close: a process another thread is spawning may hold a copy of the
                // descriptor until its exec, and a start again in this process would find the lock taken.
                FileSystem.unlock(fd)
                FileSystem.close(fd)
            }
            fd = -1
        }
    }

    /// Makes `path` a directory only this user can enter: creates it (and missing parents) with mode
    /// 0700, tightens one of this user's that group or others may enter, and refuses one that belongs
    /// to another user.
    ///
    /// The cache directory holds the API's `token`, `queue.json` with the URLs and request headers of
    /// downloads (passwords, cookies, signed links) and the files players watched. A directory of
    /// ours that others may enter was made so by an earlier vfetch (which created it 0755) or by a
    /// `mkdir` with the usual umask, not chosen to share these: it is tightened rather than refused,
    /// so an existing cache keeps working. Another user's directory is refused: its owner could read
    /// the token and replace the queue, and it cannot be tightened.
    package static func makePrivate(_ path: String) throws(DownloadError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            try? FileSystem.makeDirectory(prefix, mode: 0o700)  // EEXIST for those that are there
        }
        let fd: Int32
        do { fd = try FileSystem.openDirectory(path) } catch {
            throw .outputNotWritable("\(path): cannot create the cache directory (\(error))")
        }
        defer { FileSystem.close(fd) }
        let status: FileSystem.Status
        do { status = try FileSystem.status(of: fd) } catch { throw .forOutput(FileSystemError(error, path: path)) }
        guard status.isOwnedByThisUser else {
            throw .outputNotWritable(
                "\(path) belongs to another user (uid \(status.owner)); vfetch keeps its token and credentials "
                    + "in its cache directory: use one of your own (--cache-dir)")
        }
        if status.permissions & 0o077 != 0 {
            do { try FileSystem.setPermissions(fd, 0o700) } catch { throw .forOutput(FileSystemError(error, path: path)) }
        }
    }

    /// The default: `$XDG_CACHE_HOME/vfetch`, or `~/.cache/vfetch`.
    package static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let base = environment["XDG_CACHE_HOME"], base.hasPrefix("/") { return base + "/vfetch" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/vfetch"
    }

    /// Where entry `id`'s files go (add `.part` / `.vfetch`); `id` is always a hash, never a path.
    package func entryPath(_ id: String) -> String {
        precondition(CacheIndex.isID(id), "entry IDs are hashes")
        return path + "/" + id
    }

    /// Records a read of `key` now; returns its entry ID.
    @discardableResult
    package func touch(key: String, url: String) -> String {
        let id = CacheIndex.id(forKey: key)
        let now = Date().timeIntervalSince1970
        index.withLock { index in
            index.entries.entries[id] = CacheIndex.Entry(key: key, url: url, lastAccess: now)
            index.dirty = true
        }
        return id
    }

    /// Every entry: those of the index, and files no index names (left by a crash), for `gc`.
    package func entries() -> [EntryInfo] {
        let known = index.withLock { $0.entries.entries }
        // Kept playlists are not files' entries (see `keptPlaylists()`).
        var ids = Set(known.filter { !CacheIndex.isPlaylistKey($0.value.key) }.keys)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where SideFiles.output(ofKeptPlaylist: name) == nil {
            let id = name.split(separator: ".").first.map(String.init) ?? ""
            if CacheIndex.isID(id), !CacheIndex.isPlaylistKey(known[id]?.key ?? "") { ids.insert(id) }
        }
        return ids.sorted().map { id in
            var manifest: PartialDownload?
            var failure: String?
            do {
                manifest = try PartialDownload(outputPath: entryPath(id))
            } catch DownloadError.noDownload {
                // No manifest yet (a download that saved nothing so far): an empty entry.
            } catch {
                // The entry's own files are named by its ID: the directory adds nothing to the reason.
                failure = "\(error)".replacingOccurrences(of: path + "/", with: "")
            }
            let entry = known[id]
            return EntryInfo(
                id: id, key: entry?.key ?? "", url: entry?.url ?? manifest?.url ?? "", length: manifest?.length,
                bytesCached: manifest?.bytesDone ?? 0, bytesOnDisk: Self.diskUsage(SideFiles(output: entryPath(id)).part),
                lastAccess: entry?.lastAccess ?? 0, contentType: manifest?.contentType,
                presentRanges: manifest?.presentRanges ?? [], failure: failure)
        }
    }

    /// The disk space each entry's data takes, by ID; cheaper than `entries()`, for size checks.
    package func diskUsage() -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            // A kept playlist counts as an entry of its own, evicted least recently used like any.
            if let id = SideFiles.output(ofPart: name) ?? SideFiles.output(ofKeptPlaylist: name), CacheIndex.isID(id) {
                sizes[id, default: 0] += Self.diskUsage(path + "/" + name)
            }
        }
        return sizes
    }

    /// Deletes an entry's files and forgets it; `sync: false` leaves the directory's fsync to the caller.
    package func remove(_ id: String, sync: Bool = true) {
        let base = entryPath(id)
        for file in SideFiles(output: base).unfinished + [SideFiles(output: base).keptPlaylist] { try? FileSystem.remove(file) }
        index.withLock { index in
            index.entries.entries[id] = nil
            index.dirty = true
        }
        if sync { FileSystem.syncDirectory(of: base) }
    }

    // MARK: - Kept playlists

    /// The kept copy of the playlist at `url`, if there is a whole one.
    package func keptPlaylist(url: String) -> KeptPlaylist? {
        let file = SideFiles(output: entryPath(CacheIndex.id(forKey: CacheIndex.playlistKey(url: url)))).keptPlaylist
        guard let bytes = try? FileSystem.contents(at: file) else { return nil }
        return KeptPlaylist(decoding: bytes)
    }

    /// Keeps `playlist` (replacing the copy before it, durably, mode 0600) and records the access.
    package func keep(_ playlist: KeptPlaylist) throws(FileSystemError) {
        let id = touch(key: CacheIndex.playlistKey(url: playlist.facts.url), url: playlist.facts.url)
        try FileReplacement.write(playlist.encoded(), to: SideFiles(output: entryPath(id)).keptPlaylist)
    }

    /// Records a read of the kept playlist at `url` (the copy answered a player).
    package func touchKeptPlaylist(url: String) { touch(key: CacheIndex.playlistKey(url: url), url: url) }

    /// Forgets the kept copy of the playlist at `url`, if any: it became live, or its origin says it is gone.
    package func forgetPlaylist(url: String) {
        let id = CacheIndex.id(forKey: CacheIndex.playlistKey(url: url))
        guard FileManager.default.fileExists(atPath: SideFiles(output: entryPath(id)).keptPlaylist) else { return }
        remove(id)
    }

    /// The IDs of every kept playlist on disk, for `vfetch cache clear`.
    package func keptPlaylists() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).compactMap {
            SideFiles.output(ofKeptPlaylist: $0)
        }.filter(CacheIndex.isID)
    }

    /// Makes removals durable.
    package func sync() { FileSystem.syncDirectory(of: path + "/index.json") }

    /// The evictions that fit the cache in `maxBytes`, least recently used first, never one in `inUse`.
    package func evictions(sizes: [String: Int64], maxBytes: Int64, inUse: Set<String>) -> [String] {
        index.withLock { $0.entries.evictions(sizes: sizes, maxBytes: maxBytes, inUse: inUse) }
    }

    /// Evicts least recently used entries, never those in `inUse`, until the cache fits in `maxBytes`;
    /// returns the evicted IDs.
    @discardableResult
    package func evict(toFit maxBytes: Int64, inUse: Set<String>) -> [String] {
        // Kept playlists too (`diskUsage`), so `cache gc --max-cache-size` counts and evicts them as the server does.
        let sizes = diskUsage()
        let chosen = index.withLock { $0.entries.evictions(sizes: sizes, maxBytes: maxBytes, inUse: inUse) }
        for id in chosen { remove(id) }
        return chosen
    }

    /// Removes the entries `names` (IDs, or the URLs or keys they were read by) name, and saves the index:
    /// the names that name none. For a directory no server holds (`vfetch cache rm`).
    package func remove(named names: [String]) -> [String] {
        var missing: [String] = []
        for name in names {
            let ids = ids(named: name)
            if ids.isEmpty { missing.append(name) }
            for id in ids { remove(id) }
        }
        save()
        return missing
    }

    /// Removes every entry and kept playlist, and saves the index (`vfetch cache clear`).
    package func clear() {
        for entry in entries() { remove(entry.id) }
        for id in keptPlaylists() { remove(id) }
        save()
    }

    /// Removes the entries without a readable manifest (they hold nothing a server could serve), then evicts
    /// the least recently used until the cache fits in `maxBytes`, and saves the index (`vfetch cache gc`):
    /// the IDs evicted.
    package func collect(toFit maxBytes: Int64) -> [String] {
        for entry in entries() where entry.length == nil { remove(entry.id) }
        let evicted = evict(toFit: maxBytes, inUse: [])
        save()
        return evicted
    }

    /// Writes the index if it changed (atomically, like a manifest). Saves run one at a time, so an
    /// older snapshot never lands after a newer one (and they never share the temporary file).
    package func save() {
        saving.withLock { _ in
            let data: Data? = index.withLock { index in
                guard index.dirty else { return nil }
                index.dirty = false
                return try? index.entries.encoded()
            }
            guard let data else { return }
            do {
                try FileReplacement.write([UInt8](data), to: path + "/index.json")
            } catch {
                index.withLock { $0.dirty = true }  // try again next time
            }
        }
    }

    /// The token API clients must send, from `token` (mode 0600), made on first use.
    package func accessToken() throws(DownloadError) -> String {
        if let token = Self.readToken(cacheDirectory: path) { return token }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.map {
            String(repeating: "0", count: 16 - $0.count) + $0
        }.joined()
        do { try FileReplacement.write(Array(token.utf8), to: path + "/token") } catch { throw .forOutput(error) }
        return token
    }

    /// The token of a cache directory's server, for clients; nil when there is none.
    package static func readToken(cacheDirectory: String) -> String? {
        guard let data = try? FileSystem.contents(at: cacheDirectory + "/token") else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }

    private static func readIndex(_ path: String) -> CacheIndex {
        // A damaged index costs only access times and keys: the entries' own manifests stay valid.
        guard let data = try? FileSystem.contents(at: path + "/index.json"),
            let index = try? CacheIndex(decoding: Data(data)), index.version == CacheIndex.formatVersion
        else { return CacheIndex() }
        return index
    }

    /// The space a (sparse) file takes on disk.
    static func diskUsage(_ path: String) -> Int64 {
        (try? FileSystem.status(at: path, followingLinks: true).allocatedBytes) ?? 0
    }
}
