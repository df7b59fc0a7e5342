import Foundation
import VFetchCore
import VFetchEngine

/// Shows a download's events to the user, never a URL's password (`redactedURL`).
protocol ProgressReporter: Sendable {
    func report(_ event: DownloadEvent)
    /// Says why the download stopped, and after it `detail` when there is more to say (what an
    /// interrupted run saved).
    func failed(_ error: DownloadError, detail: String?)
}

extension ProgressReporter {
    func failed(_ error: DownloadError) { failed(error, detail: nil) }

    func failed(_ error: DownloadError, detail: String?) { writeStandardError("vfetch: \(error.said(detail))\n") }
}

extension DownloadError {
    /// The error's line, with `detail` after it.
    func said(_ detail: String?) -> String { description + (detail.map { ": " + $0 } ?? "") }
}

func writeStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

/// `--quiet`: errors only.
struct SilentReporter: ProgressReporter {
    func report(_ event: DownloadEvent) {}
}

/// A terminal: one line redrawn at most ten times a second, with a map of the file's done parts, never as
/// wide as the terminal (it would wrap, and every redraw scroll a new line).
final class TerminalReporter: ProgressReporter, @unchecked Sendable {
    // Only the single task that drains `Download.events` calls `report`; `failed` runs after it ends.
    private var lastDraw = -1.0
    /// Stream progress carries no clock of its own; this one is the wall clock.
    private var lastStreamDraw = 0.0
    private var drew = false
    func report(_ event: DownloadEvent) {
        switch event {
        case .started(let info):
            writeStandardError("vfetch: \(redactedURL(info.finalURL)) → \(info.outputPath) (\(Format.size(info.length)))\n")
        case .notice(let message):
            clearLine()
            writeStandardError("vfetch: \(redactingCredentials(in: message))\n")
        case .progress(let progress):
            guard progress.seconds - lastDraw >= 0.1 else { return }
            lastDraw = progress.seconds
            drew = true
            let line = Format.progressLine(progress, mapWidth: 24, columns: Self.columns() - 1)
            writeStandardError("\r\u{1B}[K" + line)
        case .finished(let summary):
            clearLine()
            writeStandardError(Format.summaryLines(summary).map { "vfetch: \($0)\n" }.joined())
        case .streamProgress(let progress):
            let now = Date().timeIntervalSinceReferenceDate
            guard now - lastStreamDraw >= 0.1 || progress.segmentsDone == progress.segmentsTotal else { return }
            lastStreamDraw = now
            drew = true
            writeStandardError("\r\u{1B}[K" + Format.streamLine(progress, columns: Self.columns() - 1))
        }
    }

    func failed(_ error: DownloadError, detail: String?) {
        clearLine()
        writeStandardError("vfetch: \(error.said(detail))\n")
    }

    private func clearLine() {
        if drew { writeStandardError("\r\u{1B}[K") }
        drew = false
    }

    /// The terminal's width: the kernel's (`TIOCGWINSZ`), else `$COLUMNS`, else 80. Asked at every
    /// redraw, so a window made narrower is followed; a line as wide as the terminal would wrap.
    static func columns() -> Int {
        var size = winsize()
        if withUnsafeMutablePointer(to: &size, { ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), $0) }) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) } ?? 0
        return columns > 0 ? columns : 80
    }
}

/// Not a terminal (a log, a pipe): a plain line every few seconds.
final class LineReporter: ProgressReporter, @unchecked Sendable {
    // Only the single task that drains `Download.events` calls `report`.
    private var lastLine = 0.0
    private var lastStreamLine = 0.0
    private var toldPlayable = false
    func report(_ event: DownloadEvent) {
        switch event {
        case .started(let info):
            writeStandardError("vfetch: \(redactedURL(info.finalURL)) → \(info.outputPath) (\(Format.size(info.length)))\n")
        case .notice(let message):
            writeStandardError("vfetch: \(redactingCredentials(in: message))\n")
        case .progress(let progress):
            // A line every 2 s, and one at once when playback first becomes possible: the moment a user
            // of --playback-order waits for.
            let playableTo = progress.playableTo
            let firstPlayable = playableTo != nil && !toldPlayable
            guard progress.seconds - lastLine >= 2 || firstPlayable else { return }
            (lastLine, toldPlayable) = (progress.seconds, toldPlayable || playableTo != nil)
            writeStandardError("vfetch: " + Format.progressLine(progress, mapWidth: 0) + "\n")
        case .finished(let summary):
            writeStandardError(Format.summaryLines(summary).map { "vfetch: \($0)\n" }.joined())
        case .streamProgress(let progress):
            let now = Date().timeIntervalSinceReferenceDate
            guard now - lastStreamLine >= 2 else { return }
            lastStreamLine = now
            writeStandardError("vfetch: " + Format.streamLine(progress) + "\n")
        }
    }
}

/// `--json`: one JSON object per line on stdout, the events' own `Codable` shapes (credentials masked);
/// notices go to stderr as well, where people look for them.
struct JSONReporter: ProgressReporter {
    func report(_ event: DownloadEvent) {
        if case .notice(let message) = event { writeStandardError("vfetch: \(redactingCredentials(in: message))\n") }
        printJSONLine(event.redacted)
    }

    func failed(_ error: DownloadError, detail: String?) {
        printJSONLine(Failure(message: error.said(detail), exitCode: ExitStatus(error).rawValue))
        writeStandardError("vfetch: \(error.said(detail))\n")
    }

    /// The last line of a failed run: `{"event": "error", "message", "exit_code"}`.
    struct Failure: Encodable {
        var event = "error"
        var message: String
        var exitCode: Int32

        enum CodingKeys: String, CodingKey {
            case event, message, exitCode = "exit_code"
        }
    }
}

/// Prints a value as one JSON object on one line of stdout, keys sorted.
func printJSONLine(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(value) else { return }
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

extension DownloadEvent {
    /// The event with the credentials in its URLs and message masked, for printing.
    var redacted: DownloadEvent {
        switch self {
        case .started(var info):
            (info.url, info.finalURL) = (redactedURL(info.url), redactedURL(info.finalURL))
            return .started(info)
        case .notice(let message): return .notice(redactingCredentials(in: message))
        case .finished(var summary):
            summary.sources = summary.sources.map { SourceBytes(url: redactedURL($0.url), bytes: $0.bytes) }
            return .finished(summary)
        default: return self
        }
    }
}

/// Human-readable figures.
enum Format {
    /// `humanSize(_:)`, or `unknown size`.
    static func size(_ bytes: Int64?) -> String { bytes.map(humanSize) ?? "unknown size" }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let whole = Int(seconds.rounded())
        return whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }

    /// `41.3%  590.2 MiB / 1.4 GiB  88.1 MiB/s  ETA 0:09  32 conn  [████▓░··]`, in at most `columns`
    /// columns: the map narrows first, then the fields a glance needs least go (as curl and aria2c do).
    static func progressLine(_ progress: DownloadProgress, mapWidth: Int, columns: Int = .max) -> String {
        // Each field with its rank: the highest goes first.
        var fields: [(text: String, rank: Int)] = []
        if let total = progress.totalBytes, total > 0 {
            fields.append((String(format: "%5.1f%%", Double(progress.bytesDone) * 100 / Double(total)), 0))
            fields.append(("\(size(progress.bytesDone)) / \(size(total))", 3))
        } else {
            fields.append((size(progress.bytesDone), 0))
        }
        fields.append(("\(size(Int64(progress.bytesPerSecond)))/s", 1))
        if let total = progress.totalBytes, progress.bytesPerSecond > 0 {
            fields.append(("ETA " + duration(Double(total - progress.bytesDone) / progress.bytesPerSecond), 2))
        }
        fields.append(("\(progress.activeConnections) conn", 5))
        if let playableTo = progress.playableTo { fields.append(("playable to " + duration(playableTo), 4)) }
        var line = fit(fields, columns: columns)
        // The map takes the room left, and is left out where that is too little to read.
        if mapWidth > 0, let total = progress.totalBytes, total > 0 {
            let room = min(mapWidth, columns - line.count - 4)
            if room >= 8 { line += "  [" + ByteRangeSet(progress.doneRanges).map(total: total, width: room) + "]" }
        }
        return line
    }

    /// `seg 143/300  02:21 of 05:00  41.2 MiB  8.1 MiB/s  16 conn`, in at most `columns` columns.
    static func streamLine(_ progress: StreamProgress, columns: Int = .max) -> String {
        fit(
            [
                ("seg \(progress.segmentsDone)/\(progress.segmentsTotal)", 0),
                ("\(duration(progress.secondsDone)) of \(duration(progress.secondsTotal))", 1),
                (size(progress.bytesDone), 3), ("\(size(Int64(progress.bytesPerSecond)))/s", 2),
                ("\(progress.activeConnections) conn", 4),
            ], columns: columns)
    }

    /// The fields joined by two spaces, without those of the highest ranks until the line fits `columns`.
    static func fit(_ fields: [(text: String, rank: Int)], columns: Int) -> String {
        var kept = fields
        while kept.count > 1, kept.reduce(2 * (kept.count - 1), { $0 + $1.text.count }) > columns,
            let last = kept.indices.max(by: { kept[$0].rank < kept[$1].rank })
        {
            kept.remove(at: last)
        }
        return kept.map(\.text).joined(separator: "  ")
    }

    static func plural(_ count: Int, _ one: String, _ many: String? = nil) -> String {
        "\(count) " + (count == 1 ? one : many ?? one + "s")
    }

    /// The summary line, then with mirrors one line for each source: `  1.1 GiB (78.6%) from URL`, of
    /// this run's bytes.
    static func summaryLines(_ summary: DownloadSummary) -> [String] {
        let fetched = max(1, summary.sources.reduce(0) { $0 + $1.bytes })
        return [summaryLine(summary)]
            + summary.sources.map { source in
                let percent = String(format: "%.1f%%", Double(source.bytes) * 100 / Double(fetched))
                return "  \(size(source.bytes)) (\(percent)) from \(redactedURL(source.url))"
            }
    }

    /// `saved NAME: 1.4 GiB in 16.20 s (88.1 MiB/s, 32 connections, 0 retries)`: the rate is of this run's
    /// bytes, not those an earlier run saved, and the connections are the most at once (never more than
    /// `-c`), not every one opened over the download.
    static func summaryLine(_ summary: DownloadSummary) -> String {
        if let stream = summary.stream {
            return "saved \(summary.path): \(plural(stream.segments, "segment")), \(duration(stream.mediaSeconds)) of media, "
                + "\(size(summary.bytes)) in \(String(format: "%.2f", summary.seconds)) s"
                + (stream.skipped.isEmpty ? "" : ", \(stream.skipped.count) left out")
        }
        let fetched = summary.bytes - summary.resumedBytes
        let rate = summary.seconds > 0 ? Double(fetched) / summary.seconds : 0
        let resumed = summary.resumedBytes > 0 ? " (\(size(fetched)) this run)" : ""
        return "saved \(summary.path): \(size(summary.bytes))\(resumed) in \(String(format: "%.2f", summary.seconds)) s "
            + "(\(size(Int64(rate)))/s, \(plural(summary.peakConnections, "connection")), "
            + "\(plural(summary.retries, "retry", "retries")))"
    }
}
