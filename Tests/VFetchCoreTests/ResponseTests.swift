import Foundation
import Testing

@testable import VFetchCore

@Suite struct ResponseTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: headers)
    }

    let remote = RemoteFile(length: 1000, acceptsRanges: true, etag: "\"v1\"", lastModified: "Sat, 21 Nov 2026 00:00:00 GMT")

    @Test func parsesContentRange() {
        #expect(ContentRange("bytes 0-99/1000") == ContentRange(range: 0..<100, total: 1000))
        #expect(ContentRange("bytes 10-10/*") == ContentRange(range: 10..<11, total: nil))
        #expect(ContentRange("bytes */1000") == ContentRange(range: nil, total: 1000))
        #expect(ContentRange("bytes 5-4/1000") == nil)
        #expect(ContentRange("bytes 0-1000/1000") == nil)
        #expect(ContentRange("items 0-1/2") == nil)
        #expect(ContentRange("bytes 0-x/10") == nil)
    }

    @Test func headKeepsOnlyTheFinalResponseOfARedirectChain() {
        var head = ResponseHead()
        for line in ["HTTP/1.1 302 Found\r\n", "Location: /b\r\n", "ETag: \"old\"\r\n", "\r\n"] { head.add(line: line) }
        #expect(head.isRedirect)
        for line in ["HTTP/1.1 206 Partial Content\r\n", "Content-Range: bytes 0-9/10\r\n"] { head.add(line: line) }
        let ended = head.add(line: "\r\n")
        #expect(ended)
        #expect(head.status == 206)
        #expect(head.header("etag") == nil)
        #expect(head.header("CONTENT-RANGE") == "bytes 0-9/10")
    }

    @Test func probeReadsLengthRangesAndValidators() throws {
        let partial = try #require(
            RemoteFile(probe: head(206, [("Content-Range", "bytes 0-999/1000"), ("ETag", "\"v1\""), ("Content-Type", "video/mp4")])))
        #expect(partial.length == 1000 && partial.acceptsRanges && partial.etag == "\"v1\"")
        let whole = try #require(RemoteFile(probe: head(200, [("Content-Length", "1000")])))
        #expect(whole.length == 1000 && !whole.acceptsRanges)
        let advertised = try #require(RemoteFile(probe: head(200, [("Content-Length", "1000"), ("Accept-Ranges", "bytes")])))
        #expect(advertised.acceptsRanges)
        let chunked = try #require(RemoteFile(probe: head(200, [("Transfer-Encoding", "chunked"), ("Accept-Ranges", "bytes")])))
        #expect(chunked.length == nil && !chunked.acceptsRanges)
        let empty = try #require(RemoteFile(probe: head(416, [("Content-Range", "bytes */0")])))
        #expect(empty.length == 0)
        #expect(RemoteFile(probe: head(404, [])) == nil)
        #expect(RemoteFile(probe: head(206, [("Content-Range", "bytes 5-9/10")])) == nil)
    }

    /// A resumed download's probe asks from the first byte not saved: its 206 must start there.
    @Test func aProbeFromAnOffsetNeedsItsAnswerToStartThere() throws {
        let resumed = try #require(RemoteFile(probe: head(206, [("Content-Range", "bytes 5-9/10")]), from: 5))
        #expect(resumed.length == 10 && resumed.acceptsRanges)
        #expect(RemoteFile(probe: head(206, [("Content-Range", "bytes 0-9/10")]), from: 5) == nil)
        #expect(RemoteFile(probe: head(206, [("Content-Range", "bytes 6-9/10")]), from: 5) == nil)
        #expect(RemoteFile(probe: head(416, [("Content-Range", "bytes */4")]), from: 5) == nil, "the file is shorter now")
        #expect(RemoteFile(probe: head(200, [("Content-Length", "10")]), from: 5)?.length == 10, "a 200 is the whole file")
    }

    @Test func acceptsOnlyTheExactRangeAsked() {
        let exact = head(206, [("Content-Range", "bytes 100-199/1000"), ("ETag", "\"v1\"")])
        #expect(ResponseVerdict.check(exact, asked: 100..<200, remote: remote) == .part(100..<200, total: 1000))
        let shifted = head(206, [("Content-Range", "bytes 101-200/1000")])
        guard case .wrongRange = ResponseVerdict.check(shifted, asked: 100..<200, remote: remote) else {
            Issue.record("a shifted Content-Range must not be accepted")
            return
        }
        // A 200 is the whole file whatever was asked: a whole file's planner never writes it at a range's offset.
        let whole = head(200, [("Content-Length", "1000")])
        #expect(ResponseVerdict.check(whole, asked: 100..<200, remote: remote) == .whole(length: 1000))
        guard case .wrongRange = ResponseVerdict.check(head(206, []), asked: 0..<10, remote: remote) else {
            Issue.record("a 206 without Content-Range must not be accepted")
            return
        }
        // The file's answers must say its length; a segment's need not.
        let unsaid = head(206, [("Content-Range", "bytes 0-9/*")])
        guard case .wrongRange = ResponseVerdict.check(unsaid, asked: 0..<10, remote: remote) else {
            Issue.record("a 206 of the file without its length must not be accepted")
            return
        }
        #expect(ResponseVerdict.check(unsaid, asked: 0..<10) == .part(0..<10, total: nil))
    }

    /// A segment of unknown length is asked for in a first piece that may go past its end.
    @Test func aRangePastTheEndIsAnsweredUpToIt() {
        let short = head(206, [("Content-Range", "bytes 0-299/300")])
        #expect(ResponseVerdict.check(short, asked: 0..<512, remote: nil) == .part(0..<300, total: 300))
        // Past what was asked is not the range asked, even up to the end.
        let longer = head(206, [("Content-Range", "bytes 0-299/300")])
        guard case .wrongRange = ResponseVerdict.check(longer, asked: 0..<200) else {
            Issue.record("bytes past the range asked must not be accepted")
            return
        }
        guard case .wrongRange = ResponseVerdict.check(short, asked: nil) else {
            Issue.record("a 206 to a request without Range must not be accepted")
            return
        }
    }

    @Test func aNotModifiedIsAnAnswerOnlyToAConditionalRequest() {
        #expect(ResponseVerdict.check(head(304, []), asked: nil, conditional: true) == .notModified)
        #expect(ResponseVerdict.check(head(304, []), asked: nil) == .fail(status: 304))
    }

    @Test func detectsARemoteChange() {
        let newTag = head(206, [("Content-Range", "bytes 0-9/1000"), ("ETag", "\"v2\"")])
        guard case .remoteChanged = ResponseVerdict.check(newTag, asked: 0..<10, remote: remote) else {
            Issue.record("a new ETag is a new file")
            return
        }
        let newDate = head(206, [("Content-Range", "bytes 0-9/1000"), ("Last-Modified", "Sun, 22 Nov 2026 00:00:00 GMT")])
        guard case .remoteChanged = ResponseVerdict.check(newDate, asked: 0..<10, remote: remote) else {
            Issue.record("a new Last-Modified is a new file")
            return
        }
        let newLength = head(206, [("Content-Range", "bytes 0-9/1001")])
        guard case .remoteChanged = ResponseVerdict.check(newLength, asked: 0..<10, remote: remote) else {
            Issue.record("a new length is a new file")
            return
        }
    }

    @Test func classifiesErrorStatuses() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(ResponseVerdict.forStatus(head(503, [("Retry-After", "3")])) == .retry(status: 503, after: 3))
        #expect(ResponseVerdict.forStatus(head(429, [])) == .retry(status: 429, after: nil))
        #expect(ResponseVerdict.forStatus(head(408, [])) == .retry(status: 408, after: nil))
        #expect(ResponseVerdict.forStatus(head(403, [])) == .expired(status: 403))
        #expect(ResponseVerdict.forStatus(head(410, [])) == .expired(status: 410))
        #expect(ResponseVerdict.forStatus(head(404, [])) == .fail(status: 404))
        #expect(ResponseVerdict.forStatus(head(206, [])) == nil)
        let date = "Mon, 12 Jan 1970 13:46:50 GMT"  // now + 10 s
        #expect(ResponseVerdict.retryAfter(date, now: now) == 10)
        #expect(ResponseVerdict.retryAfter("soon", now: now) == nil)
    }

    @Test func spotsAnHTMLPageInsteadOfAVideo() {
        let page = RemoteFile(length: 100, acceptsRanges: false, contentType: "text/html; charset=utf-8")
        #expect(page.isWebPage(forMediaPath: "http://h/movie.mp4?sig=1"))
        #expect(!page.isWebPage(forMediaPath: "http://h/index"))
        let video = RemoteFile(length: 100, acceptsRanges: false, contentType: "video/mp4")
        #expect(!video.isWebPage(forMediaPath: "http://h/movie.mp4"))
    }
}
