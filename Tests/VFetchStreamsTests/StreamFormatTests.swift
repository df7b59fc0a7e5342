import Testing

@testable import VFetchStreams

@Suite struct StreamFormatTests {
    @Test func theContentTypeOrTheFirstBytesSayWhichStreamItIs() {
        #expect(StreamFormat.detect(contentType: "application/vnd.apple.mpegurl", path: "/x", firstBytes: []) == .hls)
        #expect(StreamFormat.detect(contentType: "application/dash+xml; charset=utf-8", path: "/x", firstBytes: []) == .dash)
        #expect(StreamFormat.detect(contentType: "text/plain", path: "/a", firstBytes: Array("\u{FEFF}#EXTM3U\n".utf8)) == .hls)
        let mpd = Array("<?xml version=\"1.0\"?>\n<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\">".utf8)
        #expect(StreamFormat.detect(contentType: "application/octet-stream", path: "/a", firstBytes: mpd) == .dash)
        #expect(StreamFormat.detect(contentType: "video/mp4", path: "/a.mp4", firstBytes: [0, 0, 0, 24, 0x66, 0x74, 0x79, 0x70]) == nil)
        #expect(StreamFormat.detect(contentType: "text/html", path: "/a.m3u8", firstBytes: Array("<html>".utf8)) == nil)
        #expect(StreamFormat.detect(contentType: "text/plain", path: "/live/index.M3U8", firstBytes: []) == .hls)
        #expect(StreamFormat.detect(contentType: nil, path: "/a/manifest.mpd", firstBytes: []) == .dash)
        #expect(StreamFormat.detect(contentType: "text/html", path: "/a.m3u8", firstBytes: []) == nil)
        #expect(StreamFormat.detect(contentType: "application/octet-stream", path: "/movie.mp4", firstBytes: []) == nil)
    }
}
