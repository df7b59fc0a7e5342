import Foundation
import NIOCore
import NIOHTTP1
import VFetchCore

/// Hands each request the `RequestGate` admitted to its route's handler. Every rule about who may
/// ask what is the gate's; a handler sees only what it let through.
struct Router {
    private let media: MediaRoute
    private let playlists: PlaylistRoute
    private let status: StatusRoute
    private let api: APIRoute
    private let events: EventsRoute

    init(cache: PlayerCache, downloads: DownloadService, token: String) {
        playlists = PlaylistRoute(cache: cache)
        media = MediaRoute(cache: cache, playlists: playlists)
        status = StatusRoute(cache: cache)
        api = APIRoute(downloads: downloads, cache: cache, token: token)
        events = EventsRoute(downloads: downloads)
    }

    func handle(_ request: RequestGate.Admitted, _ exchange: Exchange) {
        switch request.route {
        case .page(let file): exchange.send(PlayerPage.reply(file, to: exchange.head))
        case .media(let target): media.answer(target, request.requester, exchange)
        case .playlist(let target): playlists.answer(target.url, request.requester, exchange)
        case .status: status.answer(exchange)
        case .proof: api.proof(request.query, exchange)
        case .api(let path): api.answer(path, request.query, exchange)
        case .events: events.answer(exchange)
        }
    }
}

/// `/status`: the cache's entries as JSON (`CacheStatus`), made off the event loop.
struct StatusRoute {
    let cache: PlayerCache

    func answer(_ exchange: Exchange) {
        let cache = cache
        let promise = exchange.eventLoop.makePromise(of: [UInt8].self)
        promise.completeWithTask {
            let status = await cache.status()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Array((try? encoder.encode(status)) ?? Data()) + [10]
        }
        promise.futureResult.assumeIsolated().whenSuccess { json in
            guard exchange.isCurrent else { return }
            exchange.send(.content(.ok, type: "application/json", body: json))
        }
    }
}
