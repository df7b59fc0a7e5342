import Testing

@testable import VFetchCore

@Suite struct ConditionalRequestTests {
    let etag = "\"abc\""
    let modified = "Sun, 06 Nov 1994 08:49:37 GMT"

    func evaluate(
        get: Bool = true, ifMatch: String? = nil, ifUnmodifiedSince: String? = nil, ifNoneMatch: String? = nil,
        ifModifiedSince: String? = nil, etag: String? = "\"abc\""
    ) -> ConditionalRequest {
        ConditionalRequest(
            isGetOrHead: get, ifMatch: ifMatch, ifUnmodifiedSince: ifUnmodifiedSince, ifNoneMatch: ifNoneMatch,
            ifModifiedSince: ifModifiedSince, etag: etag, lastModified: modified)
    }

    @Test func ifNoneMatchComparesWeakly() {
        #expect(evaluate() == .proceed)
        #expect(evaluate(ifNoneMatch: etag) == .notModified)
        #expect(evaluate(ifNoneMatch: "\"x\", W/\"abc\"") == .notModified)
        #expect(evaluate(ifNoneMatch: "*") == .notModified)
        #expect(evaluate(ifNoneMatch: "\"other\"") == .proceed)
        #expect(evaluate(ifNoneMatch: "\"other\"", ifModifiedSince: modified) == .proceed, "If-None-Match wins")
        #expect(evaluate(ifNoneMatch: "\"other\"", etag: nil) == .proceed)
    }

    @Test func ifModifiedSinceComparesDates() {
        #expect(evaluate(ifModifiedSince: modified) == .notModified)
        #expect(evaluate(ifModifiedSince: "Mon, 07 Nov 1994 08:49:37 GMT") == .notModified)
        #expect(evaluate(ifModifiedSince: "Sat, 05 Nov 1994 08:49:37 GMT") == .proceed)
        #expect(evaluate(ifModifiedSince: "yesterday") == .proceed)
        #expect(evaluate(get: false, ifModifiedSince: modified) == .proceed)
    }

    @Test func ifMatchComparesStrongly() {
        #expect(evaluate(ifMatch: etag) == .proceed)
        #expect(evaluate(ifMatch: "*") == .proceed)
        #expect(evaluate(ifMatch: "\"other\"") == .preconditionFailed)
        #expect(evaluate(ifMatch: "W/\"abc\"") == .preconditionFailed)
        #expect(evaluate(ifMatch: "W/\"abc\"", etag: "W/\"abc\"") == .preconditionFailed)
        #expect(evaluate(ifUnmodifiedSince: "Sat, 05 Nov 1994 08:49:37 GMT") == .preconditionFailed)
        #expect(evaluate(ifUnmodifiedSince: modified) == .proceed)
    }

    @Test func httpDatesRoundTrip() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.format(epochSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds in [0, 951_782_400, 1_709_164_800, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(epochSeconds: seconds)) == seconds)
        }
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
    }
}
