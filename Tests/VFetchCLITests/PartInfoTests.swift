import Foundation
import TestOrigin
import Testing
import VFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch info` on an unfinished download: the bytes its manifest records (never the part's extent),
/// and time ranges that are what ffmpeg decodes from those bytes.
@Suite struct PartInfoTests {
    /// The 12 s clip of `InfoTests` as Matroska (its Cues at the end), made once per run.
    static let matroska = MadeOnce(
        "info-matroska.mkv",
        ffmpeg: [
            "-f", "lavfi", "-i",
            "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-b:v", "2M", "-c:a", "aac",
        ])

    /// The frame rate of every fixture: one frame is 40 ms, one GOP (`-g 25`) a second.
    static let frame = 1.0 / 25
    static let gop = 1.0

    /// Leaves an unfinished download of `bytes` from `url` at `output`, as `vfetch get` leaves one:
    /// `NAME.part` at the full length, holding the bytes of `present` and holes elsewhere, and its
    /// manifest, written by the manifest's own code, bound to that part (its device and inode, a tag
    /// of each complete block) and recording the rest of each range as partial blocks.
    static func leaveUnfinished(
        _ bytes: [UInt8], present: [Range<Int>], url: String, etag: String? = nil, at output: String
    ) throws {
        let part = output + ".part"
        #expect(FileManager.default.createFile(atPath: part, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: part))
        try handle.truncate(atOffset: UInt64(bytes.count))
        for range in present {
            try handle.seek(toOffset: UInt64(range.lowerBound))
            try handle.write(contentsOf: bytes[range])
        }
        try handle.synchronize()
        try handle.close()

        let length = Int64(bytes.count)
        let saved = ByteRangeSet(present.map { Int64($0.lowerBound)..<Int64($0.upperBound) })
        var blocks = BlockBitmap(length: length, blockSize: BlockBitmap.blockSize(forLength: length))
        blocks.mark(coveredBy: saved)
        func tag(_ range: Range<Int64>) -> UInt32 {
            BlockTag.of(BlockTag.sampled(range).flatMap { bytes[Int($0.lowerBound)..<Int($0.upperBound)] })
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: part)
        let identity = PartIdentity(
            device: try #require(attributes[.systemNumber] as? NSNumber).uint64Value,
            inode: try #require(attributes[.systemFileNumber] as? NSNumber).uint64Value)
        let manifest = Manifest(
            url: url, finalURL: url, length: length, etag: etag, lastModified: nil,
            contentType: "video/mp4", created: Date(), blocks: blocks, part: identity,
            tags: Dictionary(uniqueKeysWithValues: blocks.completeBlocks.map { ($0, tag(blocks.range(of: $0))) }),
            partialBlocks: blocks.incompleteParts(of: saved).map { PartialBlock(range: $0, tag: tag($0)) })
        try Data(manifest.encoded()).write(to: URL(fileURLWithPath: output + ".vfetch"))
    }

    /// The ETag `url` answers with, as curl sees it.
    static func etag(of url: String) async throws -> String {
        let run = try await run("/usr/bin/env", ["curl", "-s", "--noproxy", "*", "-r", "0-0", "-D", "-", "-o", "/dev/null", url])
        let line = run.standardOutput.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }
        return try #require(line).dropFirst("etag:".count).trimmingCharacters(in: .whitespaces)
    }

    /// `bytes` with every byte outside `present` zeroed: what a player reading the part gets.
    static func presentOnly(_ bytes: [UInt8], _ present: [Range<Int>]) -> [UInt8] {
        var copy = [UInt8](repeating: 0, count: bytes.count)
        for range in present { copy.replaceSubrange(range, with: bytes[range]) }
        return copy
    }

    /// The audio and video frames ffmpeg decodes from `path`, per stream: presentation time in
    /// seconds → MD5 of the decoded frame. Frames pass as decoded (none repeated, none dropped).
    static func decodedFrames(_ path: String) async throws -> [Int: [(time: Double, hash: Substring)]] {
        let run = try await run(
            "/usr/bin/env",
            [
                "ffmpeg", "-hide_banner", "-loglevel", "quiet", "-nostdin", "-i", path, "-map", "0:v", "-map", "0:a",
                "-fps_mode", "passthrough", "-f", "framemd5", "-",
            ])
        var timeBases: [Int: Double] = [:]
        var frames: [Int: [(time: Double, hash: Substring)]] = [:]
        for line in run.standardOutput.split(separator: "\n") {
            if line.hasPrefix("#tb ") {
                // "#tb 0: 1/25"
                let parts = line.dropFirst(4).split(whereSeparator: { $0 == ":" || $0 == "/" || $0 == " " })
                if parts.count == 3, let stream = Int(parts[0]), let num = Double(parts[1]), let den = Double(parts[2]) {
                    timeBases[stream] = num / den
                }
                continue
            }
            guard !line.hasPrefix("#") else { continue }
            // "stream, dts, pts, duration, size, hash"
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 6, let stream = Int(fields[0]), let pts = Double(fields[2]), let base = timeBases[stream]
            else { continue }
            frames[stream, default: []].append((pts * base, Substring(fields[5])))
        }
        return frames
    }

    /// How far playback from 0 goes in `copy` as ffmpeg decodes it: the time of the first frame, of any
    /// stream, that the whole file has and `copy` lacks or decodes differently; nil when there is none.
    static func decodesUntil(_ copy: [Int: [(time: Double, hash: Substring)]], whole: [Int: [(time: Double, hash: Substring)]])
        -> Double?
    {
        var first: Double?
        for (stream, frames) in whole {
            let decoded = Dictionary((copy[stream] ?? []).map { ($0.time, $0.hash) }, uniquingKeysWith: { a, _ in a })
            if let bad = frames.first(where: { decoded[$0.time] != $0.hash }) {
                first = min(first ?? bad.time, bad.time)
            }
        }
        return first
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The shape `--json` promises: `present` as sorted, disjoint `[start, end]` byte pairs within the
    /// file, `playable` as sorted, disjoint `[from, to]` second pairs within the duration.
    func checkShape(_ report: [String: Any], length: Int, duration: Double) throws {
        let present = try #require(report["present"] as? [[Int]], "present: \(report["present"] ?? "none")")
        #expect(present.allSatisfy { $0.count == 2 && $0[0] < $0[1] }, "\(present)")
        #expect(zip(present, present.dropFirst()).allSatisfy { $0[1] < $1[0] }, "\(present)")
        #expect(present.allSatisfy { $0[0] >= 0 && $0[1] <= length }, "\(present)")
        let playable = try #require(report["playable"] as? [[Double]], "playable: \(report["playable"] ?? "none")")
        #expect(playable.allSatisfy { $0.count == 2 && $0[0] < $0[1] }, "\(playable)")
        #expect(zip(playable, playable.dropFirst()).allSatisfy { $0[1] < $1[0] }, "\(playable)")
        #expect(playable.allSatisfy { $0[0] >= 0 && $0[1] <= duration + Self.frame }, "\(playable)")
    }

    enum Fixture: String, CaseIterable, CustomTestStringConvertible {
        case faststart, moovAtEnd, matroska
        var testDescription: String { rawValue }
        var path: String? {
            get async {
                switch self {
                case .faststart: await InfoTests.faststart.file()
                case .moovAtEnd: await InfoTests.moovAtEnd.file()
                case .matroska: await PartInfoTests.matroska.file()
                }
            }
        }
    }

    /// The target of issue 17: for 10 cut points `c` drawn from a seeded generator, a part holding the
    /// file's bytes up to `c` (and, for a `moov` at the end, the `moov`, which `get --stream` fetches
    /// first) is playable from 0 exactly as far as ffmpeg decodes the same bytes, the rest zeroed.
    ///
    /// ffmpeg's end is the time of the first frame it decodes wrongly or not at all. The probe ends a
    /// playable run at the first sample that is not wholly present; the last sample cut short may still
    /// decode unchanged when only its last bytes are missing, so the two may differ by one frame. In
    /// Matroska the probe knows clusters, not samples: a run ends where the cluster cut short starts,
    /// while ffmpeg decodes into that cluster, so the probe may say up to one cluster (a GOP here) less,
    /// and never more.
    @Test(arguments: Fixture.allCases)
    func aPrefixPlaysAsFarAsFFmpegDecodesIt(_ fixture: Fixture) async throws {
        let path = try #require(await fixture.path, "ffmpeg could not make the fixture")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let whole = try await Self.decodedFrames(path)
        #expect(whole.count == 2 && whole.values.allSatisfy { $0.count > 100 }, "ffmpeg decoded \(whole.mapValues(\.count))")
        let duration = try #require(whole[0]?.last).time + Self.frame
        // A moov at the end is fetched first by `get --stream`; the cut points fall in the media data.
        let boxes = topLevelBoxes(bytes)
        let moov = fixture == .moovAtEnd ? try #require(boxes.first { $0.type == "moov" }).range : nil
        let media = fixture == .matroska ? (64 << 10)..<bytes.count : try #require(boxes.first { $0.type == "mdat" }).range
        var generator = SeededGenerator(seed: 17)
        let cuts = (0..<10).map { _ in Int.random(in: media.lowerBound..<media.upperBound, using: &generator) }.sorted()
        try await withOrigin { origin, directory in
            for (number, cut) in cuts.enumerated() {
                let present = [0..<cut] + (moov.map { [$0] } ?? [])
                let output = directory + "/cut\(number).\(fixture == .matroska ? "mkv" : "mp4")"
                try Self.leaveUnfinished(bytes, present: present, url: origin.url("/clip"), at: output)
                let run = try await vfetch(["info", output + ".part", "--json"])
                #expect(run.status == 0, "cut at \(cut): \(run.standardError)")
                let report = try json(run.standardOutput)
                try checkShape(report, length: bytes.count, duration: duration)
                #expect(report["present"] as? [[Int]] == present.map { [$0.lowerBound, $0.upperBound] }, "cut at \(cut)")
                #expect(report["complete"] as? Bool == false)
                let playable = try #require(report["playable"] as? [[Double]])
                let fromStart = playable.first.flatMap { $0[0] < Self.frame ? $0[1] : nil } ?? 0

                let copy = directory + "/copy\(number)"
                try Data(Self.presentOnly(bytes, present)).write(to: URL(fileURLWithPath: copy))
                let decoded = Self.decodesUntil(try await Self.decodedFrames(copy), whole: whole) ?? duration
                let slack = 0.001
                let shortfall = fixture == .matroska ? Self.gop + Self.frame : Self.frame
                #expect(
                    fromStart <= decoded + Self.frame + slack && fromStart >= decoded - shortfall - slack,
                    "cut at \(cut) of \(bytes.count): info plays from 0 to \(fromStart) s, ffmpeg decodes to \(decoded) s; playable \(playable)"
                )
            }
        }
    }

    @Test func aPartWithTwoIslandsShowsBothAndResumesFromThem() async throws {
        let path = try #require(await InfoTests.faststart.file(), "ffmpeg could not make the fixture")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let whole = try await Self.decodedFrames(path)
        let duration = try #require(whole[0]?.last).time + Self.frame
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", bytes)
            let output = directory + "/clip.mp4"
            let islands = [0..<bytes.count * 3 / 10, bytes.count * 6 / 10..<bytes.count * 9 / 10]
            let etag = try await Self.etag(of: origin.url("/clip.mp4"))
            try Self.leaveUnfinished(bytes, present: islands, url: origin.url("/clip.mp4"), etag: etag, at: output)
            // Named by its output path or by its part: the manifest says what is there.
            for target in [output, output + ".part"] {
                let run = try await vfetch(["info", target, "--json"])
                #expect(run.status == 0, "\(target): \(run.standardError)")
                let report = try json(run.standardOutput)
                try checkShape(report, length: bytes.count, duration: duration)
                #expect(report["present"] as? [[Int]] == islands.map { [$0.lowerBound, $0.upperBound] })
                #expect(report["complete"] as? Bool == false)
                let downloaded = Double(islands.reduce(0) { $0 + $1.count }) / Double(bytes.count)
                #expect((report["downloaded"] as? Double).map { abs($0 - downloaded) < 1e-9 } == true)
                // Each island plays on its own: the second from its first keyframe, 1 s apart at most.
                let playable = try #require(report["playable"] as? [[Double]])
                #expect(playable.count == 2, "\(playable)")
                #expect(playable.first?[0] == 0, "\(playable)")
                #expect(
                    playable.last.map { $0[0] > 3 && $0[0] < 3 * duration / 5 + Self.gop && $0[1] < duration - 1 } == true,
                    "\(playable)")
            }
            let text = try await vfetch(["info", output])
            #expect(text.standardOutput.contains("(unfinished)"), "\(text.standardOutput)")
            #expect(
                text.standardOutput.contains("present:    0-\(islands[0].upperBound - 1) "), "\(text.standardOutput)")

            // The manifest is one `get` takes up: it fetches only the gaps, and the file is whole.
            let resumed = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--json"])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(
                resumed.standardOutput.contains("\"resumed_bytes\":\(islands.reduce(0) { $0 + $1.count })"), "\(resumed.standardOutput)")
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test func aPartWithoutItsManifestIsNeverCalledComplete() async throws {
        let path = try #require(await InfoTests.faststart.file(), "ffmpeg could not make the fixture")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try await withOrigin { _, directory in
            // Every byte there and no hole (a preallocated part, or one copied with its holes filled),
            // but no manifest: which bytes arrived cannot be known.
            let output = directory + "/clip.mp4"
            try bytes.write(to: URL(fileURLWithPath: output + ".part"))
            for target in [output + ".part", output] {
                let run = try await vfetch(["info", target, "--json"])
                #expect(run.status == 1, "\(target): \(run.standardOutput) \(run.standardError)")
                #expect(
                    run.standardError
                        == "vfetch: unreadable manifest: \(output).vfetch is missing, so which bytes of \(output).part were saved cannot be known\n"
                )
                #expect(run.standardOutput.isEmpty)
            }
        }
    }

    @Test func aManifestOfAnotherFileOrADamagedOneIsNotTrusted() async throws {
        let path = try #require(await InfoTests.faststart.file(), "ffmpeg could not make the fixture")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try await withOrigin { origin, directory in
            let output = directory + "/clip.mp4"
            try Self.leaveUnfinished(bytes, present: [0..<bytes.count / 2], url: origin.url("/clip.mp4"), at: output)
            #expect(try await vfetch(["info", output, "--json"]).status == 0)

            // The part replaced by a copy of itself whose holes were filled: another file, every byte
            // there, and the manifest's bitmap says nothing about the copy.
            let part = output + ".part"
            try FileManager.default.moveItem(atPath: part, toPath: part + ".old")
            try Data(Self.presentOnly(bytes, [0..<bytes.count])).write(to: URL(fileURLWithPath: part))
            var run = try await vfetch(["info", part, "--json"])
            #expect(run.status == 1, "\(run.standardOutput) \(run.standardError)")
            #expect(
                run.standardError
                    == "vfetch: unreadable manifest: \(output).vfetch cannot vouch for \(part): the manifest was written for another file (the part was copied or replaced)\n"
            )
            #expect(run.standardOutput.isEmpty)

            // Cut short: the manifest's length is no longer the part's.
            try FileManager.default.removeItem(atPath: part)
            try FileManager.default.moveItem(atPath: part + ".old", toPath: part)
            let handle = try #require(FileHandle(forWritingAtPath: part))
            try handle.truncate(atOffset: UInt64(bytes.count / 2))
            try handle.close()
            run = try await vfetch(["info", output, "--json"])
            #expect(run.status == 1, "\(run.standardOutput) \(run.standardError)")
            #expect(run.standardError.contains("the part is \(bytes.count / 2) bytes and the manifest says \(bytes.count)"))

            // A damaged manifest, and a missing part: one line each, never a crash.
            var manifest = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + ".vfetch")))
            manifest[10] ^= 0x01
            try Data(manifest).write(to: URL(fileURLWithPath: output + ".vfetch"))
            run = try await vfetch(["info", part, "--json"])
            #expect(run.status == 1, "\(run.standardOutput) \(run.standardError)")
            #expect(run.standardError.hasPrefix("vfetch: unreadable manifest: \(output).vfetch: "), "\(run.standardError)")
            #expect(run.standardError.split(separator: "\n").count == 1)
            try Self.leaveUnfinished(bytes, present: [0..<1000], url: origin.url("/clip.mp4"), at: output)
            try FileManager.default.removeItem(atPath: part)
            run = try await vfetch(["info", output, "--json"])
            #expect(run.status == 1, "\(run.standardOutput) \(run.standardError)")
            #expect(
                run.standardError
                    == "vfetch: unreadable manifest: \(output).vfetch has no part to vouch for: \(part): No such file or directory\n")
            #expect(run.standardError.split(separator: "\n").count == 1)
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing cut point comes back on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
