import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import VFetch
import VFetchCore
import VFetchStreams

#if canImport(Glibc)
    import Glibc
#endif

/// One player's HTTP/1.1 connection: routes each request and streams cached bytes as they arrive.
///
/// It runs only on its channel's event loop, so its fields need no lock. NIO's pipelining handler in
/// front of it holds back the next request until this response's end is written.
final class PlayerConnection: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Bytes read from the cache file and written per step.
    private static let chunkSize: Int64 = 256 << 10

    /// The body being sent and where it stands.
    private struct Body {
        var entry: CacheEntry
        /// The entry's download version the response's headers describe.
        var version: Int
        var reader: Int
        var file: Int32
        var offset: Int64
        var end: Int64
        var keepAlive: Bool
    }

    /// Request bodies (API calls) larger than this are refused.
    private static let maxRequestBody = 1 << 20

    private let cache: PlayerCache
    /// Where the cache file is opened, read and closed: the cache's disk threads.
    private let disk: NIOThreadPool
    private let downloads: DownloadService
    /// What API clients must send as `Authorization: Bearer TOKEN`.
    private let token: String
    private let hosts: HostAllowList
    private let connections: OpenConnections
    private let crossOrigin: CrossOriginPolicy
    /// The CORS headers of the answer being made (see `route`).
    private var corsHeaders: [(String, String)] = []
    /// Closes the connection when no request arrives for `idleTimeout`.
    private var idleTimer: Scheduled<Void>?
    private var requestHead: HTTPRequestHead?
    private var requestBody: [UInt8] = []
    /// The event stream being sent, if this connection carries one.
    private var events: Task<Void, Never>?
    private var body: Body?
    /// Bumped per response, so a late callback of an earlier one does nothing.
    private var generation = 0

    /// A connection with no request for this long (or sending one slower) is closed, as nginx's
    /// client_header_timeout and keepalive_timeout do; players open another when they need one.
    private let idleTimeout: TimeAmount

    init(
        cache: PlayerCache, downloads: DownloadService, token: String, hosts: HostAllowList, connections: OpenConnections,
        crossOrigin: CrossOriginPolicy, idleTimeout: TimeAmount
    ) {
        self.idleTimeout = idleTimeout
        self.hosts = hosts
        self.connections = connections
        self.crossOrigin = crossOrigin
        self.cache = cache
        disk = cache.disk
        self.downloads = downloads
        self.token = token
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.accepted(context.channel)
        waitForRequest(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            idleTimer?.cancel()
            idleTimer = nil
            connections.busy(context.channel)
            requestHead = head
            requestBody = []
        case .body(var part):
            if requestBody.count <= Self.maxRequestBody { requestBody += part.readBytes(length: part.readableBytes) ?? [] }
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            guard requestBody.count <= Self.maxRequestBody else {
                return fail(.payloadTooLarge, "request body over 1 MiB", head, context)
            }
            route(head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        endBody()
        idleTimer?.cancel()
        connections.closed(context.channel)
        events?.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { endBody() }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Players reset connections when they seek or quit: close quietly.
        endBody()
        context.close(promise: nil)
    }

    /// Between requests: idle, so first to go when there are too many connections, and closed
    /// after `idleTimeout`.
    private func waitForRequest(_ context: ChannelHandlerContext) {
        connections.idle(context.channel)
        idleTimer?.cancel()
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { context.close(promise: nil) }
    }

    // MARK: - Routing

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        generation += 1
        let host = head.headers["Host"]
        guard host.count <= 1 else { return fail(.badRequest, "more than one Host header", head, context) }
        guard hosts.allows(host.first) else {
            return fail(.forbidden, "this server answers only to its own address", head, context)
        }
        guard let components = URLComponents(string: head.uri) else {
            return fail(.badRequest, "malformed request target", head, context)
        }
        if components.path.hasPrefix("/api/") {
            return api(head, components, context)
        }
        // Only the media may be read by other pages, and only by those --allow-origin names.
        let origin = head.headers.first(name: "Origin")
        corsHeaders = components.path == "/stream" ? crossOrigin.responseHeaders(origin: origin) : []
        if head.method == .OPTIONS, components.path == "/stream",
            let method = head.headers.first(name: "Access-Control-Request-Method")
        {
            let privateNetwork = head.headers.first(name: "Access-Control-Request-Private-Network")?.lowercased() == "true"
            let requested = head.headers.first(name: "Access-Control-Request-Headers")
            guard let answer = crossOrigin.preflight(origin: origin, method: method, headers: requested, privateNetwork: privateNetwork)
            else {
                return fail(.forbidden, "this page may not read the cache (serve --allow-origin ORIGIN allows one)", head, context)
            }
            corsHeaders = answer
            return send(.noContent, headers: HTTPHeaders(), body: nil, head, context)
        }
        switch components.path {
        case "/", "/player.js", "/player.css":
            guard head.method == .GET || head.method == .HEAD else { return notAllowed(head, context) }
            // Another site sending the browser to the page with a URL would make serve fetch it as
            // the user's own request (the page's reads are same-origin): it gets the empty page.
            if components.path == "/", components.query != nil, isFromWebPage(head) {
                var headers = HTTPHeaders()
                headers.add(name: "Location", value: "/")
                return respond(.seeOther, type: "text/plain; charset=utf-8", body: [], head, context, headers: headers)
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Security-Policy", value: PlayerPage.contentSecurityPolicy)
            // Revalidated on every use (a new vfetch may bring a new page), cheaply: a 304 when unchanged.
            headers.add(name: "Cache-Control", value: "no-cache")
            let (type, text, etag) =
                switch components.path {
                case "/player.js": ("text/javascript; charset=utf-8", PlayerPage.script, PlayerPage.scriptETag)
                case "/player.css": ("text/css; charset=utf-8", PlayerPage.css, PlayerPage.cssETag)
                default: ("text/html; charset=utf-8", PlayerPage.html, PlayerPage.htmlETag)
                }
            headers.add(name: "ETag", value: etag)
            switch preconditions(head, etag: etag, lastModified: nil) {
            case .proceed: respond(.ok, type: type, body: Array(text.utf8), head, context, headers: headers)
            case .notModified: send(.notModified, headers: headers, body: nil, head, context)
            case .preconditionFailed: fail(.preconditionFailed, "a precondition (If-Match) failed", head, context)
            }
        case "/stream":
            guard head.method == .GET || head.method == .HEAD else { return notAllowed(head, context) }
            let query = components.queryItems ?? []
            guard let url = query.first(where: { $0.name == "url" })?.value, !url.isEmpty else {
                return fail(.badRequest, "missing url= (a percent-encoded http or https URL)", head, context)
            }
            guard isFetchableURL(url) else { return fail(.badRequest, "not an http or https URL: \(url)", head, context) }
            let fromPage = isFromWebPage(head)
            // A playlist's name: it is rewritten, never served from the cache file.
            if let path = URL(string: url)?.path, StreamFormat.detect(contentType: nil, path: path, firstBytes: []) != nil {
                return playlist(url: url, fromPage: fromPage, head, context)
            }
            var key = CacheIndex.key(url: url, playerKey: query.first { $0.name == "key" }?.value, forPage: fromPage)
            // An AES key, as the rewritten playlist marks it: kept for offline play, never listed.
            if query.contains(where: { $0.name == "kind" && $0.value == "key" }) { key = CacheIndex.secretKey(key) }
            if let failure = cache.recentFailure(key: key, publicOnly: fromPage) {
                return originFailed(failure.message, exitStatus: failure.exitStatus, head, context)
            }
            stream(cache.entry(key: key, url: url), key: key, url: url, fromPage: fromPage, head, context)
            // What was fetched ahead elsewhere stops now; the segments after this one start once it is whole.
            if head.method == .GET { cache.readAhead(after: url, publicOnly: fromPage, on: context.eventLoop) }
        case "/status":
            guard head.method == .GET || head.method == .HEAD else { return notAllowed(head, context) }
            // Another site's page reads nothing of it (no CORS), but would have serve list the cache, parse
            // every kept playlist and probe every file, as often as it likes.
            guard !isFromWebPage(head) else { return fail(.forbidden, "the cache's status is not for web pages", head, context) }
            let current = generation
            let loop = context.eventLoop
            let cache = cache
            let promise = loop.makePromise(of: [UInt8].self)
            promise.completeWithTask { await cache.statusJSON() }
            promise.futureResult.assumeIsolated().whenSuccess { json in
                guard current == self.generation else { return }
                self.respond(.ok, type: "application/json", body: json, head, context)
            }
        default:
            fail(.notFound, "no such path: \(components.path) (try /, /stream?url=… or /status)", head, context)
        }
    }

    private func stream(
        _ entry: CacheEntry, key: String, url: String, fromPage: Bool, _ head: HTTPRequestHead,
        _ context: ChannelHandlerContext
    ) {
        let current = generation
        let cache = cache
        entry.open(url: url, publicOnly: fromPage, on: context.eventLoop).assumeIsolated().whenComplete { result in
            switch result {
            case .failure(let error):
                var message = "origin: \(error)"
                if fromPage, case .connectFailed = error as? DownloadError {
                    message += " (a web page's request reaches only public addresses)"
                }
                let exitStatus = (error as? DownloadError).map { ExitStatus($0).rawValue }
                // Once per failure: for the next few seconds `recentFailure` answers without coming here.
                Self.log("\(redactedURL(url)): \(message)")
                cache.failed(entry, key: key, publicOnly: fromPage, message: message, exitStatus: exitStatus)
                guard current == self.generation, context.channel.isActive else { return }
                self.originFailed(message, exitStatus: exitStatus, head, context)
            case .success(let (remote, version)):
                guard current == self.generation, context.channel.isActive else { return }
                // A playlist under another name, told by its Content-Type.
                let path = URL(string: remote.url)?.path ?? ""
                if StreamFormat.detect(contentType: remote.contentType, path: path, firstBytes: []) != nil {
                    return self.playlist(url: url, fromPage: fromPage, head, context)
                }
                if Self.mayBePlaylist(remote) {
                    return self.sniff(head, entry: entry, remote: remote, version: version, url: url, fromPage: fromPage, context)
                }
                self.answer(head, entry: entry, remote: remote, version: version, context: context)
            }
        }
    }

    /// Whether a web page sent this request (a `<video>` or a script on some site) rather than a
    /// player or this server's own page: browsers say so in `Sec-Fetch-Site`, and name the page's
    /// origin in `Origin` on CORS requests. A page `--allow-origin` names is the user's own, even
    /// though its browser says `cross-site` or `same-site` as every browser does.
    private func isFromWebPage(_ head: HTTPRequestHead) -> Bool {
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

    private func answer(
        _ head: HTTPRequestHead, entry: CacheEntry, remote: RemoteInfo, version: Int, context: ChannelHandlerContext
    ) {
        guard let length = remote.length else {
            return fail(.badGateway, "the origin does not say the file's length; use vfetch get", head, context)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Accept-Ranges", value: "bytes")
        switch ServedContentType(origin: remote.contentType) {
        case .media(let type):
            headers.add(name: "Content-Type", value: type)
        case .opaque:
            headers.add(name: "Content-Type", value: "application/octet-stream")
            // Saved, never shown; under the origin's name, not "stream".
            let name = FileName.choose(url: remote.url, suggested: nil)
            headers.add(name: "Content-Disposition", value: ContentDisposition.attachment(fileName: name))
        case .page(let type):
            return fail(.badGateway, "the origin answered a web page (\(type)), not media; an error or login page?", head, context)
        }
        if let etag = remote.etag { headers.add(name: "ETag", value: etag) }
        if let modified = remote.lastModified { headers.add(name: "Last-Modified", value: modified) }
        switch preconditions(head, etag: remote.etag, lastModified: remote.lastModified) {
        case .proceed: break
        case .notModified:
            headers.remove(name: "Content-Type")
            headers.remove(name: "Content-Disposition")
            return send(.notModified, headers: headers, body: nil, head, context)
        case .preconditionFailed:
            return fail(.preconditionFailed, "a precondition (If-Match or If-Unmodified-Since) failed", head, context)
        }
        let range: Range<Int64>
        let status: HTTPResponseStatus
        // If-Range naming another version of the file: the whole current file, not a part to splice.
        var rangeHeader = head.headers.first(name: "Range")
        if let ifRange = head.headers.first(name: "If-Range"), ifRange != remote.etag || ifRange.hasPrefix("W/"),
            ifRange != remote.lastModified
        {
            rangeHeader = nil
        }
        switch RangeRequest(header: rangeHeader, length: length) {
        case .whole:
            (range, status) = (0..<length, .ok)
        case .part(let part):
            (range, status) = (part, .partialContent)
            headers.add(name: "Content-Range", value: "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)")
        case .unsatisfiable:
            // An error message, not the file: none of the file's headers but its length (as nginx).
            var unsatisfiable = HTTPHeaders()
            unsatisfiable.add(name: "Content-Range", value: "bytes */\(length)")
            return fail(.rangeNotSatisfiable, "range not satisfiable (length \(length))", head, context, headers: unsatisfiable)
        }
        headers.add(name: "Content-Length", value: String(range.count))
        guard head.method == .GET, !range.isEmpty else {
            return send(status, headers: headers, body: nil, head, context)
        }
        if entry.refuses(at: range.lowerBound) {
            let limit = humanSize(cache.settings.maxBytes)
            return fail(.insufficientStorage, "the cache is full (--max-cache-size \(limit)) with files being read", head, context)
        }
        commonHeaders(&headers, head)
        let response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        let (current, path) = (generation, SideFiles(output: entry.path).part)
        disk.runIfActive(eventLoop: context.eventLoop) { () throws -> Int32 in
            try FileSystem.open(path, .read, followingLinks: true)
        }.assumeIsolated().whenComplete { result in
            guard case .success(let file) = result else {
                guard current == self.generation, context.channel.isActive else { return }
                return self.fail(.internalServerError, "cannot open the cache file", head, context)
            }
            // The connection went, or moved on, while the file opened.
            guard current == self.generation, context.channel.isActive else { return self.closeOnDisk(file) }
            context.writeAndFlush(self.wrapOutboundOut(.head(response)), promise: nil)
            self.body = Body(
                entry: entry, version: version, reader: entry.join(at: range.lowerBound), file: file,
                offset: range.lowerBound, end: range.upperBound, keepAlive: head.isKeepAlive)
            self.pump(context: context)
        }
    }

    // MARK: - Playlists

    /// A playlist or manifest, fetched afresh from the origin with every URI in it pointing back
    /// through `/stream`: segments, init sections and keys then come through the cache. Never
    /// served from a cache file, since a live playlist changes every target duration.
    ///
    /// The links are root-relative (`/stream?url=…`), so a player resolves them against the address
    /// it reached the playlist by, this server's or a cache's in front of it (docs/SHARING.md), and
    /// carry only `url=`: what a plain `/stream` request needs, and nothing secret.
    private func playlist(url: String, fromPage: Bool, _ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard let host = head.headers.first(name: "Host") else {
            return fail(.badRequest, "no Host header", head, context)
        }
        let current = generation
        var options = cache.settings.download
        options.publicAddressesOnly = options.publicAddressesOnly || fromPage
        // A player waits for this answer: a dead origin fails it soon rather than after minutes.
        options.retries = min(options.retries, 2)
        let own = "http://\(host)/"
        let prefix = "/stream?url="
        let (cache, directory, disk) = (cache, cache.directory, disk)
        let promise = context.eventLoop.makePromise(of: StreamRewrite.Document.self)
        promise.completeWithTask { [options] in
            // The kept copies are the player's, perhaps of a private address: a page's request neither
            // reads one (nor sends its validators, which a public origin could answer with a 304) nor writes one.
            let kept = fromPage ? nil : try? await disk.runIfActive { directory.keptPlaylist(url: url) }
            var options = options
            if kept != nil {
                // A copy to fall back on: an origin out of reach costs the player seconds, not minutes of retries.
                (options.retries, options.connectTimeout) = (0, min(options.connectTimeout, 5))
                options.stallTimeout = min(options.stallTimeout, 10)
            }
            var source: KeptPlaylist
            var isFresh = true
            do {
                let fetched = try await StreamDownload.document(
                    url: url, options: options, limit: Int64(StreamRewrite.maximumSize), ifNoneMatch: kept?.facts.etag,
                    ifModifiedSince: kept?.facts.lastModified)
                if fetched.notModified {
                    guard let kept else { throw PlaylistFailure("the origin answered 304 Not Modified to a request without validators") }
                    (source, isFresh) = (kept, false)
                } else {
                    source = KeptPlaylist(
                        url: url, finalURL: fetched.finalURL, contentType: fetched.contentType, etag: fetched.etag,
                        lastModified: fetched.lastModified, body: fetched.bytes)
                }
            } catch let error as DownloadError {
                switch error {
                // Never for another site's page, which has no kept copy (see above).
                case .connectFailed, .transferFailed:
                    guard let kept else { throw error }
                    // Offline: the last good copy of a VOD playlist, which cannot have changed.
                    Self.log("\(redactedURL(url)): origin: \(error); answering the copy kept in the cache")
                    (source, isFresh) = (kept, false)
                case .httpStatus(let status, _) where status == 404 || status == 410:
                    // The origin says it is gone: so is the copy.
                    if kept != nil { try? await disk.runIfActive { directory.forgetPlaylist(url: url) } }
                    throw error
                default:
                    throw error
                }
            }
            let facts = source.facts
            guard let final = URL(string: facts.finalURL) else { throw PlaylistFailure("the origin redirected to a bad URL") }
            guard let format = StreamFormat.detect(contentType: facts.contentType, path: final.path, firstBytes: source.body)
            else {
                let type = facts.contentType ?? "no Content-Type"
                throw PlaylistFailure("the origin answered \(type), neither an HLS playlist nor a DASH manifest")
            }
            // A /stream link to this server already goes through it: wrapped again, each read would nest
            // deeper. Any other of its paths is wrapped, so a playlist cannot send a player there.
            let proxied = { (uri: String, kind: String) in uri.hasPrefix(own + "stream?") ? uri : prefix + Self.queryValue(uri) + kind }
            let document: StreamRewrite.Document
            do {
                document = try StreamRewrite.rewrite(
                    source.body, format: format, url: final, requested: URL(string: url),
                    link: { proxied($0, "") }, linkKey: { proxied($0, "&kind=key") })
            } catch {
                throw PlaylistFailure("\(error)")
            }
            // Only a good VOD playlist is kept (a live one changes; a bad one is never kept), after it rewrote.
            // The same bytes again (an origin that ignores If-None-Match): a touch, not a rewrite and its syncs.
            let unchanged = !isFresh || kept == source
            let update: @Sendable () -> Void = { [source, kept] in
                if document.isLive {
                    if kept != nil { directory.forgetPlaylist(url: url) }
                } else if unchanged {
                    directory.touchKeptPlaylist(url: url)
                } else {
                    do { try cache.keep(source) } catch { Self.log("\(redactedURL(url)): cannot keep the playlist: \(error)") }
                }
            }
            if !fromPage { try? await disk.runIfActive(update) }
            cache.learned(playlist: url, segments: document.segments, variants: document.variants)
            // A static MPD's segments are told by its templates and timelines: read as `get` reads them.
            if format == .dash, !document.isLive,
                let catalog = try? StreamDocument.catalog(source.body, url: final, contentType: facts.contentType)
            {
                cache.learned(manifest: url, catalog: catalog)
            }
            return document
        }
        promise.futureResult.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let document):
                guard current == self.generation, context.channel.isActive else { return }
                var headers = HTTPHeaders()
                // A live playlist is asked for again every target duration, and must be fresh each time.
                headers.add(name: "Cache-Control", value: document.isLive ? "no-store" : "no-cache")
                self.respond(.ok, type: document.contentType, body: document.bytes, head, context, headers: headers)
            case .failure(let error):
                var message = "\(error)"
                var exitStatus: Int32?
                if let error = error as? DownloadError {
                    message = "origin: \(error)"
                    exitStatus = ExitStatus(error).rawValue
                    if fromPage, case .connectFailed = error { message += " (a web page's request reaches only public addresses)" }
                }
                Self.log("\(redactedURL(url)): \(message)")
                guard current == self.generation, context.channel.isActive else { return }
                self.originFailed(message, exitStatus: exitStatus, head, context)
            }
        }
    }

    /// Whether a file could be a playlist its origin did not name: no type, or a type that says
    /// nothing (`text/plain`, as many servers send playlists), and small enough to be one.
    private static func mayBePlaylist(_ remote: RemoteInfo) -> Bool {
        let type =
            (remote.contentType ?? "").split(separator: ";").first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
        guard ["", "text/plain", "application/octet-stream", "binary/octet-stream"].contains(type) else { return false }
        return (remote.length ?? 0) <= Int64(StreamRewrite.maximumSize)
    }

    /// Answers a file `mayBePlaylist` allows once its first bytes are on disk: rewritten if they
    /// start a playlist, as it is otherwise.
    private func sniff(
        _ head: HTTPRequestHead, entry: CacheEntry, remote: RemoteInfo, version: Int, url: String, fromPage: Bool,
        _ context: ChannelHandlerContext
    ) {
        let current = generation
        let (loop, disk, path) = (context.eventLoop, disk, entry.path + ".part")
        let wanted = Int(min(remote.length ?? 0, 1024))
        guard wanted > 0 else { return answer(head, entry: entry, remote: remote, version: version, context: context) }
        entry.whenPresent(Int64(min(wanted, 64) - 1), on: loop).assumeIsolated().whenComplete { present in
            guard current == self.generation, context.channel.isActive else { return }
            let count = Int(min(Int64(wanted), entry.presentBytes(from: 0)))
            guard case .success = present, entry.version == version, count > 0 else {
                return self.answer(head, entry: entry, remote: remote, version: version, context: context)
            }
            disk.runIfActive(eventLoop: loop) { () -> [UInt8] in
                let file = open(path, O_RDONLY | O_CLOEXEC)
                guard file >= 0 else { return [] }
                defer { close(file) }
                var bytes = [UInt8](repeating: 0, count: count)
                let read = bytes.withUnsafeMutableBytes { pread(file, $0.baseAddress!, count, 0) }
                return Array(bytes.prefix(max(0, read)))
            }.assumeIsolated().whenComplete { first in
                guard current == self.generation, context.channel.isActive else { return }
                if case .success(let first) = first, !first.isEmpty,
                    StreamFormat.detect(contentType: remote.contentType, path: "", firstBytes: first) != nil
                {
                    return self.playlist(url: url, fromPage: fromPage, head, context)
                }
                self.answer(head, entry: entry, remote: remote, version: version, context: context)
            }
        }
    }

    /// A line in serve's log (its standard error, `serve.log` when `play` started it), secrets redacted.
    private static func log(_ line: String) {
        FileHandle.standardError.write(Data("vfetch serve: \(redactingCredentials(in: line))\n".utf8))
    }

    /// `text` percent-encoded as a query value: everything but RFC 3986's unreserved characters.
    private static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// What the request's preconditions make of it (GET and HEAD are the only methods that get here).
    private func preconditions(_ head: HTTPRequestHead, etag: String?, lastModified: String?) -> ConditionalRequest {
        ConditionalRequest(
            isGetOrHead: true, ifMatch: head.headers.first(name: "If-Match"),
            ifUnmodifiedSince: head.headers.first(name: "If-Unmodified-Since"),
            ifNoneMatch: head.headers.first(name: "If-None-Match"),
            ifModifiedSince: head.headers.first(name: "If-Modified-Since"), etag: etag, lastModified: lastModified)
    }

    // MARK: - The download API

    private func api(_ head: HTTPRequestHead, _ components: URLComponents, _ context: ChannelHandlerContext) {
        if components.path == "/api/proof" {
            // Before the token: a client proves the server knows it without sending it (see ServerProof).
            guard let nonce = components.queryItems?.first(where: { $0.name == "nonce" })?.value, ServerProof.isNonce(nonce),
                let port = context.channel.localAddress?.port
            else { return fail(.badRequest, "send nonce= (32 to 128 hex digits)", head, context) }
            let proof = ServerProof.answer(token: token, nonce: nonce, port: port)
            return respond(.ok, type: "application/json", body: Array("{\"proof\":\"\(proof)\"}\n".utf8), head, context)
        }
        let presented = head.headers.first(name: "Authorization") ?? ""
        guard presented == "Bearer " + token else {
            var headers = HTTPHeaders()
            headers.add(name: "WWW-Authenticate", value: "Bearer")
            let body = DownloadAPI.error(.unauthorized, "send the token of the cache directory: Authorization: Bearer TOKEN")
            return respond(.unauthorized, type: "application/json", body: body.body, head, context, headers: headers)
        }
        let path = components.path.dropFirst("/api/".count).split(separator: "/").map(String.init)
        if path == ["events"] {
            guard head.method == .GET else { return notAllowed(head, context) }
            return streamEvents(head, context)
        }
        let (current, downloads, body) = (generation, downloads, requestBody)
        let query = components.queryItems ?? []
        let promise = context.eventLoop.makePromise(of: DownloadAPI.Answer.self)
        promise.completeWithTask {
            await DownloadAPI.handle(method: head.method, path: path, query: query, body: body, service: downloads)
        }
        promise.futureResult.assumeIsolated().whenSuccess { answer in
            guard current == self.generation else { return }
            self.respond(answer.status, type: "application/json", body: answer.body, head, context)
        }
    }

    /// Server-Sent Events of the downloads' progress and states, until the client goes.
    private func streamEvents(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-cache")
        commonHeaders(&headers, head)
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: ": vfetch\n\n")))), promise: nil)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (loop, downloads) = (context.eventLoop, downloads)
        events = Task {
            for await frame in await downloads.subscribe() {
                loop.execute {
                    let (handler, context) = bound.value
                    let buffer = context.channel.allocator.buffer(string: frame)
                    context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                }
            }
        }
    }

    // MARK: - The body

    /// Sends what is on disk from the body's offset, one chunk at a time (each after the last is
    /// written: a paused player holds nothing up), and waits for the download at a missing byte.
    private func pump(context: ChannelHandlerContext) {
        guard let current = body else { return }
        let generation = generation
        if current.offset == current.end {
            endBody()
            let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !current.keepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
            waitForRequest(context)
            return
        }
        // Another download of the entry started (it may be another file): this response ends here.
        guard current.entry.version == current.version else {
            endBody()
            context.close(promise: nil)
            return
        }
        let available = current.entry.presentBytes(from: current.offset)
        guard available > 0 else {
            current.entry.whenPresent(current.offset, on: context.eventLoop).assumeIsolated().whenComplete { result in
                guard generation == self.generation, self.body != nil else { return }
                if case .failure = result {
                    // The origin failed mid-response: the player sees a short body and retries.
                    self.endBody()
                    context.close(promise: nil)
                } else {
                    self.pump(context: context)
                }
            }
            return
        }
        let count = Int(min(available, current.end - current.offset, Self.chunkSize))
        let (file, offset) = (current.file, current.offset)
        let allocator = context.channel.allocator
        disk.runIfActive(eventLoop: context.eventLoop) { () throws -> ByteBuffer in
            var buffer = allocator.buffer(capacity: count)
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                (try? FileSystem.read(file, into: UnsafeMutableRawBufferPointer(rebasing: pointer[..<count]), at: offset)) ?? 0
            }
            guard read == count else { throw IOError(errnoCode: EIO, reason: "short read of the cache file") }
            return buffer
        }.assumeIsolated().whenComplete { result in
            guard generation == self.generation, var body = self.body else { return }
            guard case .success(let buffer) = result, body.entry.version == body.version else {
                self.endBody()
                context.close(promise: nil)
                return
            }
            body.offset += Int64(count)
            self.body = body
            body.entry.move(body.reader, to: body.offset)
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(buffer)))).assumeIsolated().whenComplete { result in
                guard generation == self.generation else { return }
                if case .failure = result {
                    self.endBody()
                    context.close(promise: nil)
                } else {
                    self.pump(context: context)
                }
            }
        }
    }

    private func endBody() {
        guard let current = body else { return }
        body = nil
        closeOnDisk(current.file)
        current.entry.leave(current.reader)
    }

    /// Closes a cache file on the disk threads (a close may wait on the disk), or here once they are stopped.
    private func closeOnDisk(_ file: Int32) {
        disk.submit { _ in FileSystem.close(file) }
    }

    // MARK: - Small answers

    /// 502 for an origin's failure, with the exit code `vfetch get` would have given for it, for
    /// `vfetch play` to exit with.
    private func originFailed(_ message: String, exitStatus: Int32?, _ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        if let exitStatus { headers.add(name: "VFetch-Exit-Status", value: String(exitStatus)) }
        fail(.badGateway, message, head, context, headers: headers)
    }

    private func notAllowed(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Allow", value: "GET, HEAD")
        fail(.methodNotAllowed, "method \(head.method.rawValue) not allowed", head, context, headers: headers)
    }

    private func fail(
        _ status: HTTPResponseStatus, _ message: String, _ head: HTTPRequestHead, _ context: ChannelHandlerContext,
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        let body = "vfetch: \(redactingCredentials(in: message))\n"
        respond(status, type: "text/plain; charset=utf-8", body: Array(body.utf8), head, context, headers: headers)
    }

    private func respond(
        _ status: HTTPResponseStatus, type: String, body: [UInt8], _ head: HTTPRequestHead,
        _ context: ChannelHandlerContext, headers: HTTPHeaders = HTTPHeaders()
    ) {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: type)
        headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        send(status, headers: headers, body: head.method == .HEAD ? nil : body, head, context)
    }

    private func send(
        _ status: HTTPResponseStatus, headers: HTTPHeaders, body: [UInt8]?, _ head: HTTPRequestHead,
        _ context: ChannelHandlerContext
    ) {
        var headers = headers
        commonHeaders(&headers, head)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil) }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !head.isKeepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        waitForRequest(context)
    }

    /// What every answer carries: no answer is ever sniffed into a page or runs as one, and the
    /// connection's keep-alive.
    private func commonHeaders(_ headers: inout HTTPHeaders, _ head: HTTPRequestHead) {
        headers.replaceOrAdd(name: "Date", value: HTTPDate.format(epochSeconds: Int(Date().timeIntervalSince1970)))
        headers.replaceOrAdd(name: "X-Content-Type-Options", value: "nosniff")
        for (name, value) in corsHeaders { headers.replaceOrAdd(name: name, value: value) }
        if !headers.contains(name: "Content-Security-Policy") {
            headers.add(name: "Content-Security-Policy", value: "sandbox; default-src 'none'")
        }
        if !head.isKeepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if head.version.major == 1 && head.version.minor == 0 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
    }
}

/// Why a playlist could not be answered, for the player and serve's log.
struct PlaylistFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
