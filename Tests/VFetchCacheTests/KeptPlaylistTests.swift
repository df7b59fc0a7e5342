import Testing

@testable import VFetchCache
@testable import VFetchCore

struct KeptPlaylistTests {
    @Test func aKeptPlaylistReadsBackAsItWasWritten() throws {
        let body = Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg1.ts\n#EXT-X-ENDLIST\n".utf8)
        let kept = KeptPlaylist(
            url: "http://example.com/a/index.m3u8", finalURL: "http://cdn.example.com/a/index.m3u8",
            contentType: "application/vnd.apple.mpegurl", etag: "\"abc\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
            body: body)
        let read = try #require(KeptPlaylist(decoding: kept.encoded()))
        #expect(read == kept)
        #expect(read.body == body)
    }

    @Test func aTornOrDamagedCopyIsNone() {
        let kept = KeptPlaylist(
            url: "http://e/x.mpd", finalURL: "http://e/x.mpd", contentType: nil, etag: nil, lastModified: nil, body: Array("<MPD/>".utf8))
        let bytes = kept.encoded()
        #expect(KeptPlaylist(decoding: Array(bytes.dropLast())) == nil)
        #expect(KeptPlaylist(decoding: bytes + [10]) == nil)
        #expect(KeptPlaylist(decoding: Array(bytes.dropFirst())) == nil)
        #expect(KeptPlaylist(decoding: []) == nil)
    }

    @Test func aPlaylistsKeyIsNoURLsKey() {
        let url = "http://example.com/index.m3u8"
        #expect(CacheIndex.playlistKey(url: url) != CacheIndex.key(url: url, playerKey: nil))
        #expect(CacheIndex.isPlaylistKey(CacheIndex.playlistKey(url: url)))
        #expect(!CacheIndex.isPlaylistKey(url))
        #expect(!CacheIndex.isPlaylistKey(CacheIndex.key(url: url, playerKey: "k")))
    }
}
