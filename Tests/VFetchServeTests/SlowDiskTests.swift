import Foundation
import NIOPosix
import Synchronization
import Testing
import VFetchCache
import VFetchCore
import VFetchEngine

@testable import VFetchServe

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SlowDiskTests {
    /// The server on one event loop with its one disk thread stuck, as on a disk that stalls: a request that needs no disk is answered while it is stuck, and one that reads the
    /// cache waits for the thread, not the event loop.
    // The order is what is checked, not the time: beside the whole parallel suite on 2 cores this test
    // took 94 s once and passed every check (alone: 0.02 s).
    @Test(.timeLimit(.minutes(3)))
    func aSlowDiskDoesNotStallTheEventLoop() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let path = FileManager.default.temporaryDirectory.path + "/vfetch-serve-tests-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = PlayerCache.Settings()
        settings.diskThreads = 1
        let cache = PlayerCache(directory: try CacheDirectory(path: path), settings: settings)
        let server = try await CacheServer.start(
            cache: cache, downloads: DownloadService(directory: path, settings: .init()), token: "token",
            host: "127.0.0.1", port: 0, crossOrigin: try CrossOriginPolicy(allowing: []), group: loops)

        let order = Order()
        let (stuck, stuckNow) = AsyncStream.makeStream(of: Void.self)
        let disk = Task {
            try await cache.disk.runIfActive {
                stuckNow.finish()
                // Stuck until the page is answered (at most 120 s, within the test's limit): on a loaded machine
                // a fixed second may pass before the client even connects (beside the whole suite, in CI, the
                // page once took over 20 s), and a page that needs this thread never comes first.
                for _ in 0..<12_000 where !order.list.contains("/") { usleep(10_000) }
                order.record("disk")
            }
        }
        for await _ in stuck {}

        // /status waits for the stuck thread, which waits for the page: its client waits as long as both.
        async let status = get("/status", port: server.port, order: order, seconds: 150)
        let page = await get("/", port: server.port, order: order)
        #expect(page == 200)
        #expect(await status == 200)
        try await disk.value
        #expect(order.list == ["/", "disk", "/status"])

        await server.shutdown()
        try await loops.shutdownGracefully()
    }

    /// GET `path` with a plain socket on a thread of its own (the cooperative pool is not blocked);
    /// returns the status code, 0 when there is none within `seconds` (a loaded machine is slow). Records the path in `order` when answered.
    func get(_ path: String, port: Int, order: Order, seconds: Int = 30) async -> Int {
        await onOwnThread(named: "test client") {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return 0 }
            defer { close(fd) }
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { return 0 }
            let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
            guard send(fd, request, request.count, 0) == request.count else { return 0 }
            var response: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                response += buffer[..<count]
            }
            // "HTTP/1.1 200 OK"
            let code = Int(String(decoding: response.dropFirst(9).prefix(3), as: UTF8.self)) ?? 0
            if code != 0 { order.record(path) }
            return code
        }
    }

    /// What happened, in order, from any thread.
    final class Order: Sendable {
        private let events = Mutex<[String]>([])
        func record(_ event: String) { events.withLock { $0.append(event) } }
        var list: [String] { events.withLock { $0 } }
    }
}
