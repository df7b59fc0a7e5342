import ArgumentParser
import Foundation
import VFetch
import VFetchCore
import VFetchEngine

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what a download has done: an unfinished `vfetch get` by its file, a background one by its ID.",
        discussion: """
            With no argument: every background download, as `vfetch ls` lists them. Exit codes: 0 shown, 1 no \
            unfinished download there (nor a background download of that ID) or its manifest is unreadable, 4 an \
            ID and no server.
            """
    )

    @Argument(
        help: "The output path of a `vfetch get` that has not finished (or its .part or .vfetch file), or a background download's ID.")
    var path: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    @OptionGroup var target: ServerLocation

    func run() throws {
        guard let path else { return try showQueue() }
        if let id = Self.queueID(path), !FileManager.default.fileExists(atPath: path) { return try showQueued(id) }
        var saved: UnfinishedDownload
        do {
            saved = try UnfinishedDownload(named: path)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
        let redirected = saved.finalURL != saved.url
        (saved.url, saved.finalURL) = (redactedURL(saved.url), redactedURL(saved.finalURL))
        if json { return printJSONLine(saved) }
        print("path:          \(saved.outputPath) (unfinished)")
        print("url:           \(saved.url)")
        if redirected { print("final url:     \(saved.finalURL)") }
        print("size:          \(Format.size(saved.length))")
        print(String(format: "done:          %.1f%% (%@)", saved.fraction * 100, Format.size(saved.bytesDone)))
        print("etag:          \(saved.etag ?? "none")")
        print("last-modified: \(saved.lastModified ?? "none")")
        print("started:       \(ISO8601DateFormatter().string(from: saved.created))")
        print("map:           [\(saved.map)]")
    }
}

extension StatusCommand {
    /// A background download's ID, as `vfetch add` prints it (a number), when no file has that name.
    static func queueID(_ argument: String) -> String? {
        !argument.isEmpty && argument.allSatisfy(\.isASCII) && argument.allSatisfy(\.isNumber) ? argument : nil
    }

    /// Every background download, as `vfetch ls` shows them once.
    func showQueue() throws {
        let items = try target.currentDownloads().items
        if json { return try ListCommand.printJSON(items) }
        for line in ListCommand.table(items) { print(line) }
    }

    /// One background download, from the server that runs it.
    func showQueued(_ id: String) throws {
        let item = try target.call("GET", "/api/downloads/\(id)", answer: QueueAPI.Item.self)
        if json { return try ListCommand.printJSON([item]) }
        print("id:            \(item.id) (background download)")
        print("state:         \(item.state.rawValue)\(item.error.map { " (\($0))" } ?? "")")
        print("url:           \(item.url)")
        print("path:          \(item.path ?? item.output)")
        if let done = item.bytesDone, let length = item.length, length > 0 {
            let percent = Double(done) * 100 / Double(length)
            print(String(format: "done:          %.1f%% (%@ of %@)", percent, Format.size(done), Format.size(length)))
        }
        if let rate = item.rate { print("rate:          \(Format.size(Int64(rate)))/s") }
        if let eta = item.eta { print("eta:           \(Format.duration(eta))") }
    }
}
