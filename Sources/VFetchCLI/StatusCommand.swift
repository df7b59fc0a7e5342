import ArgumentParser
import Foundation
import VFetch
import VFetchCore
import VFetchEngine

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
