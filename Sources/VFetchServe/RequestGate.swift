import Foundation
import NIOHTTP1
import VFetchCache
import VFetchCore
import VFetchStreams

/// The one layer in front of every route: whether serve answers a request at all, who sent it (a
/// player or a web page), which route gets it, and the CORS headers of its answer. A value, with no
/// I/O: a request's head in, a verdict out.
///
/// Serve is reachable by every web page the user opens, so the gate denies by default. A request
/// reaches a route only as an `Admitted`, which only `decide` makes: after the `Host` check, for a
/// path of `Resource`'s table, under the `Rules` its entry states (its methods, the cache's token,
/// CORS, what web pages may do there). A route cannot be added without stating them.
struct RequestGate: Sendable {
    var hosts: HostAllowList
    var crossOrigin: CrossOriginPolicy
    /// What API clients must send as `Authorization: Bearer TOKEN`.
    var token: String

    /// Who sent a request.
    enum Requester: Equatable, Sendable {
        /// A player, the user, or this server's own page.
        case player
        /// A web page: a `<video>` or a script of some site. Its reads reach only public addresses, and
        /// fill cache entries of its own (`CacheIndex.key(forPage:)`): a page never reads bytes a player
        /// fetched, perhaps from this machine or the local network.
        case page

        var publicOnly: Bool { self == .page }
    }

    /// What a `/media` request reads.
    struct MediaTarget: Equatable, Sendable {
        /// The origin's URL, http or https.
        var url: String
        /// The key of its cache entry: a page's own, or a player's (the URL, or the `key=` it gave);
        /// `secret …` for an AES key, which is kept but never listed.
        var key: String
    }

    /// Where an admitted request goes.
    enum Route: Equatable, Sendable {
        /// The player page's files.
        case page(PlayerPage.File)
        /// `/media` of a file (or of a playlist its name does not tell: see `MediaRoute`).
        case media(MediaTarget)
        /// `/media` of an HLS playlist or a DASH manifest, told by its name.
        case playlist(MediaTarget)
        /// `/status`: the cache's entries.
        case status
        /// `/api/proof`: the server proves it knows the token, before a client sends it.
        case proof
        /// `/api/…`: the queue's JSON API, by path components.
        case api([String])
        /// `/api/events`: the queue's server-sent events.
        case events
    }

    /// A request the gate let through: only `decide` makes one.
    struct Admitted: Sendable {
        let route: Route
        let requester: Requester
        let query: [URLQueryItem]
        /// What every answer to it carries: none unless the route may be read by other pages and
        /// `--allow-origin` names the request's `Origin`.
        let corsHeaders: [(String, String)]

        fileprivate init(route: Route, requester: Requester, query: [URLQueryItem], corsHeaders: [(String, String)]) {
            self.route = route
            self.requester = requester
            self.query = query
            self.corsHeaders = corsHeaders
        }
    }

    enum Verdict {
        /// The gate answers it (a refusal, a preflight, a redirect): no route sees the request.
        case answer(Reply)
        case admit(Admitted)
    }

    /// What a path names, before its rules let a request through.
    private enum Resource {
        case page(PlayerPage.File)
        case media
        case status
        case proof
        case api([String])
        case events

        init?(path: String) {
            if path.hasPrefix("/api/") {
                let components = path.dropFirst("/api/".count).split(separator: "/").map(String.init)
                self = path == "/api/proof" ? .proof : components == ["events"] ? .events : .api(components)
                return
            }
            switch path {
            // `/stream` is the path's old name: links, bookmarks and players from before still read it,
            // and get the same answers.
            case "/media", "/stream": self = .media
            case "/status": self = .status
            default:
                guard let file = PlayerPage.File(path: path) else { return nil }
                self = .page(file)
            }
        }

        /// Every resource's rules, stated here (the switch is exhaustive: a new one states its own).
        var rules: Rules {
            switch self {
            case .page(let file):
                // Another site sending the browser to the page with a URL would make serve fetch it as
                // the user's own request (the page's reads are same-origin): it gets the empty page.
                Rules(methods: [.GET, .HEAD], pages: file == .html ? .sentWithoutQuery : .allowed)
            case .media:
                // Only the media may be read by other pages, and only by those --allow-origin names.
                Rules(methods: [.GET, .HEAD], crossOrigin: true, pages: .allowed)
            case .status:
                // Another site's page reads nothing of it (no CORS), but would have serve list the cache,
                // parse every kept playlist and probe every file, as often as it likes.
                Rules(methods: [.GET, .HEAD], pages: .refused("the cache's status is not for web pages"))
            case .proof:
                // Before the token: a client proves the server knows it without sending it (see ServerProof).
                Rules(methods: [.GET, .HEAD], pages: .allowed)
            case .api:
                // Each API path answers its own methods (see DownloadAPI).
                Rules(methods: nil, token: true, pages: .allowed)
            case .events:
                Rules(methods: [.GET], token: true, pages: .allowed)
            }
        }
    }

    /// What a resource asks of a request before its route sees it.
    private struct Rules {
        /// The methods it answers, others a 405; nil when the route answers each method itself.
        var methods: [HTTPMethod]?
        /// Only for clients that send the cache's token.
        var token = false
        /// Pages `--allow-origin` names may read its answers (CORS headers, preflights answered).
        var crossOrigin = false
        var pages: PageRule
    }

    /// What a web page's request may do at a resource.
    private enum PageRule {
        case allowed
        /// 403 with this reason.
        case refused(String)
        /// Sent (303) to the same path without the query.
        case sentWithoutQuery
    }

    func decide(_ head: HTTPRequestHead) -> Verdict {
        let host = head.headers["Host"]
        guard host.count <= 1 else { return .answer(.failure(.badRequest, "more than one Host header")) }
        guard hosts.allows(host.first) else {
            return .answer(.failure(.forbidden, "this server answers only to its own address"))
        }
        guard let components = URLComponents(string: head.uri) else {
            return .answer(.failure(.badRequest, "malformed request target"))
        }
        guard let resource = Resource(path: components.path) else {
            return .answer(.failure(.notFound, "no such path: \(components.path) (try /, /media?url=…, /status or /queue)"))
        }
        let rules = resource.rules
        let origin = head.headers.first(name: "Origin")
        let cors = rules.crossOrigin ? crossOrigin.responseHeaders(origin: origin) : []
        /// The gate's own answer, with the CORS headers of the resource.
        func answered(_ reply: Reply) -> Verdict {
            var reply = reply
            for (name, value) in cors { reply.headers.replaceOrAdd(name: name, value: value) }
            return .answer(reply)
        }
        if rules.crossOrigin, head.method == .OPTIONS, let method = head.headers.first(name: "Access-Control-Request-Method") {
            let privateNetwork = head.headers.first(name: "Access-Control-Request-Private-Network")?.lowercased() == "true"
            let requested = head.headers.first(name: "Access-Control-Request-Headers")
            guard let answer = crossOrigin.preflight(origin: origin, method: method, headers: requested, privateNetwork: privateNetwork)
            else {
                return answered(.failure(.forbidden, "this page may not read the cache (serve --allow-origin ORIGIN allows one)"))
            }
            return .answer(Reply(status: .noContent, headers: HTTPHeaders(answer)))
        }
        if rules.token, !Self.sameSecret(head.headers.first(name: "Authorization") ?? "", "Bearer " + token) {
            var headers = HTTPHeaders()
            headers.add(name: "WWW-Authenticate", value: "Bearer")
            let body = DownloadAPI.error(.unauthorized, "send the token of the cache directory: Authorization: Bearer TOKEN")
            return answered(.content(.unauthorized, type: "application/json", body: body.body, headers: headers))
        }
        if let methods = rules.methods, !methods.contains(head.method) {
            return answered(.notAllowed(head.method, allowed: methods))
        }
        let requester: Requester = isFromWebPage(head) ? .page : .player
        if requester == .page {
            switch rules.pages {
            case .allowed: break
            case .refused(let reason): return answered(.failure(.forbidden, reason))
            case .sentWithoutQuery:
                guard components.query != nil else { break }
                var headers = HTTPHeaders()
                headers.add(name: "Location", value: components.path)
                return answered(.content(.seeOther, type: "text/plain; charset=utf-8", body: [], headers: headers))
            }
        }
        let query = components.queryItems ?? []
        let route: Route
        switch resource {
        case .page(let file): route = .page(file)
        case .status: route = .status
        case .proof: route = .proof
        case .api(let path): route = .api(path)
        case .events: route = .events
        case .media:
            switch Self.mediaRoute(query, requester: requester) {
            case .success(let media): route = media
            case .failure(let refusal): return answered(.failure(.badRequest, refusal.message))
            }
        }
        return .admit(Admitted(route: route, requester: requester, query: query, corsHeaders: cors))
    }

    /// Whether a web page sent this request (a `<video>` or a script on some site) rather than a
    /// player or this server's own page: browsers say so in `Sec-Fetch-Site`, and name the page's
    /// origin in `Origin` on CORS requests. A page `--allow-origin` names is the user's own, even
    /// though its browser says `cross-site` or `same-site` as every browser does.
    func isFromWebPage(_ head: HTTPRequestHead) -> Bool {
        let origin = head.headers.first(name: "Origin")
        if crossOrigin.names(origin) { return false }
        if let site = head.headers.first(name: "Sec-Fetch-Site")?.lowercased(), site == "cross-site" || site == "same-site" {
            return true
        }
        guard let origin else { return false }
        // This server's own page: http, and an authority its Host check accepts.
        guard let own = CrossOriginPolicy.normalized(origin), own.hasPrefix("http://") else { return true }
        return !hosts.allows(String(own.dropFirst("http://".count)))
    }

    private struct Refusal: Error {
        var message: String
    }

    /// `/media?url=U[&key=K][&kind=key]`: a playlist by its name, or a file under its entry's key.
    private static func mediaRoute(_ query: [URLQueryItem], requester: Requester) -> Result<Route, Refusal> {
        guard let url = query.first(where: { $0.name == "url" })?.value, !url.isEmpty else {
            return .failure(Refusal(message: "missing url= (a percent-encoded http or https URL)"))
        }
        guard isFetchableURL(url) else { return .failure(Refusal(message: "not an http or https URL: \(url)")) }
        var key = CacheIndex.key(url: url, playerKey: query.first { $0.name == "key" }?.value, forPage: requester == .page)
        // An AES key, as the rewritten playlist marks it: kept for offline play, never listed.
        if query.contains(where: { $0.name == "kind" && $0.value == "key" }) { key = CacheIndex.secretKey(key) }
        let target = MediaTarget(url: url, key: key)
        // A playlist's name: it is rewritten, never served from the cache file.
        if let path = URL(string: url)?.path, StreamFormat.detect(contentType: nil, path: path, firstBytes: []) != nil {
            return .success(.playlist(target))
        }
        return .success(.media(target))
    }

    /// Compares a secret in a time that depends on its length only, so a web page timing refusals
    /// learns nothing of the token.
    private static func sameSecret(_ presented: String, _ expected: String) -> Bool {
        let (a, b) = (Array(presented.utf8), Array(expected.utf8))
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
