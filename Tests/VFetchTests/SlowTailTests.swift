import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// A few slow connections must not set the pace of a download's end: once the fast ones have nothing
/// left to split, the slow ones are raced or replaced.
@Suite struct SlowTailTests {
    static let mib = 1 << 20
    /// Where splits fall; a request starting anywhere else continues a transfer that was stopped.
    static let alignment: Int64 = 64 << 10

    /// The first byte a ranged GET asked for (`bytes=a-b` or `bytes=a-`).
    func start(of request: OriginRequest) -> Int64? {
        guard let range = request.header("range"), range.hasPrefix("bytes=") else { return nil }
        return Int64(range.dropFirst(6).prefix { $0 != "-" })
    }

    /// The bytes a ranged GET asked for, when it names its end.
    func range(of request: OriginRequest) -> Range<Int64>? {
        guard let first = start(of: request), let dash = request.header("range")?.firstIndex(of: "-"),
            let last = Int64(request.header("range")![dash...].dropFirst())
        else { return nil }
        return first..<(last + 1)
    }

    @Test func aSlowConnectionAtTheEndIsRacedOrReplaced() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 * Self.mib, seed: 21)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 2 * Self.mib
            // One connection in four crawls: left alone, its last segment alone would take over 15 s.
            behavior.slowConnectionEvery = 4
            behavior.slowBytesPerSecond = 16 << 10
            origin.publish("/tail.bin", bytes, behavior: behavior)
            var options = DownloadOptions()
            // 8 connections, all opened at once; the controller only closes some where the link may be shared,
            // after two seconds: without drops only a race or a replacement asks for a segment again from
            // where a transfer stood.
            options.connections = 8
            options.minSplitSize = 256 << 10
            let output = directory + "/tail.bin"
            let summary = try await fetch(origin.url("/tail.bin"), to: .file(output), options: options).result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.bytes == Int64(bytes.count))
            // A race costs what the straggler had left at most, never a second copy of the file.
            #expect(summary.duplicateBytes < Int64(bytes.count / 4), "\(summary.duplicateBytes) bytes dropped")
            let gets = origin.requests.filter { $0.method == "GET" }
            let slow = gets.filter { $0.connection % 4 == 0 }.compactMap(range(of:))
            try #require(!slow.isEmpty, "a segment went to a slow connection")
            let continued = gets.compactMap(start(of:)).filter { $0 % Self.alignment != 0 }
            let asked = gets.compactMap { $0.header("range") }
            #expect(
                continued.contains { offset in slow.contains { $0.contains(offset) } },
                "the rest of a slow connection's segment was asked for again: \(asked)")
        }
    }
}
