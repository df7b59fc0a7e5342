import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real `vfetch serve` on 127.0.0.1 with a port the system picks; stopped by the test.
final class ServerProcess: Sendable {
    let base: String
    let cacheDirectory: String
    private let process: Process

    private init(process: Process, base: String, cacheDirectory: String) {
        self.process = process
        self.base = base
        self.cacheDirectory = cacheDirectory
    }

    /// A test that throws before `stop()` leaves no server behind.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Starts `vfetch serve --port 0 --cache-dir DIR ARGUMENTS` (with at most `fileLimit` open
    /// descriptors, as `ulimit -n` sets) and waits for its address line.
    static func start(cacheDirectory: String, _ arguments: [String] = [], fileLimit: Int? = nil) async throws -> ServerProcess {
        let process = Process()
        let command = [vfetchBinary, "serve", "--port", "0", "--cache-dir", cacheDirectory] + arguments
        if let fileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(fileLimit) && exec \"$0\" \"$@\""] + command
        } else {
            process.executableURL = URL(fileURLWithPath: vfetchBinary)
            process.arguments = Array(command.dropFirst())
        }
        let output = Pipe()
        process.standardOutput = output
        // Kept beside the cache directory, and shown when the server does not stop cleanly.
        let log = cacheDirectory + ".stderr"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let line = await firstLine(of: output)
        guard let start = line.range(of: "http://"), let end = line[start.lowerBound...].firstIndex(of: " ") else {
            process.terminate()
            process.waitUntilExit()
            throw ServerError.noAddress(line)
        }
        return ServerProcess(process: process, base: String(line[start.lowerBound..<end]), cacheDirectory: cacheDirectory)
    }

    /// The local URL a player reads `url` from.
    func media(_ url: String, key: String? = nil) -> String {
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "url", value: url)] + (key.map { [URLQueryItem(name: "key", value: $0)] } ?? [])
        return base + "/media?" + components.percentEncodedQuery!
    }

    /// SIGINT (a clean stop), then its exit status; what the server wrote on stderr is printed when
    /// it is not 0, so a failing test says why.
    func stop() async -> Int32 {
        kill(process.processIdentifier, SIGINT)
        let status = await exitStatus()
        if status != 0 || process.terminationReason == .uncaughtSignal {
            let log = (try? String(contentsOfFile: cacheDirectory + ".stderr", encoding: .utf8)) ?? ""
            print(
                "vfetch serve exited with \(status) (\(process.terminationReason == .uncaughtSignal ? "signal" : "status")); its stderr:\n\(log.suffix(4000))"
            )
        }
        return status
    }

    /// kill -9: no chance to save anything.
    func crash() async {
        kill(process.processIdentifier, SIGKILL)
        _ = await exitStatus()
    }

    private func exitStatus() async -> Int32 {
        let process = process
        return await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }.start()
        }
    }

    /// The token API clients send, from the cache directory.
    func token() throws -> String {
        try String(contentsOfFile: cacheDirectory + "/token", encoding: .utf8)
    }

    /// The download events (`/api/events`) as curl reads them, until `done` is set.
    func events(until done: Flag) async throws -> Finished {
        let token = try token()
        return try await run(
            "/usr/bin/curl", ["-sN", "-H", "Authorization: Bearer \(token)", base + "/api/events"], signal: SIGKILL,
            when: { done.isSet })
    }

    /// `GET /status`, parsed.
    func status() async throws -> [String: Any] {
        let answer = try await run("/usr/bin/curl", ["-sf", base + "/status"])
        return try JSONSerialization.jsonObject(with: Data(answer.standardOutput.utf8)) as? [String: Any] ?? [:]
    }

    /// The file entries of `/status`: those listed alone and those inside a stream's entry.
    func files() async throws -> [[String: Any]] {
        let entries = try await status()["entries"] as? [[String: Any]] ?? []
        return entries.flatMap { $0["kind"] as? String == "stream" ? $0["parts"] as? [[String: Any]] ?? [] : [$0] }
    }

    /// Polls `/status` (every 0.1 s, at most `seconds`) until `condition` holds for the file entry of `url`.
    func waitForEntry(_ url: String, seconds: Double = 30, _ condition: ([String: Any]) -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let entries = try await files()
            if let entry = entries.first(where: { $0["url"] as? String == url }), condition(entry) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    enum ServerError: Error { case noAddress(String) }

    private static func firstLine(of pipe: Pipe) async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var line = Data()
                while true {
                    let byte = pipe.fileHandleForReading.readData(ofLength: 1)
                    if byte.isEmpty || byte == Data([10]) { break }
                    line.append(byte)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }.start()
        }
    }
}

/// `ffmpeg -f framemd5` of a file or URL: one checksum per decoded frame, the players' own view.
func frameChecksums(_ input: String, seek: Double? = nil, frames: Int? = nil) async throws -> Finished {
    var arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin"]
    if let seek { arguments += ["-ss", String(seek)] }
    arguments += ["-i", input]
    if let frames { arguments += ["-frames:v", String(frames)] }
    arguments += ["-f", "framemd5", "-"]
    return try await run("/usr/bin/env", arguments)
}
