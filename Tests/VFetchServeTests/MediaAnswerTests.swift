import NIOHTTP1
import Testing

@testable import VFetchEngine
@testable import VFetchServe

/// What a `/media` request for a file is answered, from the file's facts and the request's head.
@Suite struct MediaAnswerTests {
    static let modified = "Mon, 02 Jun 2025 10:00:00 GMT"

    func remote(
        length: Int64? = 1000, type: String? = "video/mp4", url: String = "http://o/film.mp4", etag: String = "\"v1\""
    ) -> RemoteInfo {
        RemoteInfo(
            url: url, finalURL: url, length: length, acceptsRanges: true, etag: etag, lastModified: Self.modified,
            contentType: type, outputPath: "/cache/entry", resumedBytes: 0)
    }

    func answer(_ remote: RemoteInfo, method: HTTPMethod = .GET, _ headers: [(String, String)] = []) -> MediaAnswer {
        MediaAnswer(remote: remote, head: HTTPRequestHead(version: .http1_1, method: method, uri: "/media", headers: HTTPHeaders(headers)))
    }

    /// The bytes to send and their headers, or nil for a whole answer.
    func bytes(_ answer: MediaAnswer) -> (status: HTTPResponseStatus, headers: HTTPHeaders, range: Range<Int64>)? {
        if case .bytes(let status, let headers, let range) = answer { (status, headers, range) } else { nil }
    }

    func reply(_ answer: MediaAnswer) -> Reply? {
        if case .reply(let reply) = answer { reply } else { nil }
    }

    @Test func aRangeIsAPartNoRangeTheWholeFileAndHEADOnlyHeaders() {
        let whole = bytes(answer(remote()))
        #expect(whole?.status == .ok && whole?.range == 0..<1000 && whole?.headers["Content-Length"] == ["1000"])
        #expect(whole?.headers["Accept-Ranges"] == ["bytes"] && whole?.headers["Content-Type"] == ["video/mp4"])
        #expect(whole?.headers["ETag"] == ["\"v1\""] && whole?.headers["Last-Modified"] == [Self.modified])
        let part = bytes(answer(remote(), [("Range", "bytes=100-199")]))
        #expect(part?.status == .partialContent && part?.range == 100..<200)
        #expect(part?.headers["Content-Range"] == ["bytes 100-199/1000"] && part?.headers["Content-Length"] == ["100"])
        let head = reply(answer(remote(), method: .HEAD, [("Range", "bytes=-10")]))
        #expect(head?.status == .partialContent && head?.body == nil && head?.headers["Content-Range"] == ["bytes 990-999/1000"])
        let past = reply(answer(remote(), [("Range", "bytes=2000-")]))
        #expect(past?.status == .rangeNotSatisfiable && past?.headers["Content-Range"] == ["bytes */1000"])
        #expect(past?.headers["ETag"] == [])
        let empty = reply(answer(remote(length: 0)))
        #expect(empty?.status == .ok && empty?.headers["Content-Length"] == ["0"])
    }

    @Test(arguments: [
        ("\"v1\"", true), ("W/\"v1\"", false), ("\"v0\"", false), (modified, true), ("Tue, 03 Jun 2025 10:00:00 GMT", false),
    ])
    func anIfRangeOfAnotherVersionGetsTheWholeFile(ifRange: String, part: Bool) {
        let answer = bytes(answer(remote(), [("Range", "bytes=10-19"), ("If-Range", ifRange)]))
        #expect(answer?.range == (part ? 10..<20 : 0..<1000))
        #expect(answer?.status == (part ? .partialContent : .ok))
    }

    @Test func aWeakIfRangeGetsTheWholeFileEvenWhenCurrent() {
        // A weak validator never names the bytes exactly.
        let weak = bytes(answer(remote(etag: "W/\"v1\""), [("Range", "bytes=10-19"), ("If-Range", "W/\"v1\"")]))
        #expect(weak?.range == 0..<1000 && weak?.status == .ok)
    }

    @Test func preconditionsAreAnsweredBeforeAnyByte() {
        let current = reply(answer(remote(), [("If-None-Match", "\"v1\"")]))
        #expect(current?.status == .notModified && current?.headers["Content-Type"] == [] && current?.body == nil)
        #expect(current?.headers["ETag"] == ["\"v1\""])
        #expect(reply(answer(remote(), [("If-Match", "\"v0\"")]))?.status == .preconditionFailed)
        #expect(bytes(answer(remote(), [("If-None-Match", "\"v0\"")]))?.status == .ok)
    }

    @Test func whatIsNotMediaIsNeverAnsweredAsAPage() {
        let page = reply(answer(remote(type: "text/html; charset=utf-8")))
        #expect(page?.status == .badGateway && String(decoding: page?.body ?? [], as: UTF8.self).contains("not media"))
        let notes = bytes(answer(remote(type: "text/plain", url: "http://o/notes")))
        #expect(notes?.headers["Content-Type"] == ["application/octet-stream"])
        #expect(notes?.headers["Content-Disposition"] == ["attachment; filename=\"notes\""])
        let unknown = reply(answer(remote(length: nil)))
        #expect(unknown?.status == .badGateway && String(decoding: unknown?.body ?? [], as: UTF8.self).contains("length"))
    }
}
