import Foundation
import NIOCore
import NIOHTTP1
import VFetchCore

/// `/api/…`: the background queue's JSON API (`DownloadAPI`), the removal of cache entries, and the
/// proof that the server knows the cache's token, which a client asks for before it sends the token.
struct APIRoute {
    let downloads: DownloadService
    let cache: PlayerCache
    let token: String

    /// `/api/proof?nonce=N`: see `ServerProof`.
    func proof(_ query: [URLQueryItem], _ exchange: Exchange) {
        guard let nonce = query.first(where: { $0.name == "nonce" })?.value, ServerProof.isNonce(nonce),
            let port = exchange.localPort
        else { return exchange.send(.failure(.badRequest, "send nonce= (32 to 128 hex digits)")) }
        let proof = ServerProof.answer(token: token, nonce: nonce, port: port)
        exchange.send(.content(.ok, type: "application/json", body: Array("{\"proof\":\"\(proof)\"}\n".utf8)))
    }

    func answer(_ path: [String], _ query: [URLQueryItem], _ exchange: Exchange) {
        let (method, body, downloads, cache) = (exchange.head.method, exchange.body, downloads, cache)
        let promise = exchange.eventLoop.makePromise(of: DownloadAPI.Answer.self)
        promise.completeWithTask {
            if path == ["cache"] { return await Self.removeFromCache(method: method, query: query, cache: cache) }
            return await DownloadAPI.handle(method: method, path: path, query: query, body: body, service: downloads)
        }
        promise.futureResult.assumeIsolated().whenSuccess { answer in
            guard exchange.isCurrent else { return }
            exchange.send(.content(answer.status, type: "application/json", body: answer.body))
        }
    }
}

extension APIRoute {
    /// `DELETE /api/cache?entry=NAME`: what `vfetch cache rm NAME` does, while this server holds the
    /// directory. 404 when it names nothing; 409 when all it names is in use.
    static func removeFromCache(method: HTTPMethod, query: [URLQueryItem], cache: PlayerCache) async -> DownloadAPI.Answer {
        guard method == .DELETE else { return DownloadAPI.error(.methodNotAllowed, "method \(method.rawValue) not allowed here") }
        guard let name = query.first(where: { $0.name == "entry" })?.value, !name.isEmpty else {
            return DownloadAPI.error(.badRequest, "send entry= (an entry's ID, URL or key)")
        }
        let found: (removed: [String], inUse: [String])?
        do {
            found = try await cache.disk.runIfActive { cache.remove(named: name) }
        } catch {
            return DownloadAPI.error(.serviceUnavailable, "the server is stopping")
        }
        guard let found else {
            return DownloadAPI.error(.notFound, "not in the cache: \(redactedURL(name))")
        }
        if found.removed.isEmpty {
            let ids = found.inUse.joined(separator: ", ")
            return DownloadAPI.error(.conflict, "in use (a player reads it, or it is being fetched): \(ids); try again when it ends")
        }
        return DownloadAPI.ok(QueueAPI.CacheRemoved(removed: found.removed))
    }
}

/// `/api/events`: Server-Sent Events of the downloads' progress and states, until the client goes.
struct EventsRoute {
    let downloads: DownloadService

    func answer(_ exchange: Exchange) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-cache")
        var events: Task<Void, Never>?
        exchange.begin(.ok, headers: headers) { events?.cancel() }
        _ = exchange.write(exchange.allocator.buffer(string: ": vfetch\n\n"))
        let bound = NIOLoopBound(exchange, eventLoop: exchange.eventLoop)
        let (loop, downloads) = (exchange.eventLoop, downloads)
        events = Task {
            for await update in await downloads.subscribe() {
                guard let frame = update.serverSentEvent else { continue }
                loop.execute {
                    let exchange = bound.value
                    _ = exchange.write(exchange.allocator.buffer(string: frame))
                }
            }
        }
    }
}

extension DownloadService.Update {
    /// The update as a Server-Sent Event, `event: state|progress|removed|notice\ndata: {…}\n\n`, its data
    /// as the API's answers are encoded.
    var serverSentEvent: String? {
        let (event, data): (String, Data?) =
            switch self {
            case .state(let item): ("state", try? QueueAPI.encoder.encode(item))
            case .progress(let item): ("progress", try? QueueAPI.encoder.encode(item))
            case .removed(let removed): ("removed", try? QueueAPI.encoder.encode(removed))
            case .notice(let notice): ("notice", try? QueueAPI.encoder.encode(notice))
            }
        return data.map { "event: \(event)\ndata: \(String(decoding: $0, as: UTF8.self))\n\n" }
    }
}
