import Testing

@testable import VFetchCore

@Suite struct CrossOriginPolicyTests {
    @Test func originsAreCheckedAndNormalized() throws {
        let policy = try CrossOriginPolicy(allowing: ["https://Example.COM:443/", "http://127.0.0.1:8000"])
        #expect(policy.origins == ["https://example.com", "http://127.0.0.1:8000"])
        #expect(policy.allows("https://example.com") && policy.allows("http://127.0.0.1:8000"))
        #expect(!policy.allows("https://evil.example") && !policy.allows("null") && !policy.allows(nil))
        #expect(!policy.allows("http://127.0.0.1:8001"))
        for bad in ["example.com", "ftp://example.com", "https://example.com/path", "https://a@example.com", "*.example.com", ""] {
            #expect(throws: CrossOriginPolicy.BadOrigin.self) { try CrossOriginPolicy(allowing: [bad]) }
        }
        #expect(try CrossOriginPolicy(allowing: ["*"]).allows("https://anything.example"))
    }

    @Test func onlyNamedOriginsMayReachPrivateAddresses() throws {
        let policy = try CrossOriginPolicy(allowing: ["http://127.0.0.1:8000"])
        #expect(policy.names("http://127.0.0.1:8000") && policy.names("HTTP://127.0.0.1:8000/"))
        #expect(!policy.names("http://127.0.0.1:8001") && !policy.names(nil) && !policy.names("null"))
        // '*' lets any page read the media, not make serve fetch from the user's own network.
        #expect(!(try CrossOriginPolicy(allowing: ["*"]).names("https://anything.example")))
    }

    @Test func withoutTheFlagNoPageGetsAnyHeader() throws {
        let policy = try CrossOriginPolicy(allowing: [])
        #expect(policy.responseHeaders(origin: "https://example.com").isEmpty)
        #expect(policy.preflight(origin: "https://example.com", method: "GET", headers: "range", privateNetwork: true) == nil)
    }

    @Test func aPreflightForRangeRequestsOfAnAllowedPage() throws {
        let policy = try CrossOriginPolicy(allowing: ["http://localhost:8000"])
        let answer = try #require(
            policy.preflight(origin: "http://localhost:8000", method: "GET", headers: "range, if-range", privateNetwork: true))
        let headers = Dictionary(answer, uniquingKeysWith: { first, _ in first })
        #expect(headers["Access-Control-Allow-Origin"] == "http://localhost:8000")
        #expect(headers["Access-Control-Allow-Headers"]?.contains("Range") == true)
        #expect(headers["Access-Control-Allow-Private-Network"] == "true")
        #expect(policy.preflight(origin: "http://localhost:8000", method: "POST", headers: nil, privateNetwork: false) == nil)
        #expect(policy.preflight(origin: "http://localhost:8000", method: "GET", headers: "authorization", privateNetwork: false) == nil)
        let response = Dictionary(policy.responseHeaders(origin: "http://localhost:8000"), uniquingKeysWith: { first, _ in first })
        #expect(response["Access-Control-Expose-Headers"]?.contains("Content-Range") == true)
        #expect(response["Vary"] == "Origin")
    }

    /// With --allow-origin an answer depends on the request's Origin, so every answer says so: a
    /// shared cache must not hand a player's answer (no CORS headers) to an allowed page.
    @Test func withTheFlagEveryAnswerVariesByOrigin() throws {
        let policy = try CrossOriginPolicy(allowing: ["http://localhost:8000"])
        for origin in [nil, "https://evil.example", "null"] {
            let headers = policy.responseHeaders(origin: origin)
            #expect(headers.map(\.0) == ["Vary"] && headers.map(\.1) == ["Origin"], "\(origin ?? "no Origin")")
        }
    }
}
