import NIOCore
import NIOHTTP1
import VFetchCore
import VFetchEngine
import VFetchStreams

/// `/media` of an HLS playlist or a DASH manifest: fetched afresh and rewritten so that every URI in
/// it points back through `/media` (segments, init sections and keys then come through the cache),
/// never served from a cache file. `PlaylistFetch` decides everything; this carries out its actions
/// in one task (the disk work on the cache's disk threads) and sends its answer.
struct PlaylistRoute {
    let cache: PlayerCache

    func answer(_ url: String, _ requester: RequestGate.Requester, _ exchange: Exchange) {
        guard let host = exchange.head.headers.first(name: "Host") else {
            return exchange.send(.failure(.badRequest, "no Host header"))
        }
        let machine = PlaylistFetch(url: url, requester: requester, server: "http://\(host)/", options: cache.settings.download)
        let cache = cache
        let promise = exchange.eventLoop.makePromise(of: Result<PlaylistFetch.Answer, OriginFailure>.self)
        promise.completeWithTask { await Self.run(machine, cache: cache) }
        promise.futureResult.assumeIsolated().whenSuccess { result in
            switch result {
            case .success(let answer):
                guard exchange.isCurrent else { return }
                var headers = HTTPHeaders()
                headers.add(name: "Cache-Control", value: answer.cacheControl)
                exchange.send(.content(.ok, type: answer.contentType, body: answer.body, headers: headers))
            case .failure(let failure):
                logLine("\(redactedURL(url)): \(failure.message)")
                guard exchange.isCurrent else { return }
                exchange.send(.originFailed(failure))
            }
        }
    }

    /// Performs the machine's actions until it answers.
    private static func run(_ machine: PlaylistFetch, cache: PlayerCache) async -> Result<PlaylistFetch.Answer, OriginFailure> {
        var machine = machine
        let (url, directory, disk) = (machine.url, cache.directory, cache.disk)
        var actions = machine.start()
        while !actions.isEmpty {
            switch actions.removeFirst() {
            case .readKeptCopy:
                let kept = try? await disk.runIfActive { directory.keptPlaylist(url: url) }
                actions += machine.keptCopyRead(kept ?? nil)
            case .fetch(let options, let etag, let lastModified):
                do {
                    let fetched = try await StreamDownload.document(
                        url: url, options: options, limit: Int64(StreamRewrite.maximumSize), ifNoneMatch: etag,
                        ifModifiedSince: lastModified)
                    actions += machine.fetched(fetched)
                } catch {
                    actions += machine.fetchFailed(error)
                }
            case .keep(let playlist):
                try? await disk.runIfActive {
                    do { try cache.keep(playlist) } catch { logLine("\(redactedURL(url)): cannot keep the playlist: \(error)") }
                }
            case .touchKeptCopy:
                try? await disk.runIfActive { directory.touchKeptPlaylist(url: url) }
            case .forgetKeptCopy:
                try? await disk.runIfActive { directory.forgetPlaylist(url: url) }
            case .log(let line):
                logLine(line)
            case .learn(let segments, let variants):
                cache.learned(playlist: url, segments: segments, variants: variants)
            case .learnManifest(let catalog):
                cache.learned(manifest: url, catalog: catalog)
            case .answer(let answer):
                return .success(answer)
            case .fail(let failure):
                return .failure(failure)
            }
        }
        return .failure(OriginFailure("no answer for the playlist"))
    }
}
