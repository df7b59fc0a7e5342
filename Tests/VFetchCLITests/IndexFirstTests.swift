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

        /// 12 s of test picture and tone, made with ffmpeg once per run.
        func make() throws -> [UInt8] {
            let path = NSTemporaryDirectory() + "vfetch-index-first-\(getpid())-" + rawValue
            defer { try? FileManager.default.removeItem(atPath: path) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments =
                [
                    "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "12",
                ] + arguments + [path]
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "ffmpeg could not make \(rawValue)")
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }

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
        let bytes = try container.make()
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
            // Each exact request comes among the first few: the head, the tail asked beside it, then these
            // (a connection busy with the first window may answer first).
            let early = Array(starts.prefix(8))
            for offset in index {
                #expect(early.contains(offset), "no early request from \(offset): \(starts.prefix(12))")
            }
        }
    }
}
