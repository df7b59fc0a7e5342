import Foundation
import Testing
import VFetchCache
import VFetchCore
import VFetchEngine

@testable import VFetchServe

#if canImport(Glibc)
    import Glibc
#endif

/// `/status`'s kept playlists: each parsed once while its file is unchanged.
struct KeptDocumentsTests {
    func playlist(_ url: String, segments: Int) -> KeptPlaylist {
        let lines = (0..<segments).map { "#EXTINF:2,\ns\($0).ts\n" }.joined()
        return KeptPlaylist(
            url: url, finalURL: url, contentType: "application/vnd.apple.mpegurl", etag: nil, lastModified: nil,
            body: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(lines)#EXT-X-ENDLIST\n".utf8))
    }

    @Test func aKeptPlaylistIsParsedOnceWhileItsFileIsUnchanged() async throws {
        let path = NSTemporaryDirectory() + "vfetch-kept-documents-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = try CacheDirectory(path: path)
        let url = "http://o/v/index.m3u8"
        try directory.keep(playlist(url, segments: 3))
        let documents = KeptDocuments(directory: directory)
        let first = await documents.documents()
        #expect(first.count == 1 && first.first?.files[url]?.count == 3, "\(first)")
        // The same file (inode, size and time) with other bytes: what was parsed is answered, not parsed again.
        let file = SideFiles(output: directory.entryPath(CacheIndex.id(forKey: CacheIndex.playlistKey(url: url)))).keptPlaylist
        var before = stat()
        stat(file, &before)
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.write(contentsOf: Data(repeating: 0x20, count: Int(before.st_size)))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        utimensat(AT_FDCWD, file, &times, 0)
        #expect(await documents.documents().first?.files[url]?.count == 3)
        // A new copy (a new file) is parsed.
        try directory.keep(playlist(url, segments: 5))
        #expect(await documents.documents().first?.files[url]?.count == 5)
        directory.forgetPlaylist(url: url)
        #expect(await documents.documents().isEmpty)
        await documents.shutdown()
    }
}
