import NIOHTTP1
import Testing
import VFetchCache
import VFetchCore

@testable import VFetchServe

/// The gate in front of every route, judged on request heads alone: who may ask what, and the
/// CORS headers of the answer.
@Suite struct RequestGateTests {
    static let page = "http://127.0.0.1:9"
    let token = "0123456789abcdef"

    func gate(allowing origins: [String] = []) throws -> RequestGate {
        RequestGate(
            hosts: HostAllowList(names: ["localhost", "vfetch.test"], port: 8080),
            crossOrigin: try CrossOriginPolicy(allowing: origins), token: token)
    }

    func head(
        _ uri: String, method: HTTPMethod = .GET, host: String? = "127.0.0.1:8080", _ headers: [(String, String)] = []
    ) -> HTTPRequestHead {
        var all = HTTPHeaders(headers)
        if let host { all.add(name: "Host", value: host) }
        return HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: all)
    }

    /// The gate's own answer, or nil when it admits the request.
    func refusal(_ verdict: RequestGate.Verdict) -> Reply? {
        if case .answer(let reply) = verdict { reply } else { nil }
    }

    func admitted(_ verdict: RequestGate.Verdict) -> RequestGate.Admitted? {
        if case .admit(let admitted) = verdict { admitted } else { nil }
    }

    func text(_ reply: Reply?) -> String { String(decoding: reply?.body ?? [], as: UTF8.self) }

    @Test func onlyItsOwnNamesOnItsPortAndOneHostHeader() throws {
        let gate = try gate()
        for host in ["127.0.0.1:8080", "[::1]:8080", "localhost:8080", "LOCALHOST:8080", "vfetch.test:8080", "10.1.2.3:8080"] {
            #expect(admitted(gate.decide(head("/status", host: host))) != nil, "\(host)")
        }
        for host in ["evil.example:8080", "127.0.0.1:1", "127.0.0.1", "localhost:8080x", "[::1", "", "127.0.0.1.evil.example:8080"] {
            #expect(refusal(gate.decide(head("/status", host: host)))?.status == .forbidden, "\(host)")
        }
        #expect(refusal(gate.decide(head("/status", host: nil)))?.status == .forbidden)
        let twice = head("/status", [("Host", "evil.example")])
        #expect(refusal(gate.decide(twice))?.status == .badRequest)
        // Before the server knows its port it admits nothing.
        var waiting = gate
        waiting.hosts = .none
        #expect(refusal(waiting.decide(head("/status")))?.status == .forbidden)
    }

    @Test func aPathOutsideTheTableIsNotFoundAndABadTargetIsABadRequest() throws {
        let gate = try gate()
        for path in ["/nothing", "/media/", "/MEDIA", "/status/x", "/player.js/", "/index.html", "/api", "//media"] {
            let reply = refusal(gate.decide(head(path)))
            #expect(reply?.status == .notFound, "\(path)")
            #expect(text(reply).contains("(try /, /media?url=…, /status or /queue)"), "\(text(reply))")
        }
        #expect(refusal(gate.decide(head("/media?url=a b")))?.status == .badRequest)
    }

    @Test func eachRouteAnswersItsOwnMethods() throws {
        let gate = try gate()
        for path in ["/", "/player.js", "/player.css", "/status", "/media?url=http%3A%2F%2Fo%2Fa.mp4"] {
            for method in [HTTPMethod.POST, .PUT, .DELETE, .OPTIONS] {
                let reply = refusal(gate.decide(head(path, method: method)))
                #expect(reply?.status == .methodNotAllowed && reply?.headers["Allow"] == ["GET, HEAD"], "\(method) \(path)")
            }
            #expect(admitted(gate.decide(head(path, method: .HEAD))) != nil, "HEAD \(path)")
        }
        let events = refusal(gate.decide(head("/api/events", method: .HEAD, [("Authorization", "Bearer " + token)])))
        #expect(events?.status == .methodNotAllowed && events?.headers["Allow"] == ["GET"])
        // The API answers each method itself, once the token is right.
        let delete = admitted(gate.decide(head("/api/downloads/7", method: .DELETE, [("Authorization", "Bearer " + token)])))
        #expect(delete?.route == .api(["downloads", "7"]))
    }

    @Test func theAPITakesTheTokenButItsProof() throws {
        let gate = try gate()
        for presented in [nil, "Bearer", "Bearer ", "Bearer 0123456789abcdeF", "bearer " + token, token, "Bearer " + token + " "] {
            let headers = presented.map { [("Authorization", $0)] } ?? []
            for path in ["/api/downloads", "/api/settings", "/api/events", "/api/nothing"] {
                let reply = refusal(gate.decide(head(path, method: .POST, headers)))
                #expect(reply?.status == .unauthorized && reply?.headers["WWW-Authenticate"] == ["Bearer"], "\(path) \(presented ?? "")")
            }
        }
        let bearer = [("Authorization", "Bearer " + token)]
        #expect(admitted(gate.decide(head("/api/downloads", method: .POST, bearer)))?.route == .api(["downloads"]))
        #expect(admitted(gate.decide(head("/api/events", bearer)))?.route == .events)
        #expect(admitted(gate.decide(head("/api/nothing", bearer)))?.route == .api(["nothing"]))
        // Before the token: the client has the server prove it knows it.
        #expect(admitted(gate.decide(head("/api/proof?nonce=00")))?.route == .proof)
        #expect(refusal(gate.decide(head("/api/proof?nonce=00", method: .POST)))?.status == .methodNotAllowed)
    }

    @Test(arguments: [
        ([("Sec-Fetch-Site", "cross-site")], RequestGate.Requester.page),
        ([("Sec-Fetch-Site", "same-site")], .page),
        ([("Sec-Fetch-Site", "same-origin")], .player),
        ([("Sec-Fetch-Site", "none")], .player),
        ([], .player),
        ([("Origin", "https://evil.example")], .page),
        ([("Origin", "null")], .page),
        ([("Origin", "https://127.0.0.1:8080")], .page),
        ([("Origin", "http://127.0.0.1:8080")], .player),
        ([("Origin", "http://localhost:8080"), ("Sec-Fetch-Site", "same-origin")], .player),
        ([("Origin", "http://localhost:9999")], .page),
        ([("Origin", "http://127.0.0.1:9"), ("Sec-Fetch-Site", "cross-site")], .page),
    ])
    func whoAsked(headers: [(String, String)], requester: RequestGate.Requester) throws {
        let gate = try gate()
        let media = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2Fa.mp4", headers)))
        #expect(media?.requester == requester)
        #expect(gate.isFromWebPage(head("/", headers)) == (requester == .page))
    }

    @Test func aPageAllowOriginNamesIsTheUsersOwnButNotUnderAStar() throws {
        let headers = [("Origin", Self.page), ("Sec-Fetch-Site", "same-site")]
        #expect(admitted(try gate(allowing: [Self.page]).decide(head("/media?url=http%3A%2F%2Fo%2Fa.mp4", headers)))?.requester == .player)
        #expect(admitted(try gate(allowing: ["*"]).decide(head("/media?url=http%3A%2F%2Fo%2Fa.mp4", headers)))?.requester == .page)
    }

    @Test func webPagesGetNoStatusAndThePageWithoutAURL() throws {
        let gate = try gate()
        let fromPage = [("Sec-Fetch-Site", "cross-site")]
        let status = refusal(gate.decide(head("/status", fromPage)))
        #expect(status?.status == .forbidden && text(status).contains("not for web pages"))
        #expect(admitted(gate.decide(head("/status")))?.route == .status)
        let sent = refusal(gate.decide(head("/?url=http%3A%2F%2F127.0.0.1%3A1%2F", fromPage)))
        #expect(sent?.status == .seeOther && sent?.headers["Location"] == ["/"] && sent?.body == [])
        #expect(admitted(gate.decide(head("/?url=x")))?.route == .page(.html))
        #expect(admitted(gate.decide(head("/", fromPage)))?.route == .page(.html))
        #expect(admitted(gate.decide(head("/player.js?v=1", fromPage)))?.route == .page(.script))
        #expect(admitted(gate.decide(head("/player.css")))?.route == .page(.css))
    }

    @Test func aMediaRequestIsAFileOrAPlaylistUnderTheRequestersOwnKey() throws {
        let gate = try gate()
        let url = "http://o/v/a.mp4"
        let player = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2Fv%2Fa.mp4")))
        #expect(player?.route == .media(.init(url: url, key: CacheIndex.key(url: url, playerKey: nil))))
        let page = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2Fv%2Fa.mp4", [("Sec-Fetch-Site", "cross-site")])))
        let pageKey = CacheIndex.key(url: url, playerKey: nil, forPage: true)
        #expect(page?.route == .media(.init(url: url, key: pageKey)) && pageKey != CacheIndex.key(url: url, playerKey: nil))
        let keyed = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2Fv%2Fa.mp4&key=movie")))
        #expect(keyed?.route == .media(.init(url: url, key: CacheIndex.key(url: url, playerKey: "movie"))))
        let secret = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2Fk.bin&kind=key")))
        let keyKey = CacheIndex.secretKey(CacheIndex.key(url: "http://o/k.bin", playerKey: nil))
        #expect(secret?.route == .media(.init(url: "http://o/k.bin", key: keyKey)))
        for name in ["index.m3u8", "manifest.mpd"] {
            let playlist = admitted(gate.decide(head("/media?url=http%3A%2F%2Fo%2F\(name)%3Fsig%3D1")))
            let url = "http://o/\(name)?sig=1"
            #expect(playlist?.route == .playlist(.init(url: url, key: CacheIndex.key(url: url, playerKey: nil))))
        }
        for (query, reason) in [
            ("", "missing url="), ("url=", "missing url="), ("url=file%3A%2F%2F%2Fetc%2Fpasswd", "not an http or https URL"),
            ("url=gopher%3A%2F%2Fo%2F", "not an http or https URL"), ("key=a", "missing url="),
        ] {
            let reply = refusal(gate.decide(head("/media?" + query)))
            #expect(reply?.status == .badRequest && text(reply).contains(reason), "\(query)")
        }
    }

    /// `/stream`, the old name of `/media`, for links, bookmarks and players from before: the same
    /// route, key, requester and CORS headers, and the same refusals and preflights.
    @Test func theOldStreamPathIsMediaByAnotherName() throws {
        let gate = try gate(allowing: [Self.page])
        /// All a verdict says, as text.
        func said(_ verdict: RequestGate.Verdict) -> String {
            switch verdict {
            case .admit(let request): "\(request.route) \(request.requester) \(request.query) \(request.corsHeaders)"
            case .answer(let reply): "\(reply.status) \(reply.headers) \(text(reply))"
            }
        }
        let preflight = [("Origin", Self.page), ("Access-Control-Request-Method", "GET"), ("Access-Control-Request-Headers", "range")]
        var admittedBoth = 0
        for query in [
            "?url=http%3A%2F%2Fo%2Fa.mp4", "?url=http%3A%2F%2Fo%2Fa.mp4&key=movie", "?url=http%3A%2F%2Fo%2Fk.bin&kind=key",
            "?url=http%3A%2F%2Fo%2Findex.m3u8", "?url=http%3A%2F%2Fo%2Fmanifest.mpd", "", "?url=file%3A%2F%2F%2Fetc%2Fpasswd",
        ] {
            let asked: [(HTTPMethod, [(String, String)])] = [
                (.GET, []), (.GET, [("Origin", Self.page)]), (.GET, [("Sec-Fetch-Site", "cross-site")]),
                (.HEAD, [("Origin", "http://evil.example")]), (.POST, []), (.OPTIONS, preflight),
            ]
            for (method, headers) in asked {
                let media = gate.decide(head("/media" + query, method: method, headers))
                let alias = gate.decide(head("/stream" + query, method: method, headers))
                #expect(said(alias) == said(media), "\(method) \(query) \(headers)")
                if admitted(media) != nil, admitted(alias) != nil { admittedBoth += 1 }
            }
        }
        #expect(admittedBoth == 5 * 4, "each URL, by each requester but POST and OPTIONS")
    }

    @Test func onlyTheMediaIsReadableByPagesAllowOriginNames() throws {
        let origin = [("Origin", Self.page)]
        let preflight = [
            ("Origin", Self.page), ("Access-Control-Request-Method", "GET"), ("Access-Control-Request-Headers", "range"),
            ("Access-Control-Request-Private-Network", "true"),
        ]
        let media = "/media?url=http%3A%2F%2Fo%2Fa.mp4"
        // No --allow-origin: no page reads anything.
        let closed = try gate()
        #expect(admitted(closed.decide(head(media, origin)))?.corsHeaders.isEmpty == true)
        let refused = refusal(closed.decide(head(media, method: .OPTIONS, preflight)))
        #expect(refused?.status == .forbidden && refused?.headers.contains { $0.name.hasPrefix("Access-Control") } == false)
        // Named: the media's answers, its refusals and its preflight carry them; nothing else does.
        let open = try gate(allowing: [Self.page])
        let read = try #require(admitted(open.decide(head(media, origin))))
        #expect(read.corsHeaders.contains { $0 == ("Access-Control-Allow-Origin", Self.page) })
        let missing = refusal(open.decide(head("/media", origin)))
        #expect(missing?.status == .badRequest && missing?.headers["Access-Control-Allow-Origin"] == [Self.page])
        let answered = refusal(open.decide(head(media, method: .OPTIONS, preflight)))
        #expect(answered?.status == .noContent && answered?.body == nil)
        #expect(answered?.headers["Access-Control-Allow-Origin"] == [Self.page])
        #expect(answered?.headers["Access-Control-Allow-Private-Network"] == ["true"])
        let put = refusal(open.decide(head(media, method: .OPTIONS, [("Origin", Self.page), ("Access-Control-Request-Method", "PUT")])))
        #expect(put?.status == .forbidden)
        #expect(admitted(open.decide(head("/status", origin)))?.corsHeaders.isEmpty == true)
        #expect(admitted(open.decide(head("/", origin)))?.corsHeaders.isEmpty == true)
        let api = admitted(open.decide(head("/api/downloads", [("Origin", Self.page), ("Authorization", "Bearer " + token)])))
        #expect(api?.corsHeaders.isEmpty == true)
        #expect(refusal(open.decide(head("/status", method: .OPTIONS, preflight)))?.status == .methodNotAllowed)
        let other = admitted(open.decide(head(media, [("Origin", "http://evil.example")])))
        // No CORS for a page not allowed, but `Vary: Origin`: a cache in front of serve keeps its answer apart.
        #expect(other?.corsHeaders.map { "\($0.0): \($0.1)" } == ["Vary: Origin"] && other?.requester == .page)
    }

    @Test func thePagesFilesAreRevalidatedAndLockedDown() {
        let first = PlayerPage.reply(.html, to: head("/"))
        #expect(first.status == .ok && first.headers["Content-Type"] == ["text/html; charset=utf-8"])
        #expect(first.headers["Content-Security-Policy"].first?.contains("frame-ancestors 'none'") == true)
        let etag = first.headers["ETag"].first ?? ""
        #expect(!etag.isEmpty)
        let again = PlayerPage.reply(.html, to: head("/", [("If-None-Match", etag)]))
        #expect(again.status == .notModified && again.body == nil)
        #expect(PlayerPage.reply(.script, to: head("/player.js", [("If-Match", "\"other\"")])).status == .preconditionFailed)
        #expect(PlayerPage.reply(.css, to: head("/player.css")).headers["ETag"] != first.headers["ETag"])
    }
}
