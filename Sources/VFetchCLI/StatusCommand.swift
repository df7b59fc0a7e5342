import ArgumentParser
import Foundation
import VFetchCore
import VFetchEngine
import VFetchMedia

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what an unfinished download has saved, from its manifest.",
        discussion: "Exit codes: 0 shown, 1 no unfinished download there or its manifest is unreadable."
    )

    @Argument(help: "The output path of a `vfetch get` that has not finished (or its .part or .vfetch file).")
    var path: String

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() throws {
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
