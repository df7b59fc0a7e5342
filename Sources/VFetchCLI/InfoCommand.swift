import ArgumentParser
import Foundation
import VFetch
import VFetchCore
import VFetchEngine
import VFetchMedia
import VFetchStreams

struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Probe a media file, an unfinished download or a URL: streams, duration, what is playable.",
        discussion: "For a URL only the head and the index are fetched (an MP4's moov wherever it is), not the file. "
            + "Exit codes: 0 shown, 1 failed (no such file, or not a regular file: a FIFO, a device), 3-5 as for get, "
            + "12 not a media file libavformat can read."
    )

    @Argument(help: "A URL, a file, or the output path of an unfinished `vfetch get`.")
    var target: String

    @Flag(help: "Print one JSON object.")
    var json = false

    @OptionGroup var request: RequestOptions

    /// How a URL's requests go out.
    var options: DownloadOptions {
        var options = DownloadOptions()
        request.apply(to: &options)
        return options
    }

    func run() async throws {
        let result: ProbeResult
        do {
            result = try await probe(target, options: options)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(Self.exitStatus(error).rawValue)
        }
        if json { return printJSONLine(result.redacted) }
        switch result {
        case .media(let report): printText(report)
        case .stream(let catalog): show(catalog)
        case .unfinishedStream(let parts): show(parts)
        }
    }

    static func exitStatus(_ error: ProbeError) -> ExitStatus {
        switch error {
        case .notFound, .notARegularFile: .failure
        case .download(let error): ExitStatus(error)
        case .notMedia: .notMedia
        }
    }

    private func show(_ parts: UnfinishedStream) {
        print("stream:     \(redactedURL(parts.source)) (unfinished `vfetch get`; run it again to go on)")
        print("segments:   \(parts.segmentsKept.count) of \(parts.segments) kept, \(Format.size(parts.bytesKept))")
    }

    /// An HLS playlist or DASH manifest: its tracks, as `get --format` chooses among them.
    private func show(_ catalog: StreamCatalogInfo) {
        print("stream:     \(catalog.format.uppercased())\(catalog.isLive ? " (live)" : "")")
        print("duration:   \(catalog.duration.map(Self.clock) ?? "unknown")")
        print("tracks:     (`vfetch get --format id=ID` picks one)")
        for track in catalog.tracks {
            var parts = [track.kind]
            if let width = track.width, let height = track.height { parts.append("\(width)x\(height)") }
            if let bandwidth = track.bandwidth { parts.append(String(format: "%.2f Mbit/s", Double(bandwidth) / 1e6)) }
            if !track.codecs.isEmpty { parts.append(track.codecs.joined(separator: ",")) }
            if let language = track.language { parts.append(language) }
            if let segments = track.segments { parts.append(Format.plural(segments, "segment")) }
            if track.encryption != "none" { parts.append("encrypted: \(track.encryption)") }
            if let problem = track.problem { parts.append("unreadable: \(problem)") }
            print("  \(track.id)  " + parts.joined(separator: "  "))
        }
    }

    private func printText(_ report: MediaReport) {
        if let container = report.container {
            var layout: [String] = []
            if let faststart = report.faststart { layout.append(faststart ? "moov first" : "moov at the end") }
            if report.info?.fragmented == true { layout.append("fragmented") }
            print("container:  \(container)" + (layout.isEmpty ? "" : " (\(layout.joined(separator: ", ")))"))
        }
        if let info = report.info {
            let rate = info.bitRate.map { String(format: ", %.2f Mbit/s", Double($0) / 1e6) } ?? ""
            print("duration:   \(info.duration.map(Self.clock) ?? "unknown")\(rate)")
            for (index, stream) in info.streams.enumerated() {
                var parts = [stream.kind, stream.codec]
                if let width = stream.width, let height = stream.height { parts.append("\(width)x\(height)") }
                if let fps = stream.frameRate { parts.append(String(format: "%.3g fps", fps)) }
                if let channels = stream.channels { parts.append("\(channels) ch") }
                if let rate = stream.sampleRate { parts.append("\(rate) Hz") }
                print("stream \(index):   " + parts.joined(separator: " "))
            }
        }
        print("size:       \(Format.size(report.length))")
        print(String(format: "downloaded: %.1f%%", report.downloaded * 100) + (report.isComplete ? "" : " (unfinished)"))
        if !report.isComplete {
            print("present:    \(Self.byteRanges(report.present))")
        }
        let playable = report.playable.map { "\(Self.clock($0.lowerBound))–\(Self.clock($0.upperBound))" }
        print("playable:   \(playable.isEmpty ? "nothing yet" : playable.joined(separator: ", "))")
        if let needs = report.needs { print("needs:      bytes \(needs.lowerBound)-\(needs.upperBound - 1) first") }
        if let fetched = report.fetchedBytes, let requests = report.requests {
            print("fetched:    \(Format.size(fetched)) in \(requests) request\(requests == 1 ? "" : "s")")
        }
    }

    /// Present byte ranges as a person reads them: `0-1048575 (1 MiB), …`, at most eight, then how many more.
    static func byteRanges(_ ranges: [Range<Int64>]) -> String {
        guard !ranges.isEmpty else { return "nothing" }
        let shown = ranges.prefix(8).map { "\($0.lowerBound)-\($0.upperBound - 1) (\(humanSize($0.upperBound - $0.lowerBound)))" }
        let more = ranges.count > shown.count ? ", and \(ranges.count - shown.count) more" : ""
        return shown.joined(separator: ", ") + more
    }

    static func clock(_ seconds: Double) -> String {
        let minutes = Int(seconds) / 60
        return String(format: "%d:%04.1f", minutes, seconds - Double(minutes * 60))
    }
}

extension ProbeResult {
    /// The result as it may be printed: an unfinished stream's URL without its password.
    var redacted: ProbeResult {
        guard case .unfinishedStream(var parts) = self else { return self }
        parts.source = redactedURL(parts.source)
        return .unfinishedStream(parts)
    }
}
