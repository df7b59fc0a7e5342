import ArgumentParser
import Foundation
import VFetch
import VFetchCore
import VFetchMedia

extension GetCommand {
    /// Where a stream's remuxed file goes: `-o`, or a name from the playlist's URL in `-d` (or here).
    var streamOutput: String {
        if let output { return output }
        let name = FileName.forStream(url: url)
        guard let directory else { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// `get` of an HLS playlist or a DASH manifest: fetch the chosen tracks' segments in parallel into
    /// `NAME.parts/`, then remux them, without re-encoding, into one file.
    func runStream(reporter: any ProgressReporter) async throws {
        let output = streamOutput
        if FileManager.default.fileExists(atPath: output), !force {
            throw fail(.outputExists(output), reporter)
        }
        let download = StreamDownload(
            url: url, output: output, options: downloadOptions, format: format, skipUnavailable: skipUnavailable)
        Interrupts.onInterrupt { download.cancel() }
        defer { Interrupts.onInterrupt(nil) }
        let printing = Task { for await event in download.events { reporter.report(event) } }
        let summary: StreamDownloadSummary
        do {
            summary = try await download.run()
            await printing.value
        } catch {
            await printing.value
            throw fail(error, reporter)
        }
        for gap in summary.skipped { reporter.report(.notice("left out (--skip-unavailable): \(gap)")) }
        let tracks = summary.tracks.filter { !$0.files.isEmpty }.map {
            RemuxTrack(files: $0.files, streams: $0.kind == "audio" ? .audio : $0.kind == "subtitles" ? .subtitles : .all)
        }
        let remuxed = await onOwnThread(named: "vfetch-remux") {
            Result { () throws(MediaError) in try StreamRemuxer.remux(tracks: tracks, to: output) }
        }
        if case .failure(let remuxed) = remuxed {
            throw fail(.badResponse("cannot remux the segments into \(output): \(remuxed)"), reporter)
        }
        if !keepSegments { StreamDownload.removeParts(of: summary) }
        let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int64) ?? nil
        let seconds = summary.tracks.first?.seconds ?? 0
        if json {
            printJSONLine([
                "event": "done", "path": output, "bytes": size as Any, "segments": summary.segments,
                "resumed_segments": summary.resumedSegments, "skipped": summary.skipped,
                "media_seconds": (seconds * 1000).rounded() / 1000, "seconds": (summary.seconds * 1000).rounded() / 1000,
            ])
        } else if !quiet {
            writeStandardError(
                "vfetch: saved \(output): \(Format.plural(summary.segments, "segment")), \(Format.duration(seconds)) of media, "
                    + "\(Format.size(size)) in \(String(format: "%.2f", summary.seconds)) s"
                    + (summary.skipped.isEmpty ? "" : ", \(summary.skipped.count) left out") + "\n")
        }
    }

    /// Reports `error` and returns the exit code it has.
    private func fail(_ error: DownloadError, _ reporter: any ProgressReporter) -> ExitCode {
        reporter.failed(error)
        return ExitCode(ExitStatus(error).rawValue)
    }
}
