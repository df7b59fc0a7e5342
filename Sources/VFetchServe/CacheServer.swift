import NIOCore
import Synchronization
import NIOHTTP1
import NIOPosix

/// `vfetch serve`: the player cache over HTTP on one address.
package final class CacheServer: Sendable {
    private let cache: PlayerCache
    private let downloads: DownloadService
    private let channel: any Channel
    private let threadPool: NIOThreadPool
    /// The port bound (the one asked for, or the one the system chose for 0).
    package let port: Int
    package let host: String

    private init(
        cache: PlayerCache, downloads: DownloadService, channel: any Channel, threadPool: NIOThreadPool, host: String,
        port: Int
    ) {
        self.cache = cache
        self.downloads = downloads
        self.channel = channel
        self.threadPool = threadPool
        self.host = host
        self.port = port
    }

    /// Listens on host:port; API clients must send `token`.
    package static func start(
        cache: PlayerCache, downloads: DownloadService, token: String, host: String, port: Int
    ) async throws -> CacheServer {
        let threadPool = NIOThreadPool(numberOfThreads: 2)
        threadPool.start()
        let hosts = HostAllowList()
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            PlayerConnection(
                                cache: cache, threadPool: threadPool, downloads: downloads, token: token, hosts: hosts))
                    }
                }
                .bind(host: host, port: port)
                .get()
            let bound = channel.localAddress?.port ?? port
            hosts.allow(listeningOn: host, port: bound)
            return CacheServer(
                cache: cache, downloads: downloads, channel: channel, threadPool: threadPool, host: host, port: bound)
        } catch {
            try? await threadPool.shutdownGracefully()
            throw error
        }
    }

    /// "http://HOST:PORT", for players.
    package var baseURL: String {
        let authority = host.contains(":") ? "[\(host)]" : host
        return "http://\(authority):\(port)"
    }

    /// Stops listening and closes connections, then stops the downloads (each checkpoints).
    package func shutdown() async {
        try? await channel.close()
        await downloads.shutdown()
        await cache.shutdown()
        try? await threadPool.shutdownGracefully()
    }
}

/// The `Host` names a loopback server answers to: its own address and `localhost`, so a web page
/// that rebinds its own name to 127.0.0.1 cannot read the cache. Any host when listening elsewhere.
final class HostAllowList: Sendable {
    private let names = Mutex<Set<String>?>([])

    func allow(listeningOn host: String, port: Int) {
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(host)
        names.withLock { names in
            names = loopback ? ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] : nil
        }
    }

    func allows(_ host: String?) -> Bool {
        names.withLock { names in
            guard let names else { return true }
            return host.map { names.contains($0.lowercased()) } ?? false
        }
    }
}
