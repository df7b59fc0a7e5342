import ArgumentParser
import Foundation
import Logging
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchServe

/// Where a player cache lives, and how its server is found: `server.json` in the cache directory.
struct CacheLocation: ParsableArguments {
    @Option(name: .customLong("cache-dir"), help: "The cache directory (default: $XDG_CACHE_HOME/vfetch or ~/.cache/vfetch).")
    var cacheDirectory = CacheDirectory.defaultPath

    /// The URL of the server running on this cache; see `runningServerRecord`.
    func runningServer() -> String? { runningServerRecord()?.url }

    /// The server running on this cache (`RunningServer.find`), after a line on stderr when what its
    /// record names is not it.
    func runningServerRecord() -> RunningServer? {
        do { return try RunningServer.find(cacheDirectory: cacheDirectory) } catch {
            writeStandardError("vfetch: \(error)\n")
            return nil
        }
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
        var configuration = PlayerCacheServer.Configuration(directory: location.cacheDirectory)
        configuration.host = host
        configuration.port = port
        configuration.maxCacheSize = maxCacheSize.bytes
        configuration.prefetch = prefetch
        configuration.cacheOptions.connections = connections
        configuration.cacheOptions.headers = header
        configuration.cacheOptions.publicAddressesOnly = denyPrivate
        configuration.cacheOptions.maxRetryWait = maxRetryWait
        configuration.allowedOrigins = allowOrigin
        configuration.maxDownloads = maxDownloads
        configuration.maxDownloadSpeed = maxSpeed?.bytes
        configuration.onComplete = onComplete
        configuration.queueOptions.maxRetryWait = maxRetryWait
        configuration.queueOptions.headers = header  // each download adds its own
        configuration.clientTimeout = .milliseconds(Int64(clientTimeout * 1000))
        let server: PlayerCacheServer
        do {
            server = try await PlayerCacheServer.start(configuration)
        } catch DownloadError.busy(let path) {
            if let running = location.runningServerRecord() {
                writeStandardError(
                    "vfetch: vfetch serve already runs on \(location.cacheDirectory) at \(running.url) (pid \(running.pid)); "
                        + "use it, or stop it with `vfetch serve --stop`\n")
            } else {
                writeStandardError("vfetch: \(DownloadError.busy(path))\n")
            }
            throw ExitCode(ExitStatus.busy.rawValue)
        } catch let error as DownloadError {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        FileHandle.standardOutput.write(Data("vfetch serve: \(server.baseURL) (cache \(location.cacheDirectory))\n".utf8))
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            Interrupts.onInterrupt { stopped.resume() }
        }
        await server.stop()
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
