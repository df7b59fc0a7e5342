import Dispatch
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import VFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch serve`: the player cache over HTTP on one address.
package final class CacheServer: Sendable {
    private let cache: PlayerCache
    private let downloads: DownloadService
    private let channel: any Channel
    /// The port bound (the one asked for, or the one the system chose for 0).
    package let port: Int
    package let host: String

    private init(cache: PlayerCache, downloads: DownloadService, channel: any Channel, host: String, port: Int) {
        self.cache = cache
        self.downloads = downloads
        self.channel = channel
        self.host = host
        self.port = port
    }

    /// A connection that asks nothing for this long, or whose answer makes no progress for this
    /// long (its client reads nothing), is closed.
    package static let clientTimeout: Duration = .seconds(30)

    /// Listens on host:port; API clients must send `token`. Connections run on `group`'s event
    /// loops; their disk work on the cache's `disk` threads.
    package static func start(
        cache: PlayerCache, downloads: DownloadService, token: String, host: String, port: Int,
        crossOrigin: CrossOriginPolicy, clientTimeout: Duration = clientTimeout,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> CacheServer {
        let clientTimeout = TimeAmount(clientTimeout)
        // Nothing is admitted until the port is known (0 asks the system for one).
        let gate = ServerGate(RequestGate(hosts: .none, crossOrigin: crossOrigin, token: token))
        let router = Router(cache: cache, downloads: downloads, token: token)
        let connections = OpenConnections()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SendProgressTimeout(timeout: clientTimeout))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        PlayerConnection(gate: gate, router: router, connections: connections, idleTimeout: clientTimeout))
                }
            }
            .bind(host: host, port: port)
            .get()
        let bound = channel.localAddress?.port ?? port
        gate.listening(on: host, port: bound)
        return CacheServer(cache: cache, downloads: downloads, channel: channel, host: host, port: bound)
    }

    /// Why `start` could not listen, as a person reads it: "address already in use" rather than
    /// SwiftNIO's `bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)`.
    package static func reason(listening error: any Error) -> String {
        guard let error = error as? IOError else { return "\(error)" }
        let text = String(cString: strerror(error.errnoCode))
        return text.prefix(1).lowercased() + text.dropFirst()
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
    }
}

/// The server's `RequestGate`, which every connection asks: it admits nothing until the server knows
/// the port it listens on.
final class ServerGate: Sendable {
    private let gate: Mutex<RequestGate>

    init(_ gate: RequestGate) { self.gate = Mutex(gate) }

    var current: RequestGate { gate.withLock { $0 } }

    func listening(on host: String, port: Int) { gate.withLock { $0.hosts = .listening(on: host, port: port) } }
}

/// Every open player connection, so that too many close the idle ones first (see `ConnectionTable`).
final class OpenConnections: Sendable {
    private let table: Mutex<(connections: ConnectionTable<ObjectIdentifier>, channels: [ObjectIdentifier: any Channel])>

    /// As many connections as half the descriptors this process may open: the other half is for
    /// cache files and the origin's connections.
    init() {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        // Ask for what the system allows (as Go and nginx do): the soft limit is often far below it.
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = min(limit.rlim_max, 1 << 16)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let capacity = Int(min(limit.rlim_cur, 1 << 16)) / 2
        table = Mutex((ConnectionTable(capacity: capacity), [:]))
    }

    func accepted(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let closing = table.withLock { table in
            table.channels[id] = channel
            return table.connections.accepted(id, now: Self.now).compactMap { table.channels.removeValue(forKey: $0) }
        }
        for channel in closing { channel.close(promise: nil) }
    }

    func busy(_ channel: any Channel) { table.withLock { $0.connections.busy(ObjectIdentifier(channel)) } }

    func idle(_ channel: any Channel) { table.withLock { $0.connections.idle(ObjectIdentifier(channel), now: Self.now) } }

    func closed(_ channel: any Channel) {
        table.withLock { table in
            table.connections.closed(ObjectIdentifier(channel))
            table.channels[ObjectIdentifier(channel)] = nil
        }
    }

    private static var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}
