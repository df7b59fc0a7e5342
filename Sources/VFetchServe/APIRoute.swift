import Foundation
import NIOCore
import NIOHTTP1
import VFetchCore

/// `/api/…`: the background queue's JSON API (`DownloadAPI`), and the proof that the server knows
/// the cache's token, which a client asks for before it sends the token.
struct APIRoute {
    let downloads: DownloadService
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
        let (method, body, downloads) = (exchange.head.method, exchange.body, downloads)
        let promise = exchange.eventLoop.makePromise(of: DownloadAPI.Answer.self)
        promise.completeWithTask {
            await DownloadAPI.handle(method: method, path: path, query: query, body: body, service: downloads)
        }
        promise.futureResult.assumeIsolated().whenSuccess { answer in
            guard exchange.isCurrent else { return }
            exchange.send(.content(answer.status, type: "application/json", body: answer.body))
        }
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
            for await frame in await downloads.subscribe() {
                loop.execute {
                    let exchange = bound.value
                    _ = exchange.write(exchange.allocator.buffer(string: frame))
                }
            }
        }
    }
}
