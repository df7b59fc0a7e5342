import Foundation
import NIOHTTP1
import Testing
import VFetchCore

@testable import VFetchServe

/// The queue's web page: its address carries the token only in the fragment, its files are anyone's,
/// and what it drives (the API) is the token's alone.
@Suite struct QueuePageTests {
    let token = "0123456789abcdef"
    let gate = RequestGate(
        hosts: HostAllowList(names: ["localhost"], port: 8080), crossOrigin: try! CrossOriginPolicy(allowing: []),
        token: "0123456789abcdef")

    func head(_ uri: String, method: HTTPMethod = .GET, _ headers: [(String, String)] = []) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: HTTPHeaders([("Host", "127.0.0.1:8080")] + headers))
    }

    func route(_ verdict: RequestGate.Verdict) -> RequestGate.Route? {
        if case .admit(let admitted) = verdict { admitted.route } else { nil }
    }

    func status(_ verdict: RequestGate.Verdict) -> HTTPResponseStatus? {
        if case .answer(let reply) = verdict { reply.status } else { nil }
    }

    @Test func theAddressCarriesTheTokenAndDirectoryInItsFragment() throws {
        let address = QueuePage.address(server: "http://127.0.0.1:7311", token: token, directory: "/home/a b/D&L=1+2#x")
        #expect(address == "http://127.0.0.1:7311/queue#token=0123456789abcdef&dir=%2Fhome%2Fa%20b%2FD%26L%3D1%2B2%23x")
        // What the page's URLSearchParams reads back from the fragment.
        let fragment = try #require(URLComponents(string: address)?.percentEncodedFragment)
        let items = try #require(URLComponents(string: "?" + fragment)?.queryItems)
        #expect(items == [URLQueryItem(name: "token", value: token), URLQueryItem(name: "dir", value: "/home/a b/D&L=1+2#x")])
    }

    @Test func thePageIsAnyonesAndTheAPIItDrivesIsTheTokens() {
        let fromPage = [("Sec-Fetch-Site", "cross-site")]
        #expect(route(gate.decide(head("/queue"))) == .page(.queueHTML))
        #expect(route(gate.decide(head("/queue.js", fromPage))) == .page(.queueScript))
        #expect(route(gate.decide(head("/queue.css"))) == .page(.queueCSS))
        #expect(status(gate.decide(head("/queue", method: .POST))) == .methodNotAllowed)
        for (uri, method) in [("/api/downloads", HTTPMethod.GET), ("/api/downloads", .POST), ("/api/cache?entry=x", .DELETE)] {
            #expect(status(gate.decide(head(uri, method: method))) == .unauthorized, "\(uri)")
            #expect(status(gate.decide(head(uri, method: method, [("Authorization", "Bearer " + token + "0")]))) == .unauthorized)
            // A preflight carries no token: another origin's script never sends one.
            let preflight = [("Origin", "http://127.0.0.1:9"), ("Access-Control-Request-Method", method.rawValue)]
            #expect(status(gate.decide(head(uri, method: .OPTIONS, preflight))) == .unauthorized, "\(uri)")
            #expect(route(gate.decide(head(uri, method: method, [("Authorization", "Bearer " + token)]))) != nil)
        }
    }

    @Test func thePageRunsOnlyItsOwnScriptAndTalksOnlyToItsServer() {
        let reply = PlayerPage.reply(.queueHTML, to: head("/queue"))
        let policy = reply.headers["Content-Security-Policy"].first ?? ""
        #expect(policy.contains("script-src 'self'") && policy.contains("connect-src 'self'") && policy.contains("frame-ancestors 'none'"))
        #expect(!policy.contains("unsafe"))
        #expect(reply.headers["Referrer-Policy"] == ["no-referrer"])
        // Strings of the queue are set as text, never parsed as HTML.
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("] {
            #expect(!QueuePage.script.contains(sink), "\(sink)")
        }
        #expect(PlayerPage.reply(.queueScript, to: head("/queue.js")).body == Array(QueuePage.script.utf8))
    }
}
