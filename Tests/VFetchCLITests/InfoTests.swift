import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch info` and `vfetch get --stream` with real media, against the real origin.
@Suite struct InfoTests {
    static let sample: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared/media/bbb-480p-30s.mp4").path
    }()
    /// Users' clones have no `../shared`: the tests that need the sample skip, saying why.
    static let hasSample = FileManager.default.fileExists(atPath: sample)
    static let noSample: Comment = "../shared/media/bbb-480p-30s.mp4 is absent (it exists beside the project's own checkouts only)"

    /// A 12 s 320x240 H.264/AAC MP4 with `moov` at the end (ffmpeg's default), made once per run.
    static let moovAtEnd = MadeOnce(
        "info-moov-at-end.mp4",
        ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "12", "-c:v", "libx264", "-preset",
            "ultrafast", "-g", "25", "-b:v", "2M", "-c:a", "aac",
        ])

    /// The same 12 s clip with `moov` first (`-movflags +faststart`), made once per run.
    static let faststart = MadeOnce(
        "info-faststart.mp4",
        ffmpeg: [
            "-f", "lavfi", "-i",
            "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-b:v", "2M", "-c:a", "aac", "-movflags", "+faststart",
        ])

    /// A 60 s 320x240 H.264/AAC fragmented MP4 (`frag_keyframe+empty_moov`: 1 s fragments, then
    /// `mfra`), made once per run: its moov says nothing of the duration.
    static let fragmented = MadeOnce(
        "info-fragmented.mp4",
        ffmpeg: [
            "-f", "lavfi", "-i",
            "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "60",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-b:v", "2M", "-c:a", "aac", "-movflags",
            "frag_keyframe+empty_moov", "-f", "mp4",
        ])

    /// ffprobe's duration and overall bit rate of a whole file.
    func ffprobeFormat(_ path: String) throws -> (duration: Double, bitRate: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffprobe", "-v", "error", "-show_entries", "format=duration,bit_rate", "-of", "default=nw=1", path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var fields: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = Double(parts[1]) }
        }
        return (try #require(fields["duration"]), try #require(fields["bit_rate"]))
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test(.enabled(if: hasSample, noSample))
    func aURLIsProbedFromItsHeadAndMoovOnly() async throws {
        try await withOrigin { origin, _ in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.sample)))
            origin.publish("/bbb.mp4", bytes)
            let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
            #expect(moov.range.upperBound == bytes.count, "the sample keeps moov at the end")
            let run = try await vfetch(["info", origin.url("/bbb.mp4"), "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let report = try json(run.standardOutput)
            #expect((report["duration"] as? Double).map { abs($0 - 30) < 0.2 } == true)
            #expect(report["faststart"] as? Bool == false)
            let streams = try #require(report["streams"] as? [[String: Any]])
            #expect(streams.contains { $0["codec"] as? String == "h264" && $0["width"] as? Int == 854 })
            #expect(streams.contains { $0["kind"] as? String == "audio" && $0["channels"] as? Int == 6 })
            let requests = try #require(report["requests"] as? Int)
            let fetched = try #require(report["fetched_bytes"] as? Int)
            #expect(requests <= 3)
            #expect(fetched <= moov.range.count + 512 << 10, "fetched \(fetched), moov is \(moov.range.count)")
            #expect(origin.bytesServed("/bbb.mp4") <= moov.range.count + 512 << 10 + 256 << 10)
        }
    }

    @Test func aFragmentedURLGetsItsDurationFromTheTail() async throws {
        let path = try #require(await Self.fragmented.file(), "ffmpeg could not make the fixture")
        let expected = try ffprobeFormat(path)
        try await withOrigin { origin, _ in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            origin.publish("/fragmented.mp4", bytes)
            #expect(bytes.count > 4 << 20, "the fixture is not what the test assumes")
            let run = try await vfetch(["info", origin.url("/fragmented.mp4"), "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let report = try json(run.standardOutput)
            #expect(report["fragmented"] as? Bool == true)
            let duration = try #require(report["duration"] as? Double)
            #expect(abs(duration - expected.duration) < 1, "duration \(duration), ffprobe says \(expected.duration)")
            let bitRate = try #require(report["bit_rate"] as? Double)
            #expect(
                abs(bitRate - expected.bitRate) < expected.bitRate / 50,
                "bit rate \(bitRate), ffprobe says \(expected.bitRate)")
            // The head (moov and the first fragments) and one small tail range (mfra, the last fragment).
            let requests = try #require(report["requests"] as? Int)
            let fetched = try #require(report["fetched_bytes"] as? Int)
            #expect(requests <= 2)
            #expect(fetched <= 1 << 20, "fetched \(fetched)")
            #expect(origin.bytesServed("/fragmented.mp4") <= 1 << 20 + 256 << 10)
        }
    }

    @Test func aBoxAfterMoovIsNotFetched() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, _ in
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
            // A 5 MiB free box after the moov.
            let free = 5 << 20
            bytes += [UInt8(free >> 24), UInt8(free >> 16 & 0xFF), 0, 0] + Array("free".utf8)
            bytes += [UInt8](repeating: 0, count: free - 8)
            origin.publish("/trailing.mp4", bytes)
            let run = try await vfetch(["info", origin.url("/trailing.mp4"), "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let report = try json(run.standardOutput)
            #expect((report["duration"] as? Double).map { abs($0 - 12) < 0.2 } == true)
            #expect(report["faststart"] as? Bool == false)
            let requests = try #require(report["requests"] as? Int)
            let fetched = try #require(report["fetched_bytes"] as? Int)
            #expect(requests <= 3)
            // The head, the box headers after mdat (some of the free box, if the moov is small), the moov.
            #expect(
                fetched <= moov.range.count + 512 << 10 + 64 << 10, "fetched \(fetched), moov is \(moov.range.count)")
        }
    }

    @Test func anUnfinishedDownloadWithoutItsMoovIsStillAnMP4() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, directory in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            origin.publish("/clip.mp4", bytes, behavior: throttled(128 << 10))
            let output = directory + "/clip.mp4"
            // One connection from the start: the head arrives, the moov at the end does not.
            let partial = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "1"]) {
                guard FileManager.default.fileExists(atPath: output + ".vfetch") else { return false }
                let probe = runBlocking(vfetchBinary, ["info", output, "--json"])
                let report = try? JSONSerialization.jsonObject(with: Data(probe.standardOutput.utf8)) as? [String: Any]
                // Saved up to the moov: the head is on disk, the needed range starts past it.
                return ((report?["needs"] as? [Int])?.first ?? 0) > 0
            }
            #expect(partial.status == 130, "stderr: \(partial.standardError)")
            let run = try await vfetch(["info", output, "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let report = try json(run.standardOutput)
            let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
            #expect(report["needs"] as? [Int] == [moov.range.lowerBound, moov.range.upperBound])
            #expect(report["container"] as? String == "mp4")
            #expect(report["faststart"] as? Bool == false)
            #expect(report["duration"] is NSNull)
            let text = try await vfetch(["info", output])
            #expect(text.standardOutput.contains("container:  mp4 (moov at the end)"), "\(text.standardOutput)")
        }
    }

    @Test func aPathThatDoesNotExistSaysSo() async throws {
        let path = NSTemporaryDirectory() + "vfetch-missing-\(getpid())/missing.mp4"
        let run = try await vfetch(["info", path])
        #expect(run.status == 1, "stderr: \(run.standardError)")
        #expect(run.standardError == "vfetch: \(path) does not exist\n")
        #expect(run.standardOutput.isEmpty)
    }

    @Test func aFinishedFileIsPlayableThroughout() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        let run = try await vfetch(["info", path, "--json"])
        #expect(run.status == 0, "stderr: \(run.standardError)")
        let report = try json(run.standardOutput)
        let duration = try #require(report["duration"] as? Double)
        #expect(abs(duration - 12) < 0.2)
        #expect(report["downloaded"] as? Double == 1)
        let playable = try #require(report["playable"] as? [[Double]])
        #expect(playable.count == 1 && playable[0][0] < 0.1 && abs(playable[0][1] - duration) < 0.2)
    }

    @Test func anUnfinishedDownloadShowsWhatItCanPlay() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, directory in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 128 << 10
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let output = directory + "/clip.mp4"
            // --stream fetches the moov at once and then plays forward: stop it as soon as `info`
            // sees something playable (at 512 KiB/s the whole file would take 6 s).
            let partial = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--playback-order", "-c", "4"]) {
                guard FileManager.default.fileExists(atPath: output + ".vfetch") else { return false }
                let probe = runBlocking(vfetchBinary, ["info", output, "--json"])
                let report = try? JSONSerialization.jsonObject(with: Data(probe.standardOutput.utf8)) as? [String: Any]
                return (report?["playable"] as? [[Double]])?.isEmpty == false
            }
            #expect(partial.status == 130, "stderr: \(partial.standardError)")
            let run = try await vfetch(["info", output, "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let report = try json(run.standardOutput)
            let downloaded = try #require(report["downloaded"] as? Double)
            #expect(downloaded > 0 && downloaded < 1)
            let playable = try #require(report["playable"] as? [[Double]])
            // The moov came first, so the start plays; the end of the file is not there yet.
            #expect(playable.first?[0] ?? 99 < 0.1, "playable: \(playable)")
            #expect((playable.first?[1] ?? 99) < 11, "playable: \(playable)")
            #expect(report["needs"] is NSNull)
        }
    }

    /// The video frames ffmpeg decodes from `path` between `start` and `end` seconds, as framemd5 lines.
    func decodedFrames(_ path: String, from start: Double, to end: Double) async throws -> [Substring] {
        let run = try await run(
            "/usr/bin/env",
            [
                "ffmpeg", "-hide_banner", "-loglevel", "quiet", "-nostdin", "-ss", String(start), "-i", path, "-t",
                String(end - start), "-map", "0:v", "-f", "framemd5", "-",
            ])
        return run.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }
    }

    @Test func anUnfinishedPartIsNeverCompleteAndPlaysWhatFFmpegDecodesFromItsBytes() async throws {
        let path = try #require(await Self.faststart.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, directory in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            origin.publish("/clip.mp4", bytes, behavior: throttled(96 << 10))
            let output = directory + "/clip.mp4"
            // Four connections fill four runs of the file side by side: a sparse part with holes.
            let partial = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "4"]) {
                let status = runBlocking(vfetchBinary, ["status", output, "--json"])
                let object = try? JSONSerialization.jsonObject(with: Data(status.standardOutput.utf8)) as? [String: Any]
                let ranges = object?["done_ranges"] as? [[Int]] ?? []
                return ranges.count >= 2 && ranges.reduce(0) { $0 + $1[1] - $1[0] } >= bytes.count / 4
            }
            #expect(partial.status == 130, "stderr: \(partial.standardError)")
            let status = try json(try await vfetch(["status", output, "--json"]).standardOutput)
            let saved = try #require(status["done_ranges"] as? [[Int]])
            #expect(saved.count >= 2 && saved.last?[1] ?? 0 < bytes.count, "\(saved)")

            // Named by its output path or by its part: the manifest decides what is there.
            var playable: [[Double]] = []
            for target in [output, output + ".part"] {
                let run = try await vfetch(["info", target, "--json"])
                #expect(run.status == 0, "\(target): \(run.standardError)")
                let report = try json(run.standardOutput)
                #expect(report["complete"] as? Bool == false, "\(target): \(run.standardOutput)")
                #expect(report["present"] as? [[Int]] == saved, "\(target): \(run.standardOutput)")
                #expect((report["downloaded"] as? Double ?? 1) < 1, "\(target): \(run.standardOutput)")
                playable = try #require(report["playable"] as? [[Double]])
                #expect(!playable.isEmpty, "\(target): \(run.standardOutput)")
            }
            let text = try await vfetch(["info", output + ".part"])
            #expect(
                text.standardOutput.contains("(unfinished)") && text.standardOutput.contains("present:    0-"), "\(text.standardOutput)")

            // What ffmpeg decodes from the bytes present alone (the rest zeros) is, over each range
            // called playable, exactly what it decodes from the whole file.
            var copy = [UInt8](repeating: 0, count: bytes.count)
            let part = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + ".part")))
            for range in saved { copy.replaceSubrange(range[0]..<range[1], with: part[range[0]..<range[1]]) }
            let copyPath = directory + "/present-only.mp4"
            try Data(copy).write(to: URL(fileURLWithPath: copyPath))
            var framesCompared = 0
            for range in playable {
                #expect(range[0] >= 0 && range[1] <= 12.1 && range[0] < range[1], "\(playable)")
                // (Just past the range's keyframe, so a seek lands on it and not on the one before; a range
                // one frame long then decodes to nothing from either file, so frames are counted over all.)
                let (start, end) = (range[0] + 0.01, range[1])
                let fromPresent = try await decodedFrames(copyPath, from: start, to: end)
                let fromWhole = try await decodedFrames(path, from: start, to: end)
                framesCompared += fromWhole.count
                #expect(fromPresent == fromWhole, "playable \(range) decodes differently from the present bytes")
            }
            #expect(framesCompared > 0, "\(playable)")
            // And the holes matter: the present bytes alone do not decode as the whole file does.
            #expect(try await decodedFrames(copyPath, from: 0, to: 12) != decodedFrames(path, from: 0, to: 12))
        }
    }

    @Test func aSparsePartWithoutItsManifestIsRefused() async throws {
        let path = try #require(await Self.faststart.file(), "ffmpeg could not make the fixture")
        try await withOrigin { _, directory in
            // The head of a file and a hole to its length, as an unfinished get leaves it, but no manifest.
            let part = directory + "/clip.mp4.part"
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            try bytes.prefix(256 << 10).write(to: URL(fileURLWithPath: part))
            let handle = try #require(FileHandle(forWritingAtPath: part))
            try handle.truncate(atOffset: UInt64(bytes.count))
            try handle.close()
            let run = try await vfetch(["info", part, "--json"])
            #expect(run.status == 1, "\(run.standardOutput) \(run.standardError)")
            #expect(run.standardError.contains("clip.mp4.vfetch is missing"), "\(run.standardError)")
            #expect(run.standardOutput.isEmpty)
        }
    }

    @Test func streamFetchesTheTailAtOnceAndTheResultIsExact() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, directory in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 1 << 20
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/clip.mp4", "--stream"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            #expect(try sha256(file: directory + "/clip.mp4") == sha256(bytes))
            // At t=0, before the length is known, the head and the last 512 KiB (where the moov is) are
            // asked for side by side; the head's connection goes on, never asked for again.
            let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
            #expect(moov.range.lowerBound >= bytes.count - (512 << 10))
            let ranges = origin.requests.compactMap { $0.header("range") }
            // (A suffix range is asked only before the length is known. Which of the two the origin sees
            // first, and whether the exact index's request comes between, is the scheduler's.)
            #expect(ranges.contains("bytes=0-") && ranges.contains("bytes=-\(512 << 10)"), "ranges: \(ranges)")
            let starts = ranges.compactMap { Int($0.dropFirst("bytes=".count).split(separator: "-").first ?? "") }
            // (Split points are at least 64 KiB in; a stopped head would be asked again from its first bytes.)
            #expect(!starts.contains { $0 > 0 && $0 < 64 << 10 }, "the head was not asked again: \(ranges)")
        }
    }

    @Test func streamSaysHowFarItCanPlayWhileItDownloads() async throws {
        let path = try #require(await Self.moovAtEnd.file(), "ffmpeg could not make the fixture")
        try await withOrigin { origin, directory in
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            // 2 connections at 512 KiB/s: about 3 s. The index comes first, and a line says so when it plays.
            origin.publish("/clip.mp4", bytes, behavior: throttled(512 << 10))
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/clip.mp4", "--stream", "-c", "2"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let line = run.standardError.split(separator: "\n").first { $0.contains("playable to ") }
            #expect(line != nil, "stderr: \(run.standardError)")
            #expect(try sha256(file: directory + "/clip.mp4") == sha256(bytes))
        }
    }

    @Test func garbageIsAClearErrorWithItsOwnExitCode() async throws {
        let path = NSTemporaryDirectory() + "vfetch-garbage-\(getpid()).mp4"
        try Data(randomBytes(100_000, seed: 51)).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try await vfetch(["info", path])
        #expect(run.status == 12, "stderr: \(run.standardError)")
        #expect(run.standardError.split(separator: "\n").count == 1)
        #expect(run.standardError.hasPrefix("vfetch: "))
    }
}
