import ArgumentParser
import Foundation
import VFetchCore
import VFetchEngine
import VFetchMedia

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
        let partial: PartialDownload
        do {
            // As `info` does: the output path, its `NAME.part` or its `NAME.vfetch`.
            partial = try PartialDownload(outputPath: MediaInspector.unfinishedDownload(named: path) ?? path)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
        let fraction = partial.length > 0 ? Double(partial.bytesDone) / Double(partial.length) : 1
        if json {
            let object: [String: Any] = [
                "path": partial.outputPath, "url": redactedURL(partial.url), "final_url": redactedURL(partial.finalURL),
                "length": partial.length,
                "bytes_done": partial.bytesDone, "fraction": fraction, "percent": (fraction * 1000).rounded() / 10,
                "done_ranges": partial.presentRanges.map { [$0.lowerBound, $0.upperBound] }, "block_size": partial.blockSize,
                "etag": partial.etag ?? NSNull(), "last_modified": partial.lastModified ?? NSNull(),
                "content_type": partial.contentType ?? NSNull(), "map": partial.map(width: 64),
                "created": ISO8601DateFormatter().string(from: partial.created),
            ]
            printJSONLine(object)
            return
        }
        print("path:          \(partial.outputPath) (unfinished)")
        print("url:           \(redactedURL(partial.url))")
        if partial.finalURL != partial.url { print("final url:     \(redactedURL(partial.finalURL))") }
        print("size:          \(Format.size(partial.length))")
        print(String(format: "done:          %.1f%% (%@)", fraction * 100, Format.size(partial.bytesDone)))
        print("etag:          \(partial.etag ?? "none")")
        print("last-modified: \(partial.lastModified ?? "none")")
        print("started:       \(ISO8601DateFormatter().string(from: partial.created))")
        print("map:           [\(partial.map(width: 64))]")
    }
}

extension StatusCommand {
    /// A background download's ID, as `vfetch add` prints it (a number), when no file has that name.
    static func queueID(_ argument: String) -> String? {
        !argument.isEmpty && argument.allSatisfy(\.isASCII) && argument.allSatisfy(\.isNumber) ? argument : nil
    }

    /// Every background download, as `vfetch ls` shows them once.
    func showQueue() throws {
        let location = ["--cache-dir", target.location.cacheDirectory] + (target.server.map { ["--server", $0] } ?? [])
        let list = try ListCommand.parse(location)
        let offline = target.server == nil && target.location.runningServer() == nil
        let items = offline ? try list.savedQueue() : try target.downloads()
        if json {
            for item in items { print(String(decoding: try QueueAPI.encoder.encode(item), as: UTF8.self)) }
        } else {
            for line in list.table(items) { print(line) }
        }
    }

    /// One background download, from the server that runs it.
    func showQueued(_ id: String) throws {
        let item = try target.call("GET", "/api/downloads/\(id)", answer: QueueAPI.Item.self)
        if json { return print(String(decoding: try QueueAPI.encoder.encode(item), as: UTF8.self)) }
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
