import ArgumentParser
import Foundation
import Logging
import VFetchCore
import VFetchEngine
import VFetchServe

/// Where a player cache lives, and how its server is found: `server.json` in the cache directory.
struct CacheLocation: ParsableArguments {
    @Option(name: .customLong("cache-dir"), help: "The cache directory (default: $XDG_CACHE_HOME/vfetch or ~/.cache/vfetch).")
    var cacheDirectory = CacheDirectory.defaultPath

    var serverFile: String { cacheDirectory + "/server.json" }

    /// The URL of the server running on this cache; see `runningServerRecord`.
    func runningServer() -> String? { runningServerRecord()?.url }

    struct ServerRecord {
        var url: String
        var port: Int
        var pid: pid_t
    }

    /// The server running on this cache, if its record names one that proves it is this cache's
    /// server (it answers a challenge only the holder of the token can); the token is sent to
    /// nothing else. After a kill -9 the record stays, and another program may listen there.
    func runningServerRecord() -> ServerRecord? {
        guard let data = FileManager.default.contents(atPath: serverFile),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let url = object["url"] as? String, let port = object["port"] as? Int, let host = object["host"] as? String,
            let pid = object["pid"] as? Int, kill(pid_t(pid), 0) == 0 || errno == EPERM,
            let token = CacheDirectory.readToken(cacheDirectory: cacheDirectory), canConnect(host: host, port: port)
        else { return nil }
        let nonce = ServerProof.nonce()
        let answer = try? LocalRequest.send("GET", url + "/api/proof?nonce=" + nonce, token: nil, timeout: 5)
        let proof = answer.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }?["proof"]
        guard proof as? String == ServerProof.answer(token: token, nonce: nonce, port: port) else {
            writeStandardError("vfetch: \(host):\(port), named in \(serverFile), is not this cache's server; its token was not sent\n")
            return nil
        }
        return ServerRecord(url: url, port: port, pid: pid_t(pid))
    }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve remote files to players through a local cache, downloading what they need first.",
        discussion: """
            Players read http://HOST:PORT/media?url=<percent-encoded URL> (add key=K for URLs whose query \
            changes, such as signed links); GET /status shows the cache. Exit codes: 0 stopped, 1 cannot \
            listen, 4 no server to --stop, 7 cache directory not writable, 11 another server uses the cache directory, 64 bad usage.
            """
    )

    static let defaultPort = 7311

    @Flag(help: "Stop the vfetch serve running on the cache directory (as Ctrl-C would), then exit.")
    var stop = false

    @Option(help: "Address to listen on; anything but loopback exposes the cache to the network.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port = Self.defaultPort

    @OptionGroup var location: CacheLocation

    @Option(name: .customLong("max-cache-size"), help: "Evict least recently used entries beyond this size (K, M, G, T).")
    var maxCacheSize = ByteCount(argument: "10G")!

    @Option(
        help: "What to fetch beyond what players read: full (the whole file), window (64 MiB ahead of each player), none (1 MiB ahead).")
    var prefetch = ReaderDemand.Prefetch.full

    @Option(name: [.customShort("c"), .long], help: "Parallel connections per file at most (1-256).")
    var connections = DownloadOptions().connections

    @Option(
        name: [.customShort("H"), .long],
        help: "Extra request header 'Name: value' for the origin, for players' files and background downloads alike (repeatable).")
    var header: [String] = []

    @Option(
        name: .customLong("allow-origin"),
        help: "Let web pages of this origin (scheme://host[:port]) read the cache's media with CORS (repeatable; '*': any page).")
    var allowOrigin: [String] = []

    @Flag(
        name: .customLong("deny-private"),
        help: "Never fetch from loopback, private or link-local addresses (web pages' requests never do).")
    var denyPrivate = false

    @Option(name: .customLong("max-downloads"), help: "Background downloads (`vfetch add`) running at once at most.")
    var maxDownloads = 3

    @Option(name: .customLong("max-speed"), help: "Overall speed limit of the background downloads in bytes per second (K, M, G).")
    var maxSpeed: ByteCount?

    @Option(
        name: .customLong("max-retry-wait"),
        help: "Wait at most this many seconds for an origin's Retry-After (0-86400); a longer one fails the download.")
    var maxRetryWait = DownloadOptions().maxRetryWait

    @Option(name: .customLong("on-complete"), help: "Run `CMD PATH URL` (through sh -c) after each finished background download.")
    var onComplete: String?

    @Option(help: "Print what serve says from this level up: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    // For tests: 30 s is long to wait for.
    @Option(
        name: .customLong("client-timeout"),
        help: ArgumentHelp("Close a connection idle, or whose client reads nothing, for this many seconds.", visibility: .hidden))
    var clientTimeout = Double(CacheServer.clientTimeout.components.seconds)

    func validate() throws {
        if !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
        if !(1...256).contains(connections) { throw ValidationError("--connections must be between 1 and 256") }
        do { _ = try CrossOriginPolicy(allowing: allowOrigin) } catch { throw ValidationError(error.description) }
        if !DownloadQueue.concurrencyRange.contains(maxDownloads) {
            throw ValidationError("--max-downloads must be between 1 and \(DownloadQueue.concurrencyRange.upperBound)")
        }
        if let maxSpeed, !DownloadQueue.speedRange.contains(maxSpeed.bytes) {
            throw ValidationError("--max-speed must be between 1 and 1T (bytes per second)")
        }
        try RequestHeader.validate(header)
        try validateMaxRetryWait(maxRetryWait)
        if Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if !(0.1...86400).contains(clientTimeout) { throw ValidationError("--client-timeout must be between 0.1 and 86400 seconds") }
    }

    func run() async throws {
        if stop { return try stopRunningServer() }
        StandardErrorLog.level.withLock { $0 = Logger.Level(rawValue: logLevel) ?? .info }
        let directory: CacheDirectory
        let token: String
        do {
            directory = try CacheDirectory(path: location.cacheDirectory)
            token = try directory.accessToken()
        } catch {
            if case .busy = error, let running = location.runningServerRecord() {
                writeStandardError(
                    "vfetch: vfetch serve already runs on \(location.cacheDirectory) at \(running.url) (pid \(running.pid)); "
                        + "use it, or stop it with `vfetch serve --stop`\n")
            } else {
                writeStandardError("vfetch: \(error)\n")
            }
            throw ExitCode(ExitStatus(error).rawValue)
        }
        var settings = PlayerCache.Settings()
        settings.maxBytes = maxCacheSize.bytes
        settings.prefetch = prefetch
        settings.download.connections = connections
        settings.download.headers = header
        settings.download.publicAddressesOnly = denyPrivate
        settings.download.maxRetryWait = maxRetryWait
        let cache = PlayerCache(directory: directory, settings: settings)
        var queueSettings = DownloadService.Settings()
        queueSettings.maxConcurrent = maxDownloads
        queueSettings.maxBytesPerSecond = maxSpeed?.bytes
        queueSettings.onComplete = onComplete
        queueSettings.download.maxRetryWait = maxRetryWait
        queueSettings.download.headers = header  // each download adds its own
        let downloads = DownloadService(directory: location.cacheDirectory, settings: queueSettings)
        let server: CacheServer
        do {
            server = try await CacheServer.start(
                cache: cache, downloads: downloads, token: token, host: host, port: port,
                crossOrigin: try CrossOriginPolicy(allowing: allowOrigin), clientTimeout: .milliseconds(Int64(clientTimeout * 1000)))
        } catch {
            writeStandardError("vfetch: cannot listen on \(host):\(port): \(CacheServer.reason(listening: error))\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        let record: [String: Any] = ["url": server.baseURL, "host": host, "port": server.port, "pid": Int(getpid())]
        if let data = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]) {
            try? FileReplacement.write([UInt8](data), to: location.serverFile)  // private, as the cache's other files
        }
        FileHandle.standardOutput.write(Data("vfetch serve: \(server.baseURL) (cache \(location.cacheDirectory))\n".utf8))
        await downloads.start()
        let maintenance = Task { await cache.maintain() }
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            Interrupts.onInterrupt { stopped.resume() }
        }
        maintenance.cancel()
        await maintenance.value  // a save in progress ends before the last one
        await server.shutdown()
        // Last: while server.json is there the server is not gone, and its index may still be being saved.
        try? FileManager.default.removeItem(atPath: location.serverFile)
    }
}

extension ServeCommand {
    /// `--stop`: SIGTERM to the cache directory's server (it checkpoints its downloads), then waits
    /// up to 30 s for it to go.
    func stopRunningServer() throws {
        guard let running = location.runningServerRecord() else {
            writeStandardError("vfetch: no vfetch serve runs on \(location.cacheDirectory)\n")
            throw ExitCode(ExitStatus.connectFailed.rawValue)
        }
        kill(running.pid, SIGTERM)
        for _ in 0..<300 where kill(running.pid, 0) == 0 { usleep(100_000) }
        guard kill(running.pid, 0) != 0 else {
            writeStandardError("vfetch: vfetch serve (pid \(running.pid)) has not stopped after 30 s\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        FileHandle.standardOutput.write(Data("vfetch serve: stopped the server at \(running.url) (pid \(running.pid))\n".utf8))
    }
}

extension ReaderDemand.Prefetch: ExpressibleByArgument {}

/// Whether something accepts TCP connections at host:port (a quick local check).
func canConnect(host: String, port: Int) -> Bool {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return false }
    defer { freeaddrinfo(list) }
    let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0
}
