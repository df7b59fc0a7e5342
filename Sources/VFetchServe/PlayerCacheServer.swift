import Foundation
import VFetchCache
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

    /// "http://HOST:PORT".
    public let baseURL: String
    private let server: CacheServer
    private let cache: PlayerCache
    /// The download queue it hosts (see `PlayerCacheServer+Queue.swift`).
    let queue: DownloadService
    /// Saves the index and checks the cache's size every few seconds, until `stop`.
    private let maintenance: Task<Void, Never>
    private let directoryPath: String

    private init(server: CacheServer, cache: PlayerCache, queue: DownloadService, directory: String) {
        self.server = server
        self.cache = cache
        self.queue = queue
        baseURL = server.baseURL
        directoryPath = directory
        maintenance = Task { await cache.maintain() }
    }

    /// Everything a player cache server is started with: what `vfetch serve` takes.
    public struct Configuration: Sendable {
        /// The cache directory, as `vfetch serve --cache-dir` takes it: opened, or made with mode 0700.
        public var directory: String
        /// Where to listen: anything but loopback exposes the cache to the network.
        public var host = "127.0.0.1"
        /// 0 for a port the system picks (``baseURL`` tells which).
        public var port = 0
        /// Bytes kept on disk; the least recently read entries go first.
        public var maxCacheSize: Int64 = 10 << 30
        /// What the cache fetches beyond what players read.
        public var prefetch = Prefetch.full
        /// How the cache's requests go out (headers, connections, private addresses refused …).
        public var cacheOptions = DownloadOptions()
        /// Web origins (`https://app.example`, or `*`) whose pages may read through the cache.
        public var allowedOrigins: [String] = []
        /// How many background downloads (``add(_:to:format:mirrors:)``) run at once.
        public var maxDownloads = 3
        /// The background downloads' speed limit, all together, in bytes per second.
        public var maxDownloadSpeed: Int64?
        /// A command run after each finished background download, as `CMD PATH URL` through `sh -c`.
        public var onComplete: String?
        /// How the background downloads' requests go out.
        public var queueOptions = DownloadOptions()
        /// A connection idle this long, or whose client reads nothing for this long, is closed.
        public var clientTimeout: Duration = .seconds(30)

        /// The defaults of `vfetch serve` on the cache directory at `directory`, but a port the system picks.
        public init(directory: String) { self.directory = directory }
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
        var configuration = Configuration(directory: path)
        configuration.maxCacheSize = maxCacheSize
        configuration.port = port
        configuration.cacheOptions = options
        return try await start(configuration)
    }

    /// Opens the cache directory and listens as `configuration` says; `server.json` in the directory then names
    /// this server, for ``RunningServer/find(cacheDirectory:)``. Throws `DownloadError` for a cache directory
    /// that cannot be used (`busy`: another server holds it), ``CannotListen`` for the address,
    /// ``InvalidConfiguration`` for settings it cannot serve by.
    public static func start(_ configuration: Configuration) async throws -> PlayerCacheServer {
        let crossOrigin: CrossOriginPolicy
        do { crossOrigin = try CrossOriginPolicy(allowing: configuration.allowedOrigins) } catch {
            throw InvalidConfiguration(description: error.description)
        }
        let directory = try CacheDirectory(path: configuration.directory)
        let token = try directory.accessToken()
        var settings = PlayerCache.Settings()
        settings.maxBytes = configuration.maxCacheSize
        settings.prefetch = configuration.prefetch
        settings.download = configuration.cacheOptions
        let cache = PlayerCache(directory: directory, settings: settings)
        var queueSettings = DownloadService.Settings()
        queueSettings.maxConcurrent = configuration.maxDownloads
        queueSettings.maxBytesPerSecond = configuration.maxDownloadSpeed
        queueSettings.onComplete = configuration.onComplete
        queueSettings.download = configuration.queueOptions
        let downloads = DownloadService(directory: configuration.directory, settings: queueSettings)
        let (host, port) = (configuration.host, configuration.port)
        do {
            let server = try await CacheServer.start(
                cache: cache, downloads: downloads, token: token, host: host, port: port, crossOrigin: crossOrigin,
                clientTimeout: configuration.clientTimeout)
            RunningServer.record(cacheDirectory: configuration.directory, url: server.baseURL, host: host, port: server.port)
            await downloads.start()
            return PlayerCacheServer(server: server, cache: cache, queue: downloads, directory: configuration.directory)
        } catch {
            await cache.shutdown()
            directory.unlock()
            throw CannotListen(description: "cannot listen on \(host):\(port): \(CacheServer.reason(listening: error))")
        }
    }

    /// `start(_:)` was given a configuration it cannot serve by, such as an allowed origin that is no origin.
    public struct InvalidConfiguration: Error, CustomStringConvertible {
        /// What is wrong with it.
        public let description: String
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
        maintenance.cancel()
        await maintenance.value  // a save in progress ends before the last one
        await server.shutdown()
        // Last: while server.json is there the server is not gone, and its index may still be being saved.
        RunningServer.forget(cacheDirectory: directoryPath)
        cache.directory.unlock()
    }
}
