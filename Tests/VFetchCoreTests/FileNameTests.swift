import Testing
@testable import VFetchCore

@Suite struct FileNameTests {
    @Test func namesFromTheURLPath() {
        #expect(FileName.choose(url: "http://h/videos/My%20Film.mp4?token=abc", suggested: nil) == "My Film.mp4")
        #expect(FileName.choose(url: "http://h/", suggested: nil) == "download")
        #expect(FileName.choose(url: "http://h/a/..", suggested: nil) == "download")
    }

    @Test func prefersContentDisposition() {
        let plain = FileName.fromContentDisposition("attachment; filename=\"movie.mp4\"")
        #expect(plain == "movie.mp4")
        let encoded = FileName.fromContentDisposition("attachment; filename=\"x.mp4\"; filename*=UTF-8''%E7%94%B5%E5%BD%B1.mp4")
        #expect(encoded == "电影.mp4")
        #expect(FileName.choose(url: "http://h/get?id=1", suggested: plain) == "movie.mp4")
    }

    @Test func neverEscapesTheDirectory() {
        #expect(FileName.sanitized("../../etc/passwd") == "passwd")
        #expect(FileName.sanitized("..") == nil)
        #expect(FileName.sanitized("a\u{0}b\nc") == "abc")
        #expect(FileName.sanitized("dir\\evil.mp4") == "evil.mp4")
    }
}
