import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch get --stream` asks for a container's index by its exact range as soon as the head says
/// where it is: an MP4's trailing `moov`, a fragmented MP4's `mfra` (through the `mfro` that ends it),
/// a Matroska or WebM file's `Cues`. Each against the real origin, each file checked whole.
@Suite struct IndexFirstTests {
    enum Container: String, CaseIterable, CustomStringConvertible {
        case moovAtEnd = "moov-at-end.mp4"
        case faststart = "faststart.mp4"
        case fragmented = "fragmented.mp4"
        case matroska = "movie.mkv"
        case webm = "movie.webm"

        var description: String { rawValue }

        var arguments: [String] {
            let h264 = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-b:v", "2M", "-c:a", "aac"]
            switch self {
            case .moovAtEnd: return h264 + ["-f", "mp4"]
            case .faststart: return h264 + ["-movflags", "+faststart", "-f", "mp4"]
            case .fragmented: return h264 + ["-movflags", "frag_keyframe+empty_moov", "-f", "mp4"]
            case .matroska: return h264 + ["-f", "matroska"]
            case .webm:
                return ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "2M", "-c:a", "libopus", "-f", "webm"]
            }
        }

        /// 12 s of test picture and tone, made with ffmpeg once per run (off the cooperative pool: the
        /// encode takes seconds, and the suites running beside it need those threads).
        func make() async throws -> [UInt8] { try await Fixtures.shared.bytes(of: self) }

        /// Where the index starts, read from the bytes by hand (not by vfetch's code): the requests
        /// that must start there, in order.
        func indexRequests(in bytes: [UInt8]) -> [Int] {
            switch self {
            case .moovAtEnd, .faststart:
                return topLevelBoxes(bytes).filter { $0.type == "moov" }.map(\.range.lowerBound)
            case .fragmented:
                let mfra = topLevelBoxes(bytes).first { $0.type == "mfra" }
                return [bytes.count - 16] + (mfra.map { [$0.range.lowerBound] } ?? [])
            case .matroska, .webm:
                // The Cues element's ID; ffmpeg writes Cues after the last cluster.
                let id: [UInt8] = [0x1C, 0x53, 0xBB, 0x6B]
                let start = (0...(bytes.count - 4)).last { Array(bytes[$0..<$0 + 4]) == id }
                return start.map { [$0] } ?? []
            }
        }
    }

    @Test(arguments: Container.allCases)
    func theIndexIsAskedForExactlyAndEarly(_ container: Container) async throws {
        let bytes = try await container.make()
        let index = container.indexRequests(in: bytes)
        try #require(!index.isEmpty, "the fixture has no index where \(container) keeps it")
        try await withOrigin { origin, directory in
            origin.publish("/" + container.rawValue, bytes, behavior: throttled(256 << 10))
            let output = directory + "/" + container.rawValue
            let run = try await vfetch(["get", origin.url("/" + container.rawValue), "-o", output, "--stream", "-c", "4"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            let starts = origin.requests.compactMap { request -> Int? in
                guard let range = request.header("range"), range.hasPrefix("bytes="), !range.hasPrefix("bytes=-") else { return nil }
                return Int(range.dropFirst("bytes=".count).prefix { $0 != "-" })
            }
            if container == .faststart {
                // The moov is in the head: the head's request brings it, and nobody asks for it again.
                let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
                #expect(starts.first == 0)
                #expect(!starts.contains { $0 > 0 && $0 < moov.range.upperBound }, "moov asked again: \(starts)")
                return
            }
            // Each index byte is asked for among the first few requests: the head, the tail asked beside it,
            // then a request from the index's first byte (a connection busy with the first window may answer
            // first), unless an early request for a segment already covers it (on a busy machine the index's
            // lookup can come after the engine started the file's last segment).
            let ranges = origin.requests.compactMap { request -> ClosedRange<Int>? in
                guard let range = request.header("range"), range.hasPrefix("bytes="), !range.hasPrefix("bytes=-") else { return nil }
                let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
                guard let first = Int(bounds[0]) else { return nil }
                return first...(bounds.count > 1 ? Int(bounds[1]) ?? Int.max : Int.max)
            }
            let early = Array(ranges.prefix(8))
            for offset in index {
                #expect(early.contains { $0.contains(offset) }, "no early request for \(offset): \(ranges.prefix(12))")
            }
        }
    }

    /// `vfetch info URL` finds the index with the same lookup: the head, then one request from the
    /// index's first byte.
    @Test(arguments: [Container.moovAtEnd, .matroska, .webm])
    func infoAsksForTheSameRange(_ container: Container) async throws {
        let bytes = try await container.make()
        let index = try #require(container.indexRequests(in: bytes).first)
        try await withOrigin { origin, _ in
            origin.publish("/" + container.rawValue, bytes)
            let run = try await vfetch(["info", origin.url("/" + container.rawValue), "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let ranges = origin.requests.compactMap { $0.header("range") }
            #expect(ranges.count <= 3 && ranges.dropFirst().first?.hasPrefix("bytes=\(index)-") == true, "ranges: \(ranges)")
        }
    }

    /// A moov whose header claims more bytes than the file has, and a SeekHead that points past the
    /// end: the download goes on in playback order, says so once, and the file is whole.
    @Test(arguments: [Container.moovAtEnd, .matroska])
    func anIndexThatCannotBeRightFallsBackToPlaybackOrder(_ container: Container) async throws {
        var bytes = try await container.make()
        switch container {
        case .moovAtEnd:
            let moov = try #require(topLevelBoxes(bytes).first { $0.type == "moov" })
            bytes.replaceSubrange(moov.range.lowerBound..<moov.range.lowerBound + 4, with: [0x7F, 0xFF, 0xFF, 0xFF])
        default:
            // The Seek entry naming the Cues: its SeekPosition follows, an unsigned of up to 8 bytes.
            let seekID: [UInt8] = [0x53, 0xAB, 0x84, 0x1C, 0x53, 0xBB, 0x6B]
            let at = try #require((0..<4096).first { Array(bytes[$0..<$0 + seekID.count]) == seekID })
            let position = at + seekID.count
            try #require(bytes[position] == 0x53 && bytes[position + 1] == 0xAC, "the SeekPosition does not follow the SeekID")
            let size = Int(bytes[position + 2] & 0x7F)
            bytes.replaceSubrange(position + 3..<position + 3 + size, with: [UInt8](repeating: 0xFF, count: size))
        }
        try await withOrigin { origin, directory in
            origin.publish("/" + container.rawValue, bytes, behavior: throttled(1 << 20))
            let output = directory + "/" + container.rawValue
            let run = try await vfetch(["get", origin.url("/" + container.rawValue), "-o", output, "--stream", "-c", "4"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            let notices = run.standardError.split(separator: "\n").filter { $0.contains("index cannot be right") }
            #expect(notices.count == 1, "stderr: \(run.standardError)")
        }
    }
}

/// Each container's fixture, made once (cases that want the same one at once share its making).
private actor Fixtures {
    static let shared = Fixtures()
    private var made: [IndexFirstTests.Container: Task<[UInt8], any Error>] = [:]

    func bytes(of container: IndexFirstTests.Container) async throws -> [UInt8] {
        if let task = made[container] { return try await task.value }
        let task = Task {
            let path = NSTemporaryDirectory() + "vfetch-index-first-\(getpid())-" + container.rawValue
            defer { try? FileManager.default.removeItem(atPath: path) }
            let arguments =
                [
                    "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
                ] + container.arguments + [path]
            let made = try await run("/usr/bin/env", arguments)
            try #require(made.status == 0, "ffmpeg could not make \(container): \(made.standardError)")
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        made[container] = task
        return try await task.value
    }
}
