import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small segmented stream (HLS or DASH) made by the real `ffmpeg` command line at test time,
/// with the media file it was cut from, to serve with ``TestOrigin/publishDirectory(_:at:behavior:)``.
///
/// Every stream is 6 s of `testsrc2` at 25 fps (H.264, a keyframe every 2 s) and a 440 Hz stereo
/// AAC sine, cut into 2 s segments. The source is encoded once; the stream is cut from it with
/// `-c copy`, so each segment's frames are exactly the source's and a test can compare decoded
/// frames (`-f framemd5`) of a remuxed download with those of the source.
public struct StreamFixture: Sendable {
    /// The kinds of stream a fixture can be.
    public enum Kind: String, CaseIterable, Sendable {
        /// An HLS master playlist with three variants (320x180, 256x144, 160x90), each of MPEG-TS
        /// segments with the audio muxed in. Each variant is cut from a source of its own.
        case hlsVariants
        /// An HLS media playlist of fragmented MP4 segments after an initialization section (`EXT-X-MAP`).
        case hlsFragmented
        /// An HLS media playlist whose MPEG-TS segments are byte ranges of one file (`EXT-X-BYTERANGE`).
        case hlsByteRange
        /// An HLS media playlist of MPEG-TS segments encrypted with AES-128-CBC (``key``, ``iv``).
        case hlsEncrypted
        /// An HLS master playlist with one video variant (MPEG-TS, no audio), two audio renditions
        /// (English at 440 Hz, the default, and German at 880 Hz) and an English WebVTT subtitle
        /// rendition whose segments carry an `X-TIMESTAMP-MAP`, as Apple's segmenter writes them
        /// (``subtitleCues``).
        case hlsRenditions
        /// A DASH manifest with separate video and audio adaptation sets (`SegmentTemplate` with a
        /// `SegmentTimeline`), fragmented MP4 segments.
        case dash
    }

    /// Seconds of media in every fixture.
    public static let duration = 6
    /// Seconds per segment (and between keyframes).
    public static let segmentDuration = 2
    /// Video frames per second.
    public static let frameRate = 25
    /// The variants of ``Kind/hlsVariants`` as width and height, in the master playlist's order.
    public static let variantSizes = [(width: 320, height: 180), (width: 256, height: 144), (width: 160, height: 90)]
    /// The AES-128 key of ``Kind/hlsEncrypted``, served as `key.key`.
    public static let key: [UInt8] = [
        0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
    ]
    /// The IV of ``Kind/hlsEncrypted``, given in its playlist (`IV=0x0011…EEFF`).
    public static let iv: [UInt8] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
    ]

    /// The cues of ``Kind/hlsRenditions``' subtitles as they should play: start and end in seconds
    /// from the start of the video, and text. The third spans two segments and is in both.
    public static let subtitleCues: [(start: Double, end: Double, text: String)] = [
        (0.5, 1.5, "first <i>cue</i>"), (2.25, 3, "second &amp; more"), (3.5, 4.5, "across"), (4.75, 5.5, "last"),
    ]
    /// The MPEG-TS time (90 kHz) of the first video frame in ``Kind/hlsRenditions``, which its subtitle
    /// segments' `X-TIMESTAMP-MAP` ties cue time 0 to: `ffmpeg`'s MPEG-TS muxer starts the audio at 1.4 s,
    /// and the video 21.3 ms (1024 samples of AAC priming) after it.
    public static let subtitleTimestampMap = 126_000 + 1920

    public let kind: Kind
    /// The directory the fixture was made in; every path below is relative to it.
    public let directory: URL
    /// The entry playlist or manifest, such as `master.m3u8` or `manifest.mpd`.
    public let entry: String
    /// The MP4 files the stream was cut from: one per variant for ``Kind/hlsVariants`` (in the
    /// master playlist's order), one otherwise.
    public let sources: [String]

    /// The source the stream was cut from (the first variant's for ``Kind/hlsVariants``).
    public var source: String { sources[0] }

    /// The fixture of `kind` as `make` leaves it in `directory`.
    init(kind: Kind, directory: URL) {
        self.kind = kind
        self.directory = directory
        switch kind {
        case .hlsVariants:
            entry = "master.m3u8"
            sources = Self.variantSizes.indices.map { "source-v\($0).mp4" }
        case .hlsRenditions:
            entry = "master.m3u8"
            sources = ["source.mp4"]
        case .hlsFragmented, .hlsByteRange, .hlsEncrypted:
            entry = "index.m3u8"
            sources = ["source.mp4"]
        case .dash:
            entry = "manifest.mpd"
            sources = ["source.mp4"]
        }
    }

    /// The absolute path of `relative`, a path inside the fixture's directory.
    public func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    /// Whether `ffmpeg`, which makes the fixtures, is on `PATH`.
    public static var isAvailable: Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: $0 + "/ffmpeg")
        }
    }

    /// Makes a fixture of `kind` in `directory` (created if needed) with `ffmpeg`: two runs of it,
    /// about a second in all.
    public static func make(_ kind: Kind, in directory: URL) async throws -> StreamFixture {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fixture = StreamFixture(kind: kind, directory: directory)
        if kind == .hlsEncrypted {
            // ffmpeg's key info file: the key's URI in the playlist, the key file, the IV in hex.
            try Data(key).write(to: URL(fileURLWithPath: fixture.path("key.key")))
            let keyInfo = "key.key\n\(fixture.path("key.key"))\n\(hex(iv))\n"
            try Data(keyInfo.utf8).write(to: URL(fileURLWithPath: fixture.path("keyinfo")))
        }
        for arguments in commands(kind, in: directory.path + "/") {
            try await runFFmpeg(arguments)
        }
        // Not part of the stream, and it names a path of this machine.
        if kind == .hlsEncrypted { try FileManager.default.removeItem(atPath: fixture.path("keyinfo")) }
        if kind == .hlsRenditions { try addSubtitles(to: fixture) }
        return fixture
    }

    /// The fixture of `kind`, made once and then shared: by every test of this process, and by
    /// later runs until the recipe changes (the directory is named after a hash of every command).
    /// Its files are shared: copy one before changing it.
    public static func shared(_ kind: Kind) async throws -> StreamFixture {
        try await SharedStreamFixtures.shared.fixture(kind)
    }

    /// The checksums of the decoded video frames of the media file at `path`, in order: the last column
    /// of ffmpeg's `framemd5` (timestamps differ between containers), to compare a download with its source.
    public static func videoFrames(of path: String) async throws -> [String] {
        let decode = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-map", "0:v", "-f", "framemd5", "-"]
        let (status, output) = await runTool(decode, output: true)
        guard status == 0 else { throw StreamFixtureFailure(description: "ffmpeg cannot decode the video of \(path)") }
        return output.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    // MARK: Commands

    private static let lavfiSources = [
        "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=\(frameRate):duration=\(duration)",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(duration)",
    ]
    /// H.264 with a fixed GOP of one segment, no scene-cut keyframes, so segments cut on keyframes.
    private static let encoding = [
        "-c:v", "libx264", "-preset", "ultrafast", "-g", "\(frameRate * segmentDuration)",
        "-keyint_min", "\(frameRate * segmentDuration)", "-sc_threshold", "0", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-ac", "2", "-b:a", "64k",
    ]
    private static let hls = [
        "-f", "hls", "-hls_time", "\(segmentDuration)", "-hls_playlist_type", "vod",
    ]

    /// The `ffmpeg` runs (arguments after the common ones) that make `kind` with paths under `base`.
    static func commands(_ kind: Kind, in base: String) -> [[String]] {
        let source = ["-i", base + "source.mp4", "-c", "copy"]
        let encodeSource = lavfiSources + encoding + [base + "source.mp4"]
        switch kind {
        case .hlsVariants:
            // One encode: the picture is split and scaled, each variant with its own audio encode.
            let sizes = variantSizes
            var graph = "[0:v]split=\(sizes.count)" + sizes.indices.map { "[in\($0)]" }.joined()
            for (index, size) in sizes.enumerated() {
                graph += ";[in\(index)]scale=\(size.width):\(size.height)[v\(index)]"
            }
            var encode = lavfiSources + ["-filter_complex", graph]
            for index in sizes.indices {
                encode += ["-map", "[v\(index)]", "-map", "1:a"] + encoding + [base + "source-v\(index).mp4"]
            }
            var cut: [String] = []
            for index in sizes.indices { cut += ["-i", base + "source-v\(index).mp4"] }
            for index in sizes.indices { cut += ["-map", "\(index):v", "-map", "\(index):a"] }
            cut +=
                ["-c", "copy"] + hls + [
                    "-hls_segment_filename", base + "v%v/segment%d.ts", "-master_pl_name", "master.m3u8",
                    "-var_stream_map", sizes.indices.map { "v:\($0),a:\($0)" }.joined(separator: " "),
                    base + "v%v/index.m3u8",
                ]
            return [encode, cut]
        case .hlsFragmented:
            return [
                encodeSource,
                source + hls + [
                    "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                    "-hls_segment_filename", base + "segment%d.m4s", base + "index.m3u8",
                ],
            ]
        case .hlsByteRange:
            return [
                encodeSource,
                source + hls + ["-hls_flags", "single_file", "-hls_segment_filename", base + "stream.ts", base + "index.m3u8"],
            ]
        case .hlsEncrypted:
            return [
                encodeSource,
                source + hls + [
                    "-hls_key_info_file", base + "keyinfo", "-hls_segment_filename", base + "segment%d.ts",
                    base + "index.m3u8",
                ],
            ]
        case .hlsRenditions:
            // Two audio tracks, as two languages: two tones.
            let encode =
                lavfiSources + ["-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000:duration=\(duration)"]
                + ["-map", "0:v", "-map", "1:a", "-map", "2:a"] + encoding + [base + "source.mp4"]
            let cut =
                ["-i", base + "source.mp4", "-map", "0:v", "-map", "0:a:0", "-map", "0:a:1", "-c", "copy"] + hls + [
                    "-var_stream_map", "v:0,agroup:aud a:0,agroup:aud,language:en,default:yes a:1,agroup:aud,language:de",
                    "-master_pl_name", "master.m3u8", "-hls_segment_filename", base + "r%v/segment%d.ts", base + "r%v/index.m3u8",
                ]
            return [encode, cut]
        case .dash:
            return [
                encodeSource,
                source + [
                    "-map", "0:v", "-map", "0:a", "-f", "dash", "-seg_duration", "\(segmentDuration)",
                    "-use_template", "1", "-use_timeline", "1", "-adaptation_sets", "id=0,streams=v id=1,streams=a",
                    base + "manifest.mpd",
                ],
            ]
        }
    }

    /// Writes ``Kind/hlsRenditions``' subtitle rendition (one WebVTT file per 2 s segment, each mapping
    /// its segment's start as `LOCAL` to that time's MPEG-TS clock) and links it from the master
    /// playlist ffmpeg wrote.
    private static func addSubtitles(to fixture: StreamFixture) throws {
        try FileManager.default.createDirectory(atPath: fixture.path("subs"), withIntermediateDirectories: true)
        for (path, text) in subtitleFiles() {
            try Data(text.utf8).write(to: URL(fileURLWithPath: fixture.path(path)))
        }
        let master = try String(contentsOfFile: fixture.path("master.m3u8"), encoding: .utf8)
        let linked =
            master.replacingOccurrences(of: "AUDIO=\"group_aud\"", with: "AUDIO=\"group_aud\",SUBTITLES=\"subs\"")
            + "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"English\",LANGUAGE=\"en\",URI=\"subs/index.m3u8\"\n"
        try Data(linked.utf8).write(to: URL(fileURLWithPath: fixture.path("master.m3u8")))
    }

    /// The subtitle playlist and segments of ``Kind/hlsRenditions`` by path.
    static func subtitleFiles() -> [(String, String)] {
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(segmentDuration)\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        var files: [(String, String)] = []
        for segment in 0..<(duration / segmentDuration) {
            let start = Double(segment * segmentDuration)
            let ticks = subtitleTimestampMap + Int(start) * 90_000
            var text = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\(ticks),LOCAL:\(vttTime(start))\n"
            for cue in subtitleCues where cue.end > start && cue.start < start + Double(segmentDuration) {
                text += "\n\(vttTime(cue.start)) --> \(vttTime(cue.end))\n\(cue.text)\n"
            }
            files.append(("subs/segment\(segment).vtt", text))
            playlist += "#EXTINF:\(segmentDuration).0,\nsegment\(segment).vtt\n"
        }
        return files + [("subs/index.m3u8", playlist + "#EXT-X-ENDLIST\n")]
    }

    /// `00:01.250`.
    private static func vttTime(_ seconds: Double) -> String {
        let millis = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d.%03d", millis / 60_000, millis / 1000 % 60, millis % 1000)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    private static func runFFmpeg(_ arguments: [String]) async throws {
        let common = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
        let (status, errors) = await runTool(common + arguments)
        guard status == 0 else {
            throw StreamFixtureFailure(description: "ffmpeg \(arguments.joined(separator: " ")) failed: \(errors)")
        }
    }
}

/// `ffmpeg` could not make a fixture; the description holds its command and error output.
public struct StreamFixtureFailure: Error, CustomStringConvertible {
    public let description: String
}

/// Runs a command (looked up on `PATH`) on a thread of its own, since waiting for it must not hold
/// a thread of Swift's cooperative pool, and answers its exit status and its error output, or its
/// output when `output` (its errors then go nowhere: a full pipe nobody reads would stall it).
private func runTool(_ command: [String], output: Bool = false) async -> (status: Int32, text: String) {
    await withCheckedContinuation { continuation in
        Thread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = command
            let pipe = Pipe()
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output ? pipe : FileHandle.nullDevice
            process.standardError = output ? FileHandle.nullDevice : pipe
            do {
                try process.run()
            } catch {
                continuation.resume(returning: (-1, "\(error)"))
                return
            }
            let text = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            continuation.resume(returning: (process.terminationStatus, String(decoding: text, as: UTF8.self)))
        }.start()
    }
}

/// Makes each kind of fixture once per recipe, in the system's temporary directory. A fixture is
/// made in a directory of its own and renamed into place, so a partly made one is never used.
private actor SharedStreamFixtures {
    static let shared = SharedStreamFixtures()

    private var made: [StreamFixture.Kind: Task<StreamFixture, any Error>] = [:]

    private let root: String = {
        let recipe =
            StreamFixture.Kind.allCases.map {
                $0.rawValue + StreamFixture.commands($0, in: "").map { $0.joined(separator: " ") }.joined(separator: "\n")
            }.joined(separator: "\n") + StreamFixture.hex(StreamFixture.key + StreamFixture.iv)
            + StreamFixture.subtitleFiles().map { $0.0 + $0.1 }.joined()
        // FNV-1a: stable across runs, unlike `hashValue`.
        let hash = recipe.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return NSTemporaryDirectory() + "vfetch-stream-fixtures-" + String(hash, radix: 16)
    }()

    func fixture(_ kind: StreamFixture.Kind) async throws -> StreamFixture {
        if let task = made[kind] { return try await task.value }
        let root = root
        let task = Task {
            let final = URL(fileURLWithPath: root + "/" + kind.rawValue)
            let fixture = StreamFixture(kind: kind, directory: final)
            if FileManager.default.fileExists(atPath: fixture.path(fixture.entry)) { return fixture }
            let scratch = URL(fileURLWithPath: root + "/\(kind.rawValue).\(getpid()).\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: scratch) }
            _ = try await StreamFixture.make(kind, in: scratch)
            // Another process may have finished the same fixture first: then its copy is used.
            if rename(scratch.path, final.path) != 0,
                !FileManager.default.fileExists(atPath: fixture.path(fixture.entry))
            {
                throw StreamFixtureFailure(description: "cannot rename \(scratch.path): \(String(cString: strerror(errno)))")
            }
            return fixture
        }
        made[kind] = task
        return try await task.value
    }
}
