import ArgumentParser
import Foundation
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchServe

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a remote video through the local cache: starts or reuses `vfetch serve`, then a player.",
        discussion: """
            SIGINT, SIGTERM and SIGHUP go to the player, and play ends with it. \
            Exit codes: the player's (128 + the signal when a signal ended it); before it starts, 1 when no server could be started, 3 bad URL, and for an \
            origin that fails the code `vfetch get` gives (4 cannot connect, 5 HTTP error, ...); 64 bad usage or \
            no player found. A server started here keeps running for the next play: `vfetch serve --stop` stops it.
            """
    )

    @Argument(help: "The http:// or https:// URL to play.")
    var url: String

    @Option(
        help: """
            The player and its arguments, split as a shell would ("mpv --no-video", "'/opt/My Player/play' -x"); \
            the local URL is added as the last argument (default: the first of mpv, ffplay, vlc).
            """)
    var player: String?

    @OptionGroup var location: CacheLocation

    @Option(help: "The port for a server started here (default \(ServeCommand.defaultPort)).")
    var port: Int?

    func validate() throws {
        if let player {
            do {
                guard !(try ShellWords.split(player)).isEmpty else { throw ValidationError("--player is empty") }
            } catch let error as ShellWords.Unterminated {
                throw ValidationError("--player has \(error)")
            }
        }
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() throws {
        guard isFetchableURL(url) else {
            writeStandardError("vfetch: bad URL: \(redactedURL(url))\n")
            throw ExitCode(ExitStatus.badURL.rawValue)
        }
        guard let command = playerCommand() else {
            writeStandardError("vfetch: no player found (install mpv, ffplay or vlc, or pass --player CMD)\n")
            throw ExitCode(64)
        }
        let server: String
        if let running = location.runningServerRecord() {
            if let port, port != running.port, port != 0 {
                writeStandardError("vfetch: using the vfetch serve already running on this cache at \(running.url), not --port \(port)\n")
            }
            server = running.url
        } else if let started = try Self.startServer(location: location, port: port ?? ServeCommand.defaultPort) {
            writeStandardError(
                "vfetch: started vfetch serve at \(started); it keeps running for the next play (stop it with `vfetch serve --stop`)\n")
            server = started
        } else {
            writeStandardError("vfetch: cannot start vfetch serve (see \(location.cacheDirectory)/serve.log)\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        let local = PlayerCacheServer.proxyURL(server: server, for: url)
        // The player gets the URL as it is; what is printed shows no password.
        let shown = PlayerCacheServer.proxyURL(server: server, for: redactedURL(url))
        FileHandle.standardOutput.write(Data((shown + "\n").utf8))
        try checkOrigin(local)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst()) + [local]
        Interrupts.startingPlayer()
        do { try process.run() } catch {
            Interrupts.noPlayer()
            throw error
        }
        Interrupts.forward(to: process.processIdentifier)
        process.waitUntilExit()
        // A player ended by a signal exits as a shell says it: 128 + the signal (143 for SIGTERM).
        throw ExitCode(process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus)
    }

    /// An origin that fails (404, refused, no such host) is said here, with the exit code `vfetch get`
    /// would give, rather than left to a player that may only wait. A slow origin is the player's to wait for.
    func checkOrigin(_ local: String) throws {
        guard let answer = try? LocalRequest.send("GET", local, token: nil, headers: ["Range: bytes=0-0"], timeout: 30),
            !(200..<300).contains(answer.status)
        else { return }
        let message = String(decoding: answer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        writeStandardError((message.hasPrefix("vfetch: ") ? message : "vfetch: HTTP \(answer.status) from vfetch serve") + "\n")
        throw ExitCode(answer.headers["vfetch-exit-status"].flatMap { Int32($0) } ?? ExitStatus.failure.rawValue)
    }

    /// `--player` split as a shell would, or the first known player on PATH; the program resolved on PATH.
    func playerCommand() -> [String]? {
        let words = player.flatMap { try? ShellWords.split($0) } ?? []
        let candidates = words.isEmpty ? ["mpv", "ffplay", "vlc"].map { [$0] } : [words]
        for candidate in candidates {
            if let program = findExecutable(candidate[0]) { return [program] + candidate.dropFirst() }
        }
        return nil
    }

    /// Starts `vfetch serve` in the background so it outlives this command; its URL once it answers.
    /// A cache directory that cannot be made private (another user's) is refused in one line, exit code 7.
    static func startServer(location: CacheLocation, port: Int) throws -> String? {
        let logFile: Int32
        do throws(DownloadError) {
            try CacheDirectory.makePrivate(location.cacheDirectory)
            // A new private file in place of any old one; a link there is replaced, not followed.
            do { logFile = try FileSystem.create(location.cacheDirectory + "/serve.log") } catch { throw .forOutput(error) }
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
        let log = FileHandle(fileDescriptor: logFile, closeOnDealloc: true)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        if !FileManager.default.isExecutableFile(atPath: server.executableURL!.path) {
            server.executableURL = findExecutable(CommandLine.arguments[0]).map { URL(fileURLWithPath: $0) }
        }
        server.arguments = ["serve", "--cache-dir", location.cacheDirectory, "--port", String(port)]
        server.standardOutput = log
        server.standardError = log
        server.standardInput = FileHandle.nullDevice
        guard (try? server.run()) != nil else { return nil }
        for _ in 0..<100 {
            if let url = location.runningServer() { return url }
            if !server.isRunning { return nil }
            usleep(50_000)
        }
        return nil
    }
}
