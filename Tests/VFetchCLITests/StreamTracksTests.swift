import Foundation
import TestOrigin
import Testing

/// Several audio tracks and subtitles of an HLS stream (`--format lang=…,sub=…`), checked with ffprobe
/// and ffmpeg: each audio track's packets are its source's, every track carries its language, and the
/// subtitles' cues play when the source's did, muxed (MKV, MP4) or beside the video (MPEG-TS).
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct StreamTracksTests {
    /// Saves the renditions fixture's stream as `name` with `format`; returns the result and the output.
    static func get(_ format: String, as name: String, _ check: (Finished, String, StreamFixture) async throws -> Void) async throws {
        let fixture = try await StreamFixture.shared(.hlsRenditions)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let output = directory + "/" + name
            let result = try await vfetch(["get", origin.url("/s/master.m3u8"), "-o", output, "--format", format])
            try await check(result, output, fixture)
        }
    }

    /// Each stream's codec, kind and language tag, as ffprobe reads them: `aac audio eng` (for MPEG-TS it
    /// lists its programs' streams first, without tags, then the streams).
    static func streams(_ path: String) async throws -> [String] {
        let result = try await run(
            "/usr/bin/env",
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_name:stream_tags=language", "-of", "csv=p=0", path])
        #expect(result.status == 0, "\(result.standardError)")
        let streams = result.standardOutput.components(separatedBy: "\n\n").last ?? ""
        return streams.split(separator: "\n").map { $0.split(separator: ",").joined(separator: " ") }
    }

    /// The checksums of a stream's packets as stored (`-c copy`): the same AAC frames hash alike in any
    /// container (MPEG-TS's ADTS headers taken off). `framemd5`'s sixth column: a seventh hashes side data, which
    /// only the source has.
    static func packets(_ path: String, _ stream: String) async throws -> [String] {
        let result = try await run(
            "/usr/bin/env",
            [
                "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-map", stream, "-c", "copy", "-bsf:a",
                "aac_adtstoasc", "-f", "framemd5", "-",
            ])
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: ",").dropFirst(5).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
    }

    /// A file's subtitles as ffmpeg reads them, written out as WebVTT: the timing lines and texts of its cues
    /// (ffmpeg decodes character references on the way: `&amp;` reads `&`).
    static func cues(_ path: String) async throws -> [String] {
        let result = try await run(
            "/usr/bin/env", ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-map", "0:s:0", "-f", "webvtt", "-"])
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput.split(separator: "\n").map(String.init).filter { $0 != "WEBVTT" }
    }

    /// What `cues` should read of `path`: the fixture's cues at their times after the video's first frame
    /// (which starts after the audio's, by its priming), each text as `text` makes it.
    static func expectedCues(_ path: String, _ text: (String) -> String = { $0 }) async throws -> [String] {
        let probe = try await run(
            "/usr/bin/env",
            ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=start_time", "-of", "csv=p=0", path])
        let video = try #require(Double(probe.standardOutput.split(separator: "\n").last ?? ""), "\(probe.standardOutput)")
        return StreamFixture.subtitleCues.flatMap {
            ["\(time(video + $0.start)) --> \(time(video + $0.end))", text($0.text.replacingOccurrences(of: "&amp;", with: "&"))]
        }
    }

    static func withoutTags(_ text: String) -> String {
        text.replacingOccurrences(of: "<i>", with: "").replacingOccurrences(of: "</i>", with: "")
    }

    static func time(_ seconds: Double) -> String {
        let millis = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d.%03d", millis / 60_000, millis / 1000 % 60, millis % 1000)
    }

    @Test func everyAudioLanguageAndTheSubtitlesAreMuxedIntoMatroskaWithTheirLanguages() async throws {
        try await Self.get("lang=all,sub=en", as: "out.mkv") {
            (result: Finished, output: String, fixture: StreamFixture) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            // Matroska's languages are ISO 639-2/B: German is `ger`.
            #expect(try await Self.streams(output) == ["h264 video", "aac audio eng", "aac audio ger", "webvtt subtitle eng"])
            let source = fixture.path(fixture.source)
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(source)))
            #expect(try await Self.packets(output, "0:a:0") == (try await Self.packets(source, "0:a:0")))
            #expect(try await Self.packets(output, "0:a:1") == (try await Self.packets(source, "0:a:1")))
            #expect(try await Self.packets(source, "0:a:0") != (try await Self.packets(source, "0:a:1")), "the two tones differ")
            #expect(try await Self.cues(output) == (try await Self.expectedCues(output)))
        }
    }

    @Test func mp4GetsTheSubtitlesAsTimedTextAndOneAudioByDefault() async throws {
        try await Self.get("sub=en", as: "out.mp4") { (result: Finished, output: String, fixture: StreamFixture) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await Self.streams(output) == ["h264 video und", "aac audio eng", "mov_text subtitle eng"])
            #expect(try await Self.packets(output, "0:a:0") == (try await Self.packets(fixture.path(fixture.source), "0:a:0")))
            // Timed text is plain: markup goes, character references are decoded.
            #expect(try await Self.cues(output) == (try await Self.expectedCues(output, Self.withoutTags)))
        }
    }

    @Test func anMPEGTSOutputGetsItsSubtitlesBesideIt() async throws {
        try await Self.get("lang=de,sub=en", as: "film.ts") {
            (result: Finished, output: String, fixture: StreamFixture) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            let beside = output.replacingOccurrences(of: "film.ts", with: "film.en.vtt")
            #expect(
                result.standardError.contains("subtitles saved beside the video (MPEG-TS holds none): \(beside)"), "\(result.standardError)"
            )
            #expect(try await Self.streams(output) == ["h264 video", "aac audio ger"])
            #expect(try await Self.packets(output, "0:a:0") == (try await Self.packets(fixture.path(fixture.source), "0:a:1")))
            #expect(try await Self.cues(beside) == (try await Self.expectedCues(output)))
        }
    }

    @Test func aLanguageTheStreamLacksFailsBeforeAnySegment() async throws {
        try await Self.get("lang=en,sub=fr", as: "out.mkv") { (result: Finished, output: String, _: StreamFixture) async throws -> Void in
            #expect(result.status == 15, "\(result.standardError)")
            #expect(result.standardError.contains("no track matches the format selector"), "\(result.standardError)")
            #expect(!exists(output))
        }
    }

    /// DASH serves subtitles as one TTML file beside the media: the fixture's manifest with such a text
    /// track, and its TTML of the same cues as the HLS fixture's WebVTT.
    @Test func aDASHTTMLTrackIsSavedAsWebVTTInMatroskaAndTimedTextInMP4() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        let manifest = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8).replacingOccurrences(
            of: "</Period>",
            with: """
                <AdaptationSet contentType="text" mimeType="application/ttml+xml" lang="en">
                <Representation id="subs-en" bandwidth="256"><BaseURL>subs-en.ttml</BaseURL></Representation>
                </AdaptationSet></Period>
                """)
        let paragraphs = StreamFixture.subtitleCues.map { "<p begin=\"\($0.start)s\" end=\"\($0.end)s\">\($0.text)</p>" }
        let ttml = "<?xml version=\"1.0\"?><tt xmlns=\"http://www.w3.org/ns/ttml\"><body><div>\(paragraphs.joined())</div></body></tt>"
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            var type = OriginBehavior()
            type.contentType = "application/dash+xml"
            origin.publish("/s/subs.mpd", Array(manifest.utf8), behavior: type)
            origin.publish("/s/subs-en.ttml", Array(ttml.utf8))
            for name in ["out.mkv", "out.mp4"] {
                let output = directory + "/" + name
                let result = try await vfetch(["get", origin.url("/s/subs.mpd"), "-o", output, "--format", "sub=en"])
                #expect(result.status == 0, "\(result.standardError)")
                let subtitles = name == "out.mkv" ? "webvtt subtitle eng" : "mov_text subtitle eng"
                #expect(try await Self.streams(output).last == subtitles, "\(name)")
                // In TTML the fixture's `<i>` is an element, not TTML's: its text is kept, plain.
                let cues = try await Self.cues(output)
                #expect(cues == (try await Self.expectedCues(output, Self.withoutTags)), "\(name): \(cues)")
            }
        }
    }
}
