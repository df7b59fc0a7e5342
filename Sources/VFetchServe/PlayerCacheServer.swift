import Foundation
import VFetchCore
import VFetchEngine

/// The player cache inside an app, as `vfetch serve` runs it: an HTTP server on loopback that a player reads
/// a URL through while the cache downloads it (the bytes the player waits for first), keeping what it fetched
/// for the next play. It also hosts a persistent queue of background downloads (``add(_:to:format:mirrors:)``).
///
/// ```swift
/// let cache = try await PlayerCacheServer.start(directory: cachePath)
/// player.open(cache.proxyURL(for: "https://example.com/movie.mp4"))
/// …
/// await cache.stop()
/// ```
///
/// One process holds a cache directory at a time: a second `start` on it (or a `vfetch serve` there) fails
/// with `DownloadError.busy`; a port that cannot be listened on, with ``CannotListen``.
public final class PlayerCacheServer: Sendable {
    /// What the cache holds for one URL.
    public struct Entry: Sendable, Equatable, Codable {
        /// The URL it was fetched from.
        public var url: String
        /// Bytes in all, when the origin said.
        public var length: Int64?
        /// Bytes saved so far.
        public var bytesCached: Int64
        /// When a player last read it, in seconds since 1970.
        public var lastAccess: Double
    }

    /// "http://127.0.0.1:PORT".
    public let baseURL: String
    private let server: CacheServer
    private let cache: PlayerCache
    /// The download queue it hosts (see `PlayerCacheServer+Queue.swift`).
    let queue: DownloadService

    private init(server: CacheServer, cache: PlayerCache, queue: DownloadService) {
        self.server = server
        self.cache = cache
        self.queue = queue
        baseURL = server.baseURL
    }

    /// Opens (or makes, mode 0700) the cache directory and listens on 127.0.0.1:`port` (0: a free port).
    /// - Parameters:
    ///   - path: the cache directory, as `vfetch serve --cache-dir` takes it.
    ///   - maxCacheSize: bytes kept on disk; the least recently read entries go first.
    ///   - port: the port on 127.0.0.1, or 0 for one the system picks (``baseURL`` tells which).
    ///   - options: how the cache's requests go out (headers, connections, a proxy …).
    public static func start(
        directory path: String, maxCacheSize: Int64 = 10 << 30, port: Int = 0, options: DownloadOptions = DownloadOptions()
    ) async throws -> PlayerCacheServer {
        let directory = try CacheDirectory(path: path)
        let token = try directory.accessToken()
        var settings = PlayerCache.Settings()
        settings.maxBytes = maxCacheSize
        settings.download = options
        let cache = PlayerCache(directory: directory, settings: settings)
        let downloads = DownloadService(directory: path, settings: DownloadService.Settings())
        do {
            let server = try await CacheServer.start(
                cache: cache, downloads: downloads, token: token, host: "127.0.0.1", port: port,
                crossOrigin: try CrossOriginPolicy(allowing: []))
            await downloads.start()
            return PlayerCacheServer(server: server, cache: cache, queue: downloads)
        } catch {
            await cache.shutdown()
            throw CannotListen(description: "cannot listen on 127.0.0.1:\(port): \(CacheServer.reason(listening: error))")
        }
    }

    /// `start` found the port taken (or not allowed).
    public struct CannotListen: Error, CustomStringConvertible {
        /// Which address, and why.
        public let description: String
    }

    /// The URL a player opens to read `url` through the cache: a file, or an HLS or DASH stream whose
    /// playlists and segments then go through the cache as well.
    public func proxyURL(for url: String) -> String { Self.proxyURL(server: baseURL, for: url) }

    /// `server`'s URL for `url`: everything but RFC 3986's unreserved characters percent-encoded, so the URL's
    /// own `?`, `&` and `+` stay its own.
    public static func proxyURL(server: String, for url: String) -> String {
        server + "/media?url=" + percentEncodedValue(url)
    }

    /// The files the cache holds, as saved on disk (at the latest checkpoint of each).
    public func entries() -> [Entry] {
        cache.directory.entries().filter { !$0.isSecret }.map {
            Entry(url: $0.url, length: $0.length, bytesCached: $0.bytesCached, lastAccess: $0.lastAccess)
        }
    }

    /// What the cache holds and serves now, as `GET /status` answers it: a stream as one entry, its files inside,
    /// with the players reading each file and the time ranges playable from its bytes.
    public func status() async -> CacheStatus { await cache.status() }

    /// Removes what the cache holds for `url`, as `vfetch cache rm URL` does. False when it holds nothing for
    /// it, or a player reads it or it is being fetched now (try again when that ends).
    public func removeEntry(url: String) async -> Bool {
        let cache = cache
        let found = try? await cache.disk.runIfActive { cache.remove(named: url) }
        return found?.removed.isEmpty == false
    }

    /// Changes the size the cache keeps within, ``start(directory:maxCacheSize:port:options:)``'s `maxCacheSize`,
    /// while it serves. It returns once the cache is within it: the least recently read entries past it are gone,
    /// all but those a player reads or that are being fetched (whose fetches then keep to what players ask for).
    public func setMaxCacheSize(_ bytes: Int64) async {
        let cache = cache
        try? await cache.disk.runIfActive { cache.setMaxBytes(max(0, bytes)) }
    }

    /// The size the cache keeps within.
    public var maxCacheSize: Int64 { cache.maxBytes }

    /// Stops serving: every download checkpoints, and the index is saved for the next start.
    public func stop() async {
        await server.shutdown()
        cache.directory.unlock()
    }
}
