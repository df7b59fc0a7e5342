import Foundation
import Testing
import VFetchCache
import VFetchCore
import VFetchEngine

/// Kept playlists in the cache directory: read back, counted in its size, evicted least recently used
/// like entries, never listed as entries, gone with `remove`.
struct KeptPlaylistCacheTests {
    func withDirectory(_ body: (CacheDirectory, String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "vfetch-kept-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(try CacheDirectory(path: path), path)
    }

    func playlist(_ url: String) -> KeptPlaylist {
        KeptPlaylist(
            url: url, finalURL: url, contentType: "application/vnd.apple.mpegurl", etag: "\"1\"", lastModified: nil,
            body: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\ns.ts\n#EXT-X-ENDLIST\n".utf8))
    }

    @Test func aKeptPlaylistIsReadBackCountedAndEvictedButNotAnEntry() throws {
        try withDirectory { directory, path in
            let url = "http://o/v/index.m3u8"
            #expect(directory.keptPlaylist(url: url) == nil)
            try directory.keep(playlist(url))
            #expect(directory.keptPlaylist(url: url) == playlist(url))
            let id = CacheIndex.id(forKey: CacheIndex.playlistKey(url: url))
            let file = path + "/" + id + ".playlist"
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(directory.entries().isEmpty)
            #expect(directory.keptPlaylists() == [id])
            let sizes = directory.diskUsage()
            #expect((sizes[id] ?? 0) > 0)
            // Over the size: evicted like any entry, its file with it.
            #expect(directory.evictions(sizes: sizes, maxBytes: 0, inUse: []) == [id])
            directory.remove(id)
            #expect(!FileManager.default.fileExists(atPath: file))
            #expect(directory.keptPlaylist(url: url) == nil)
        }
    }

    @Test func forgettingOneKeepsTheOthers() throws {
        try withDirectory { directory, _ in
            try directory.keep(playlist("http://o/a.m3u8"))
            try directory.keep(playlist("http://o/b.m3u8"))
            directory.forgetPlaylist(url: "http://o/a.m3u8")
            #expect(directory.keptPlaylist(url: "http://o/a.m3u8") == nil)
            #expect(directory.keptPlaylist(url: "http://o/b.m3u8") != nil)
            #expect(directory.keptPlaylists().count == 1)
            // `cache gc --max-cache-size 0` takes it too.
            #expect(directory.evict(toFit: 0, inUse: []).count == 1)
            #expect(directory.keptPlaylists().isEmpty)
        }
    }
}
