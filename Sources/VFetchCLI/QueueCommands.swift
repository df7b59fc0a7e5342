import ArgumentParser
import Foundation
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchServe
import VFetchStreams

/// How the queue commands reach `vfetch serve`: `--server`, or the server of the cache directory.
struct ServerLocation: ParsableArguments {
    @Option(help: "The server's URL (default: the one running on the cache directory).")
    var server: String?

    @OptionGroup var location: CacheLocation

    /// The server's URL and token, or a one-line error and exit code 4.
    /// A server `connect` found: its URL and the token it proved it holds.
    typealias Connection = (url: String, token: String?)

    func connect() throws -> Connection {
        guard let url = server ?? location.runningServer() else {
            writeStandardError("vfetch: no vfetch serve runs on \(location.cacheDirectory) (start one with `vfetch serve`)\n")
            throw ExitCode(ExitStatus.connectFailed.rawValue)
        }
        return (url, CacheDirectory.readToken(cacheDirectory: location.cacheDirectory))
    }

    /// Sends one API request; answers its body decoded, or prints the server's error and exits. A command
    /// that sends several passes the server it `connect`ed to once (each `connect` proves the server).
    @discardableResult
    func call<Answer: Decodable>(
        _ method: String, _ path: String, json: (some Encodable)? = nil as DownloadQueue.Request?, answer: Answer.Type,
        via server: Connection? = nil
    ) throws -> Answer {
        let (url, token) = try server ?? connect()
        let body = try json.map { String(decoding: try QueueAPI.encoder.encode($0), as: UTF8.self) }
        let answer: LocalRequest.Answer
        do {
            answer = try LocalRequest.send(method, url + path, token: token, json: body)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
        guard (200..<300).contains(answer.status) else {
            var message = (try? JSONDecoder().decode(QueueAPI.Failure.self, from: Data(answer.body)))?.error ?? "HTTP \(answer.status)"
            if answer.status == 401 {
                // The token comes from the cache directory: a --server of another directory's server refuses it.
                let had = token == nil ? "no token in" : "the token of"
                message =
                    "\(url) refused \(had) \(location.cacheDirectory) (HTTP 401): name that server's --cache-dir, "
                    + "or leave out --server to use the server of this cache directory"
            }
            writeStandardError("vfetch: \(message)\n")
            let status: ExitStatus = answer.status == 404 ? .failure : answer.status == 409 ? .busy : .httpError
            throw ExitCode(status.rawValue)
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(answer.body))
        } catch {
            writeStandardError("vfetch: \(url) answered \(method) \(path) with something that is not the API's JSON\n")
            throw ExitCode(ExitStatus.httpError.rawValue)
        }
    }

    func downloads(via server: Connection? = nil) throws -> [QueueAPI.Item] {
        try call("GET", "/api/downloads", answer: QueueAPI.Items.self, via: server).downloads
    }

    /// The downloads now: from the running server, or (`offline`) as its last server saved them, said so.
    func currentDownloads() throws -> (items: [QueueAPI.Item], offline: Bool) {
        if server == nil, location.runningServer() == nil { return (try savedQueue(), true) }
        return (try downloads(), false)
    }

    /// With no server: the queue as its last server saved it, said so; it goes on when one starts.
    private func savedQueue() throws -> [QueueAPI.Item] {
        let directory = location.cacheDirectory
        let saved: [QueueAPI.Item]?
        do { saved = try DownloadService.saved(inDirectory: directory) } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        guard let saved else {
            _ = try connect()
            return []
        }
        writeStandardError("vfetch: no vfetch serve runs on \(directory): the queue as saved (it goes on when `vfetch serve` starts)\n")
        return saved
    }
}

struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Queue background downloads in `vfetch serve` (started if none runs); prints their IDs.",
        discussion:
            "Exit codes: 0 queued, 1 refused by the server, 3 bad URL, 4 no server, 5 the server answered with an error (401: the token of another cache directory), 64 bad usage."
    )

    @Argument(help: "The http:// or https:// URLs to download.")
    var urls: [String]

    @Option(name: .shortAndLong, help: "Write to this path (one URL only).")
    var output: String?

    @Option(name: [.customShort("d"), .long], help: "Write into this directory (default: the current one).")
    var directory: String?

    @Option(name: [.customShort("c"), .long], help: "Parallel connections at most (1-256).")
    var connections: Int?

    @Option(name: [.customShort("H"), .long], help: "Extra request header 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(help: "Verify the finished file: sha256=HEX.")
    var checksum: String?

    @Option(help: "HLS/DASH: which variant, as `vfetch get --format` takes it (best, 720p, height<=720, lang=en, sub=en, …).")
    var format: String?

    @Option(help: "Another URL of the same file (repeatable; one URL only), as `vfetch get --mirror` takes it.")
    var mirror: [String] = []

    @OptionGroup var target: ServerLocation

    func validate() throws {
        try TrackSelection.validate(format)
        if output != nil, urls.count > 1 { throw ValidationError("-o takes one URL; use -d for several") }
        if !mirror.isEmpty, urls.count > 1 { throw ValidationError("--mirror is for one file; give one URL") }
        if output != nil, directory != nil { throw ValidationError("use either -o or -d, not both") }
        if let connections, !(1...256).contains(connections) {
            throw ValidationError("--connections must be between 1 and 256")
        }
        if let checksum, sha256Digest(fromChecksum: checksum) == nil {
            throw ValidationError("--checksum must be sha256= followed by 64 hex digits")
        }
        try RequestHeader.validate(header)
    }

    func run() throws {
        try requireFetchable(urls + mirror)
        if target.server == nil, target.location.runningServer() == nil {
            let directory = target.location.cacheDirectory
            guard let url = try PlayCommand.startServer(location: target.location, port: 0) else {
                writeStandardError("vfetch: cannot start vfetch serve (see \(directory)/serve.log)\n")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
            writeStandardError("vfetch: started vfetch serve on \(url) in the background to run the queue (log: \(directory)/serve.log)\n")
        }
        let server = try target.connect()
        for url in urls {
            let request = DownloadQueue.Request(
                url: url, output: absolute(output ?? directory ?? "."), outputIsDirectory: output == nil,
                connections: connections, headers: header, checksum: checksum, format: format, mirrors: mirror.isEmpty ? nil : mirror)
            print(try target.call("POST", "/api/downloads", json: request, answer: QueueAPI.Created.self, via: server).id)
        }
    }

    func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List the background downloads; live on a terminal until they are all done.",
        discussion: "`vfetch status ID` shows one of them; `vfetch status FILE` a `vfetch get` that stopped.")

    @Flag(help: "Print one JSON object per download.")
    var json = false

    @Flag(help: "Print the address of the queue's web page instead: it carries the token, open it in a browser.")
    var web = false

    @OptionGroup var target: ServerLocation

    func run() throws {
        if web {
            let (url, token) = try target.connect()
            // Downloads go where `vfetch add` would write them: the current directory.
            print(QueuePage.address(server: url, token: token ?? "", directory: FileManager.default.currentDirectoryPath))
            return
        }
        var (items, offline) = try target.currentDownloads()
        if json { return try Self.printJSON(items) }
        let live = isatty(1) == 1
        var drawn = 0
        while true {
            // On a terminal, draw over the previous table.
            if drawn > 0 { print("\u{1B}[\(drawn)A\u{1B}[J", terminator: "") }
            let lines = Self.table(items)
            for line in lines { print(line) }
            drawn = lines.count
            let active = items.contains(where: \.isActive)
            guard live, active, !offline else { return }
            Thread.sleep(forTimeInterval: 1)
            items = try target.downloads()
        }
    }

    /// One JSON object per download, one per line.
    static func printJSON(_ items: [QueueAPI.Item]) throws {
        for item in items { print(String(decoding: try QueueAPI.encoder.encode(item), as: UTF8.self)) }
    }

    static func table(_ items: [QueueAPI.Item]) -> [String] {
        let widths = [-4, -8, 6, 10, 12, 7]  // negative: left-aligned
        func row(_ cells: [String], _ last: String) -> String {
            zip(cells, widths).map { cell, width in
                let padding = String(repeating: " ", count: max(0, abs(width) - cell.count))
                return width < 0 ? cell + padding : padding + cell
            }.joined(separator: " ") + "  " + last
        }
        let header = row(["ID", "STATE", "DONE", "SIZE", "RATE", "ETA"], "FILE")
        return [header]
            + items.map { item in
                let (done, length) = (item.bytesDone, item.length)
                let percent =
                    done.flatMap { done in length.map { $0 > 0 ? String(format: "%.1f%%", Double(done) * 100 / Double($0)) : "100%" } }
                    ?? "-"
                let rate = item.rate.map { Format.size(Int64($0)) + "/s" } ?? "-"
                let eta = item.eta.map(Format.duration) ?? "-"
                var file = item.path ?? item.url
                if let error = item.error { file += "  (\(error))" }
                let cells = [item.id, item.state.rawValue, percent, Format.size(length), rate, eta]
                return row(cells, file)
            }
    }
}

/// `pause`, `resume`: one verb on some downloads.
struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause background downloads (they keep their data).")
    @Argument(help: "Download IDs.") var ids: [String]
    @OptionGroup var target: ServerLocation
    func run() throws {
        let server = try target.connect()
        for id in ids { try target.call("POST", "/api/downloads/\(id)/pause", answer: QueueAPI.Item.self, via: server) }
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume paused or failed background downloads.")
    @Argument(help: "Download IDs.") var ids: [String]
    @OptionGroup var target: ServerLocation
    func run() throws {
        let server = try target.connect()
        for id in ids { try target.call("POST", "/api/downloads/\(id)/resume", answer: QueueAPI.Item.self, via: server) }
    }
}

struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Cancel and forget background downloads.")
    @Argument(help: "Download IDs.") var ids: [String]
    @Flag(help: "Also delete the partial data (\(SideFiles(output: "NAME").part) and \(SideFiles(output: "NAME").manifest)).") var delete =
        false
    @OptionGroup var target: ServerLocation
    func run() throws {
        let server = try target.connect()
        for id in ids {
            try target.call("DELETE", "/api/downloads/\(id)" + (delete ? "?delete=true" : ""), answer: QueueAPI.Removed.self, via: server)
        }
    }
}

struct WaitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait", abstract: "Wait until background downloads end (every queued or running one, or those named).",
        discussion:
            "Exit codes: 0 all done, 1 some failed or are unknown, 4 no server. Without IDs a failure is told once: "
            + "the next wait does not fail for it again (`vfetch ls` still shows it).")
    @Argument(help: "Download IDs (default: every queued or running one, and failures not yet told).") var ids: [String] = []
    @OptionGroup var target: ServerLocation

    /// The failures a `wait` without IDs has told, kept in the cache directory (private, as the rest of it).
    private var toldPath: String { target.location.cacheDirectory + "/wait-told.json" }

    func run() throws {
        let told = Set((try? JSONDecoder().decode([String].self, from: Data(contentsOf: URL(fileURLWithPath: toldPath)))) ?? [])
        var active: Set<String> = []
        let server = try target.connect()
        while true {
            let items = try target.downloads(via: server)
            let missing = ids.filter { id in !items.contains { $0.id == id } }
            if !missing.isEmpty {
                writeStandardError("vfetch: no download with ID \(missing.joined(separator: ", "))\n")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
            active.formUnion(items.filter(\.isActive).map(\.id))
            // Without IDs: what runs, and what failed since a wait last told it (or while this one watched).
            let watched = items.filter {
                ids.isEmpty
                    ? $0.isActive || ($0.state == .failed && (!told.contains($0.id) || active.contains($0.id))) : ids.contains($0.id)
            }
            let states = watched.map(\.state)
            if !states.contains(.queued), !states.contains(.running), ids.isEmpty || !states.contains(.paused) {
                let failed = watched.filter { $0.state == .failed }
                for item in failed { writeStandardError("vfetch: \(item.id) failed: \(item.error ?? "")\n") }
                if ids.isEmpty {
                    let failures = items.filter { $0.state == .failed }.map(\.id)
                    if let data = try? JSONEncoder().encode(failures) { try? FileReplacement.write([UInt8](data), to: toldPath) }
                }
                if !failed.isEmpty { throw ExitCode(ExitStatus.failure.rawValue) }
                return
            }
            Thread.sleep(forTimeInterval: 0.3)
        }
    }
}
