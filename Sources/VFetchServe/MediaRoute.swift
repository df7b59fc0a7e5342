import Foundation
import NIOCore
import NIOHTTP1
import VFetchCore
import VFetchEngine
import VFetchStreams

/// `/media` of a file: its cache entry's facts once the entry's download has probed the origin,
/// then the bytes asked for from the cache file as the download writes them (`CacheFileBody`). A
/// playlist its name did not tell (by its Content-Type, or by its first bytes when the type says
/// nothing) goes to `PlaylistRoute`.
struct MediaRoute {
    let cache: PlayerCache
    let playlists: PlaylistRoute

    func answer(_ target: RequestGate.MediaTarget, _ requester: RequestGate.Requester, _ exchange: Exchange) {
        let publicOnly = requester.publicOnly
        if let failure = cache.recentFailure(key: target.key, publicOnly: publicOnly) {
            return exchange.send(.originFailed(OriginFailure(failure.message, exitStatus: failure.exitStatus)))
        }
        open(cache.entry(key: target.key, url: target.url), target, requester, exchange)
        // What was fetched ahead elsewhere stops now; the segments after this one start once it is whole.
        if exchange.head.method == .GET { cache.readAhead(after: target.url, publicOnly: publicOnly, on: exchange.eventLoop) }
    }

    private func open(
        _ entry: CacheEntry, _ target: RequestGate.MediaTarget, _ requester: RequestGate.Requester, _ exchange: Exchange
    ) {
        let cache = cache
        entry.open(url: target.url, publicOnly: requester.publicOnly, on: exchange.eventLoop).assumeIsolated().whenComplete { result in
            switch result {
            case .failure(let error):
                let failure =
                    (error as? DownloadError).map { OriginFailure($0, publicOnly: requester.publicOnly) }
                    ?? OriginFailure("origin: \(error)")
                // Once per failure: for the next few seconds `recentFailure` answers without coming here.
                logLine("\(redactedURL(target.url)): \(failure.message)")
                cache.failed(
                    entry, key: target.key, publicOnly: requester.publicOnly, message: failure.message,
                    exitStatus: failure.exitStatus)
                guard exchange.isCurrent else { return }
                exchange.send(.originFailed(failure))
            case .success(let (remote, version)):
                guard exchange.isCurrent else { return }
                // A playlist under another name, told by its Content-Type.
                let path = URL(string: remote.url)?.path ?? ""
                if StreamFormat.detect(contentType: remote.contentType, path: path, firstBytes: []) != nil {
                    return playlists.answer(target.url, requester, exchange)
                }
                if Self.mayBePlaylist(remote) {
                    return sniff(entry, remote, version, target.url, requester, exchange)
                }
                send(entry, remote, version, exchange)
            }
        }
    }

    private func send(_ entry: CacheEntry, _ remote: RemoteInfo, _ version: Int, _ exchange: Exchange) {
        let (status, headers, range): (HTTPResponseStatus, HTTPHeaders, Range<Int64>)
        switch MediaAnswer(remote: remote, head: exchange.head) {
        case .reply(let reply): return exchange.send(reply)
        case .bytes(let answer, let answerHeaders, let answerRange): (status, headers, range) = (answer, answerHeaders, answerRange)
        }
        if entry.refuses(at: range.lowerBound) {
            let limit = humanSize(cache.maxBytes)
            return exchange.send(.failure(.insufficientStorage, "the cache is full (--max-cache-size \(limit)) with files being read"))
        }
        let (disk, path) = (cache.disk, SideFiles(output: entry.path).part)
        disk.runIfActive(eventLoop: exchange.eventLoop) { () throws -> Int32 in
            try FileSystem.open(path, .read, followingLinks: true)
        }.assumeIsolated().whenComplete { result in
            guard case .success(let file) = result else {
                guard exchange.isCurrent else { return }
                return exchange.send(.failure(.internalServerError, "cannot open the cache file"))
            }
            // The connection went, or moved on, while the file opened.
            guard exchange.isCurrent else { return disk.submit { _ in FileSystem.close(file) } }
            let body = CacheFileBody(exchange: exchange, entry: entry, version: version, file: file, range: range, disk: disk)
            body.start(status, headers: headers)
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
        _ entry: CacheEntry, _ remote: RemoteInfo, _ version: Int, _ url: String, _ requester: RequestGate.Requester,
        _ exchange: Exchange
    ) {
        let (loop, disk, path) = (exchange.eventLoop, cache.disk, SideFiles(output: entry.path).part)
        let wanted = Int(min(remote.length ?? 0, 1024))
        guard wanted > 0 else { return send(entry, remote, version, exchange) }
        entry.whenPresent(Int64(min(wanted, 64) - 1), on: loop).assumeIsolated().whenComplete { present in
            guard exchange.isCurrent else { return }
            let count = Int(min(Int64(wanted), entry.presentBytes(from: 0)))
            guard case .success = present, entry.version == version, count > 0 else {
                return send(entry, remote, version, exchange)
            }
            disk.runIfActive(eventLoop: loop) { Self.firstBytes(count, of: path) }.assumeIsolated().whenComplete { first in
                guard exchange.isCurrent else { return }
                if case .success(let first) = first, !first.isEmpty,
                    StreamFormat.detect(contentType: remote.contentType, path: "", firstBytes: first) != nil
                {
                    return playlists.answer(url, requester, exchange)
                }
                send(entry, remote, version, exchange)
            }
        }
    }

    /// Up to `count` bytes from the start of the file at `path`: none when it cannot be read.
    private static func firstBytes(_ count: Int, of path: String) -> [UInt8] {
        guard let file = try? FileSystem.open(path, .read, followingLinks: true) else { return [] }
        defer { FileSystem.close(file) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { (try? FileSystem.read(file, into: $0, at: 0)) ?? 0 }
        return Array(bytes.prefix(read))
    }
}
