import VFetchCore
import VFetchStreams

extension StreamDownload {
    /// The saved stream with each subtitle track of text files (HLS's WebVTT segments, a DASH TTML file or
    /// TTML segments) joined into one WebVTT file on the media's clock (`subtitles-N.vtt` in the parts
    /// folder), ready for the remux or to be kept beside the output. Subtitles in MP4 segments (`wvtt`,
    /// `stpp`) stay as they are: the remux reads them whole.
    public static func joiningSubtitles(of summary: StreamDownloadSummary) throws(DownloadError) -> StreamDownloadSummary {
        var summary = summary
        for index in summary.tracks.indices where summary.tracks[index].kind == "subtitles" {
            let track = summary.tracks[index]
            guard let first = track.files.first else { continue }
            let firstBytes = try read(first)
            let isWebVTT = WebVTT.isWebVTT(firstBytes)
            guard isWebVTT || TTML.isTTML(firstBytes) else { continue }
            var cues: [WebVTT.Cue] = []
            for (number, file) in track.files.enumerated() {
                let bytes = number == 0 ? firstBytes : try read(file)
                do throws(StreamParseError) {
                    cues += try isWebVTT ? WebVTT.cues(of: bytes) : TTML.cues(of: bytes)
                } catch {
                    throw .badResponse("subtitles \(track.id), file \(number + 1): \(error.description)")
                }
            }
            let path = summary.partsDirectory + "/subtitles-\(index).vtt"
            try write(WebVTT.document(cues), to: path, mode: 0o600)
            summary.tracks[index].files = [path]
        }
        return summary
    }

    /// Saves a joined subtitle track beside `output`, as yt-dlp names it: `film.en.vtt` beside `film.ts`
    /// (`film.vtt` without a language), its cues moved by `shift` seconds as the remux moved the video's
    /// (`StreamRemuxer.remux` returns it, negated). A file of that name is replaced when `replacing`, else the
    /// name gets a number. Returns its path.
    public static func saveBeside(
        _ track: StreamDownloadSummary.Track, output: String, shift: Double, replacing: Bool
    ) throws(DownloadError) -> String {
        guard let file = track.files.first else { throw .badResponse("subtitles \(track.id): nothing was saved") }
        let slash = output.lastIndex(of: "/").map { output.index(after: $0) } ?? output.startIndex
        let stem = output[slash...].lastIndex(of: ".").map { String(output[..<$0]) } ?? output
        // A playlist's language tag names a file: only letters, digits and hyphens, as BCP 47 has.
        let language = (track.language ?? "").filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }.prefix(35)
        let named = language.isEmpty ? stem + ".vtt" : "\(stem).\(language).vtt"
        let path = FileSystem.exists(named) && !replacing ? FileSystem.freeName(for: named) : named
        let moved: [UInt8]
        do { moved = try WebVTT.join([try read(file)], shift: shift) } catch { throw .badResponse("subtitles \(track.id): \(error)") }
        try write(moved, to: path, mode: 0o644)
        return path
    }

    private static func read(_ path: String) throws(DownloadError) -> [UInt8] {
        do { return try FileSystem.contents(at: path) } catch { throw .forOutput(error) }
    }

    /// Writes `bytes` as a new file at `path`, through a temporary name, so a reader never sees half of it.
    private static func write(_ bytes: [UInt8], to path: String, mode: FileSystem.Mode) throws(DownloadError) {
        let temporary = path + ".tmp"
        do throws(FileSystemError) {
            let fd = try FileSystem.create(temporary, mode: mode)
            defer { FileSystem.close(fd) }
            do { try FileSystem.write(bytes, to: fd) } catch { throw FileSystemError(error, path: temporary) }
        } catch {
            try? FileSystem.remove(temporary)
            throw .forOutput(error)
        }
        do { try FileSystem.rename(temporary, to: path) } catch { throw .forOutput(FileSystemError(error, path: path)) }
    }
}
