import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real HTTP/1.1 origin that serves in-memory files, with switches that reproduce the
/// failures real servers and CDNs show.
///
/// Start one per test with `start()`, publish files, point a client at `url(_:)`, inspect
/// `requests`, and `shutdown()` at the end. Connections run on NIO's shared singleton event
/// loops, so starting and stopping many origins creates no threads.
public final class TestOrigin: Sendable {
    private let core: OriginCore
    private let serverChannel: any Channel
    private let host: String

    /// The TCP port the origin listens on.
    public let port: Int
    /// After `shutdown()`: a socket bound to `port` that does not listen, so connections to the gone origin
    /// are refused, rather than answered by another test's origin that the system gave the same port.
    private let heldPort = Mutex<Int32>(-1)

    private init(core: OriginCore, serverChannel: any Channel, host: String, port: Int) {
        self.core = core
        self.serverChannel = serverChannel
        self.host = host
        self.port = port
    }

    /// Starts listening on host:port (port 0 = ephemeral) with the origin-wide switches of `configuration`.
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, configuration: OriginConfiguration = OriginConfiguration()
    ) async throws -> TestOrigin {
        let core = OriginCore()
        core.state.withLock { $0.configuration = configuration }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectionTracker(core: core))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = core.connectionNumber(of: channel)
                    let client = channel.remoteAddress?.ipAddress ?? ""
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        OriginHandler(core: core, connection: connection, client: client))
                }
            }
            .bind(host: host, port: port)
            .get()
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close()
            throw ChannelError.unknownLocalAddress
        }
        return TestOrigin(core: core, serverChannel: channel, host: host, port: boundPort)
    }

    /// "http://127.0.0.1:PORT" + path (path starts with "/").
    public func url(_ path: String) -> String {
        let authority = host.contains(":") ? "[\(host)]" : host
        return "http://\(authority):\(port)\(path)"
    }

    /// Publishes (or replaces) a file. Replacing with new bytes gives a new ETag and a later
    /// Last-Modified; the fault counters (failFirst, dropTimes, changeAfterBytes) start over.
    public func publish(_ path: String, _ bytes: [UInt8], behavior: OriginBehavior = OriginBehavior()) {
        let next = Self.changedContent(of: bytes, behavior: behavior)
        let now = OriginCore.now()
        core.state.withLock {
            $0.store(path, bytes, behavior: behavior, nextBytes: next, now: now, keepCounters: false)
        }
    }

    /// Replaces the bytes of a published file keeping its behavior and fault counters; new
    /// validators (ETag, Last-Modified one second later at least). An unpublished path is
    /// published with the default behavior.
    public func replace(_ path: String, with bytes: [UInt8]) {
        let behavior = core.state.withLock { $0.files[path]?.behavior } ?? OriginBehavior()
        let next = Self.changedContent(of: bytes, behavior: behavior)
        let now = OriginCore.now()
        core.state.withLock { state in
            let hasPendingChange = state.files[path]?.nextBytes != nil
            state.store(path, bytes, behavior: behavior, nextBytes: next, now: now, keepCounters: true)
            // A change still to come switches to content derived from the new bytes.
            state.files[path]?.nextBytes = hasPendingChange ? next : nil
        }
    }

    /// The origin-wide switches. Setting them takes effect from the next request on; a new `rateChange`
    /// also reaches responses in flight, a new link cap only responses that start after it.
    public var configuration: OriginConfiguration {
        get { core.state.withLock { $0.configuration } }
        set { core.state.withLock { $0.configuration = newValue } }
    }

    /// Changes how a published file is served, keeping its bytes, validators and counters.
    public func setBehavior(_ path: String, _ behavior: OriginBehavior) {
        core.state.withLock { $0.files[path]?.behavior = behavior }
    }

    /// The content `changeAfterBytes` will switch to, prepared here rather than under the lock.
    private static func changedContent(of bytes: [UInt8], behavior: OriginBehavior) -> [UInt8]? {
        guard behavior.changeAfterBytes != nil else { return nil }
        return behavior.changedBytes ?? inverted(bytes)
    }

    /// Every request seen so far, in arrival order.
    public var requests: [OriginRequest] {
        core.state.withLock { $0.requests }
    }

    /// The paths of the responses whose whole body was handed to their connections, in that order.
    public var completedResponses: [String] {
        core.state.withLock { $0.completedResponses }
    }

    /// Body bytes handed to connections for `path` so far, over all requests.
    public func bytesServed(_ path: String) -> Int {
        core.state.withLock { $0.files[path]?.servedBytes ?? 0 }
    }

    /// Stops listening and closes every open connection; the port stays refused while this object lives.
    /// Calling it again does nothing.
    public func shutdown() async throws {
        // Closing the listener first means no connection can slip in after the sweep below.
        serverChannel.close(promise: nil)
        try await serverChannel.closeFuture.get()
        holdPort()
        for channel in core.openChannels() {
            channel.close(promise: nil)
            try await channel.closeFuture.get()
        }
    }

    /// Binds `port` again without listening, until this origin is released (IPv4 origins, as tests start them).
    private func holdPort() {
        heldPort.withLock { held in
            guard held < 0, !host.contains(":") else { return }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                close(fd)
                return
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 { held = fd } else { close(fd) }
        }
    }

    deinit { heldPort.withLock { if $0 >= 0 { close($0) } } }
}
