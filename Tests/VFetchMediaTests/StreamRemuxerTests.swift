import Foundation
import TestOrigin
import Testing
import VFetchCore
import VFetchMedia

/// `StreamRemuxer` against streams `ffmpeg` segmented at test time: the frames that come out are
/// exactly those of the file the stream was cut from (compared decoded, with `-f framemd5`).
@Suite(.enabled(if: ffmpegIsInstalled, "ffmpeg makes the stream fixtures, and it is not installed"))
struct StreamRemuxerTests {
    static let frames = StreamFixture.duration * StreamFixture.frameRate

    @Test(arguments: StreamFixture.variantSizes.indices)
    func transportStreamVariantBecomesMP4(variant: Int) async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let files = try hlsMediaFiles(fixture.path("v\(variant)/index.m3u8"))
        #expect(files.count == StreamFixture.duration / StreamFixture.segmentDuration)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try await remuxed([RemuxTrack(files: files)], to: "out.mp4", in: directory)
        let source = fixture.path(fixture.sources[variant])
        let hashes = try await videoFrameHashes(output)
        #expect(hashes.count == Self.frames)
        #expect(hashes == (try await videoFrameHashes(source)))
        // ADTS AAC from MPEG-TS, which MP4 stores as raw AAC with an AudioSpecificConfig.
        try await expectAudio(in: output, like: source)
        #expect(try await formatName(output).hasPrefix("mov,mp4"))
        #expect(!FileManager.default.fileExists(atPath: output + ".tmp"))
    }

    @Test(arguments: ["mp4", "mkv", "ts"])
    func fragmentedMP4SegmentsBecome(_ container: String) async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        let files = try hlsMediaFiles(fixture.path(fixture.entry))
        #expect(files.first?.hasSuffix("init.mp4") == true)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try await remuxed([RemuxTrack(files: files)], to: "out." + container, in: directory)
        #expect(try await videoFrameHashes(output) == (try await videoFrameHashes(fixture.path(fixture.source))))
        try await expectAudio(in: output, like: fixture.path(fixture.source))
        let expected = ["mp4": "mov,mp4", "mkv": "matroska", "ts": "mpegts"][container]!
        #expect(try await formatName(output).hasPrefix(expected))
    }

    @Test func separateDASHVideoAndAudioBecomeOneMP4() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        let video = try dashFiles(fixture, representation: 0)
        let audio = try dashFiles(fixture, representation: 1)
        #expect(video.count == 4 && audio.count == 5)  // init + 3 and init + 4: ffmpeg cut a short last audio segment
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try await remuxed(
            [RemuxTrack(files: video, streams: .video), RemuxTrack(files: audio, streams: .audio)], to: "out.mp4", in: directory)
        #expect(try await streamKinds(output) == ["video", "audio"])
        #expect(try await videoFrameHashes(output) == (try await videoFrameHashes(fixture.path(fixture.source))))
        try await expectAudio(in: output, like: fixture.path(fixture.source))
    }

    @Test func audioAloneBecomesM4A() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try await remuxed([RemuxTrack(files: try dashFiles(fixture, representation: 1))], to: "out.m4a", in: directory)
        #expect(try await streamKinds(output) == ["audio"])
        try await expectAudio(in: output, like: fixture.path(fixture.source))
    }

    /// What a downloader keeps of an `EXT-X-BYTERANGE` playlist: each range as a file of its own.
    @Test func byteRangeSegmentsBecomeMP4() async throws {
        let fixture = try await StreamFixture.shared(.hlsByteRange)
        let playlist = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
        let whole = try bytes(of: fixture.path("stream.ts"))
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        for line in playlist.split(separator: "\n") where line.hasPrefix("#EXT-X-BYTERANGE:") {
            let numbers = line.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@").compactMap { Int($0) }
            let (length, offset) = (numbers[0], numbers[1])
            let path = directory + "/range\(files.count).ts"
            try Data(whole[offset..<offset + length]).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }
        #expect(files.count == 3)
        let output = try await remuxed([RemuxTrack(files: files)], to: "out.mp4", in: directory)
        #expect(try await videoFrameHashes(output) == (try await videoFrameHashes(fixture.path(fixture.source))))
    }

    /// The segments of an AES-128 playlist decrypt to MPEG-TS that ffprobe reads whole, and remux
    /// to the source's frames.
    @Test func encryptedSegmentsDecryptAndRemux() async throws {
        let fixture = try await StreamFixture.shared(.hlsEncrypted)
        let playlist = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
        #expect(playlist.contains("METHOD=AES-128,URI=\"key.key\",IV=0x00112233445566778899aabbccddeeff"))
        let key = try bytes(of: fixture.path("key.key"))
        #expect(key == StreamFixture.key)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        for (index, file) in try hlsMediaFiles(fixture.path(fixture.entry)).enumerated() {
            let encrypted = try bytes(of: file)
            #expect(encrypted.first != 0x47 || encrypted[188] != 0x47, "\(file) is not encrypted")
            let plain = try AES128CBC.decrypt(encrypted, key: key, iv: StreamFixture.iv)
            #expect(plain.count % 188 == 0 && plain.count > encrypted.count - 17)
            let path = directory + "/segment\(index).ts"
            try Data(plain).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }
        var frames = 0
        for file in files {
            let result = try await runTool(
                "ffprobe",
                [
                    "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                    "-of", "csv=p=0", file,
                ])
            #expect(result.status == 0 && result.standardError.isEmpty, "\(result.standardError)")
            // The count is shown for the stream in its program, then on its own.
            frames += result.standardOutput.split(separator: "\n").first.flatMap { Int($0) } ?? 0
        }
        #expect(frames == Self.frames)
        let output = try await remuxed([RemuxTrack(files: files)], to: "out.mp4", in: directory)
        #expect(try await videoFrameHashes(output) == (try await videoFrameHashes(fixture.path(fixture.source))))
    }

    /// A clock that jumps back (an `EXT-X-DISCONTINUITY`: here the same three segments twice) is
    /// followed as one timeline, as ffmpeg follows it: every frame, twice, in order.
    @Test func transportStreamClockJumpIsFollowed() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let files = try hlsMediaFiles(fixture.path("v2/index.m3u8"))
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = try await remuxed([RemuxTrack(files: files + files)], to: "out.mp4", in: directory)
        let once = try await videoFrameHashes(fixture.path(fixture.sources[2]))
        #expect(try await videoFrameHashes(output) == once + once)
        let duration = try await probeValue(output, ["-show_entries", "format=duration"]).first ?? ""
        #expect(abs((Double(duration) ?? 0) - 2 * Double(StreamFixture.duration)) < 0.2, "\(duration)")
    }

    enum Damage: String, CaseIterable, CustomStringConvertible {
        case truncated, garbage, errorPage
        var description: String { rawValue }
    }

    /// A segment cut short or replaced is an error that names it; nothing is left at the output.
    @Test(arguments: [StreamFixture.Kind.hlsVariants, .hlsFragmented], Damage.allCases)
    func damagedSegmentIsAnError(kind: StreamFixture.Kind, damage: Damage) async throws {
        let fixture = try await StreamFixture.shared(kind)
        let playlist = kind == .hlsVariants ? fixture.path("v0/index.m3u8") : fixture.path(fixture.entry)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        for (index, file) in try hlsMediaFiles(playlist).enumerated() {
            var data = try bytes(of: file)
            if index == 2 {  // the second segment (after the init section for fMP4) or the third TS segment
                switch damage {
                case .truncated: data.removeLast(1000)
                case .garbage: data = (0..<data.count).map { UInt8(truncatingIfNeeded: $0 &* 131 ^ 0x5A) }
                case .errorPage: data = Array("<html><body>502 Bad Gateway</body></html>\n".utf8)
                }
            }
            let path = directory + "/\(index)-" + (file as NSString).lastPathComponent
            try Data(data).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }
        let output = directory + "/out.mp4"
        let tracks = [RemuxTrack(files: files)]
        let error = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in try StreamRemuxer.remux(tracks: tracks, to: output) }
        }
        guard case .invalidData(let message)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(message.contains("file 3 of \(files.count)"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(!FileManager.default.fileExists(atPath: output + ".tmp"))
    }

    @Test func missingKindAndUnwritableOutputAreErrors() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let files = try hlsMediaFiles(fixture.path("v2/index.m3u8"))
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let noSubtitles = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in
                try StreamRemuxer.remux(tracks: [RemuxTrack(files: files, streams: .subtitles)], to: directory + "/a.mp4")
            }
        }
        #expect(noSubtitles?.description.contains("has no subtitles stream") == true, "\(String(describing: noSubtitles))")

        // A directory in the output's place, then a symbolic link: neither is replaced nor followed.
        try FileManager.default.createDirectory(atPath: directory + "/b.mp4", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: directory + "/c.mp4", withDestinationPath: directory + "/target")
        for name in ["b.mp4", "c.mp4"] {
            let error = await #expect(throws: MediaError.self) {
                try await onThread { () throws(MediaError) in
                    try StreamRemuxer.remux(tracks: [RemuxTrack(files: files)], to: directory + "/" + name)
                }
            }
            guard case .cannotWrite? = error else {
                Issue.record("\(name): \(String(describing: error))")
                continue
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/target"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/b.mp4.tmp"))

        let missing = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in
                try StreamRemuxer.remux(tracks: [RemuxTrack(files: files + [directory + "/absent.ts"])], to: directory + "/d.mp4")
            }
        }
        #expect(missing?.description.contains("absent.ts") == true, "\(String(describing: missing))")
    }

    /// Bytes framed as MPEG-TS packets but holding nothing (no PAT, no PMT): an error, no output.
    @Test func framedGarbageIsAnError() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = (0..<188 * 500).map { $0 % 188 == 0 ? 0x47 : UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        try Data(garbage).write(to: URL(fileURLWithPath: directory + "/garbage.ts"))
        let output = directory + "/out.mp4"
        let error = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in
                try StreamRemuxer.remux(tracks: [RemuxTrack(files: [directory + "/garbage.ts"])], to: output)
            }
        }
        guard case .invalidData? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["garbage.ts"])
    }

    @Test func containerFollowsTheExtension() {
        #expect(StreamRemuxer.containerName(forPath: "/a/b.MKV") == "matroska")
        #expect(StreamRemuxer.containerName(forPath: "movie.ts") == "mpegts")
        #expect(StreamRemuxer.containerName(forPath: "song.m4a") == "ipod")
        #expect(StreamRemuxer.containerName(forPath: "movie.mp4") == "mp4")
        #expect(StreamRemuxer.containerName(forPath: "dir.ts/movie") == "mp4")
        #expect(StreamRemuxer.containerName(forPath: "movie") == "mp4")
        #expect(StreamRemuxer.containerName(forPath: "movie.avi") == nil)
        #expect(StreamRemuxer.containerName(forPath: ".hidden") == "mp4")
    }
}

// MARK: - Helpers

/// The files an HLS media playlist names, in order and as paths beside it: its `EXT-X-MAP` first,
/// then every segment.
func hlsMediaFiles(_ playlist: String) throws -> [String] {
    let directory = (playlist as NSString).deletingLastPathComponent
    let text = try String(contentsOfFile: playlist, encoding: .utf8)
    var files: [String] = []
    for line in text.split(separator: "\n") {
        if line.hasPrefix("#EXT-X-MAP:URI=\"") {
            files.append(directory + "/" + line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" })
        } else if !line.hasPrefix("#"), !line.trimmingCharacters(in: .whitespaces).isEmpty {
            files.append(directory + "/" + line)
        }
    }
    return files
}

/// The initialization section and media segments of one of the DASH fixture's representations, in order.
func dashFiles(_ fixture: StreamFixture, representation: Int) throws -> [String] {
    let names = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path)
    let chunks = names.filter { $0.hasPrefix("chunk-stream\(representation)-") }.sorted()  // numbers are zero-padded
    return ["init-stream\(representation).m4s"].filter(names.contains).map(fixture.path) + chunks.map(fixture.path)
}

/// Remuxes on a thread of its own into `directory`; answers the output's path.
func remuxed(_ tracks: [RemuxTrack], to name: String, in directory: String) async throws -> String {
    let output = directory + "/" + name
    try await onThread { () throws(MediaError) in try StreamRemuxer.remux(tracks: tracks, to: output) }
    return output
}

func scratchDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "vfetch-remux-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The MD5 of every decoded video frame, in order (`ffmpeg -map 0:v -f framemd5`).
func videoFrameHashes(_ path: String) async throws -> [String] {
    let result = try await runTool(
        "ffmpeg", ["-hide_banner", "-v", "error", "-nostdin", "-i", path, "-map", "0:v", "-f", "framemd5", "-"])
    guard result.status == 0, result.standardError.isEmpty else {
        throw ToolFailure(message: "ffmpeg framemd5 \(path): \(result.standardError)")
    }
    return result.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
        $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}

/// What ffprobe shows for `path` with `arguments`, one line per entry. (A stream of an MPEG-TS
/// file is listed twice: in its program, then on its own.)
func probeValue(_ path: String, _ arguments: [String]) async throws -> [String] {
    let result = try await runTool(
        "ffprobe", ["-v", "error"] + arguments + ["-of", "default=noprint_wrappers=1:nokey=1", path])
    guard result.status == 0 else { throw ToolFailure(message: "ffprobe \(path): \(result.standardError)") }
    return result.standardOutput.split(separator: "\n").map(String.init)
}

func formatName(_ path: String) async throws -> String {
    try await probeValue(path, ["-show_entries", "format=format_name"]).first ?? ""
}

func streamKinds(_ path: String) async throws -> [String] {
    try await probeValue(path, ["-show_entries", "stream=codec_type"])
}

/// `output` has AAC audio that ends when `source`'s does (within 0.2 s) and decodes without an error.
func expectAudio(in output: String, like source: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let codecs = try await probeValue(output, ["-select_streams", "a", "-show_entries", "stream=codec_name"])
    #expect(Set(codecs) == ["aac"], sourceLocation: sourceLocation)
    let decoded = try await runTool(
        "ffmpeg", ["-hide_banner", "-v", "error", "-nostdin", "-i", output, "-map", "0:a", "-f", "null", "-"])
    #expect(decoded.status == 0 && decoded.standardError.isEmpty, "\(decoded.standardError)", sourceLocation: sourceLocation)
    let (have, want) = (try await audioEnd(output), try await audioEnd(source))
    #expect(want > 5 && abs(have - want) <= 0.2, "audio ends at \(have) s, the source's at \(want) s", sourceLocation: sourceLocation)
}

/// Where the audio ends, in seconds from the first packet of any stream: from packet times, since
/// MPEG-TS has no duration field and the start differs between containers.
func audioEnd(_ path: String) async throws -> Double {
    let result = try await runTool(
        "ffprobe", ["-v", "error", "-show_entries", "packet=codec_type,pts_time,duration_time", "-of", "csv=p=0", path])
    guard result.status == 0 else { throw ToolFailure(message: "ffprobe \(path): \(result.standardError)") }
    var (first, end) = (Double.infinity, 0.0)
    for line in result.standardOutput.split(separator: "\n") {
        let fields = line.split(separator: ",", omittingEmptySubsequences: false)
        guard fields.count >= 3, let pts = Double(fields[1]) else { continue }
        first = min(first, pts)
        if fields[0] == "audio" { end = max(end, pts + (Double(fields[2]) ?? 0)) }
    }
    return end - first
}
