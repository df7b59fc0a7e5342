import Foundation
import Testing

@testable import VFetchStreams

@Suite struct StreamManifestTests {
    static let resources = (0..<3).map { MediaResource(url: URL(string: "https://cdn.example/seg\($0).ts")!) }

    @Test func aManifestReadsBackAsWritten() throws {
        let manifest = StreamManifest(
            source: "https://cdn.example/master.m3u8", fingerprint: StreamManifest.fingerprint(of: Self.resources), fetches: 3,
            kept: [.init(fetch: 0, size: 1_000, tag: 7), .init(fetch: 2, size: 12, tag: 0xFFFF_FFFF)])
        #expect(StreamManifest.decode(manifest.encoded()) == manifest)
    }

    static let held = StreamManifest.Held(
        fetch: 1, length: 5_000, validator: "Tue, 03 Nov 2026 10:00:00 GMT",
        runs: [.init(range: 0..<1_000, tag: 3), .init(range: 2_000..<2_500, tag: 0xFFFF_FFFF)])

    @Test func heldBytesReadBackTheLatestCountingUntilTheFetchIsKept() throws {
        var manifest = StreamManifest(source: "s", fingerprint: "f", fetches: 3, held: [1: Self.held])
        #expect(StreamManifest.decode(manifest.encoded()) == manifest)
        // A later checkpoint's line replaces an earlier one; a kept line ends what was held.
        var later = Self.held
        later.runs[1].range = 2_000..<4_000
        let bytes = manifest.encoded() + StreamManifest.line(later)
        #expect(StreamManifest.decode(bytes)?.held == [1: later])
        let kept = StreamManifest.Kept(fetch: 1, size: 5_000, tag: 9)
        #expect(StreamManifest.decode(bytes + StreamManifest.line(kept))?.held == [:])
        #expect(StreamManifest.decode(bytes + StreamManifest.line(kept) + StreamManifest.line(later))?.held == [:])
        // A version 1 manifest (no held lines) still reads.
        manifest.held = [:]
        manifest.kept = [kept]
        let version1 = Array(
            String(decoding: manifest.encoded(), as: UTF8.self).replacingOccurrences(of: "\"version\":2", with: "\"version\":1").utf8)
        #expect(StreamManifest.decode(version1)?.kept == [kept])
    }

    /// A held line that cannot be read holds nothing (that fetch starts over), and the lines after it still count;
    /// `h FETCH` withdraws what was held.
    @Test func anImpossibleHeldLineHoldsNothingAndTheRestCounts() {
        let good = StreamManifest(source: "s", fingerprint: "f", fetches: 3, kept: [.init(fetch: 0, size: 7, tag: 9)])
        let bytes = good.encoded()
        let after = StreamManifest.Kept(fetch: 2, size: 4, tag: 4)
        for bad in [
            "h 3 10 4142 0-5-1", "h 1 10 4142 5-11-1", "h 1 10 4142 5-5-1", "h 1 10 4142 4-6-1,5-7-1", "h 1 10 4142",
            "h 1 10 414 0-5-1", "h 1 10 0a0d 0-5-1", "h 1 0 4142 0-0-1", "h 1 10 zz 0-5-1",
        ] {
            let edited = StreamManifest.decode(bytes + Array("\(bad)\n".utf8) + StreamManifest.line(after))
            #expect(edited?.kept == good.kept + [after] && edited?.held == [:], "\(bad)")
        }
        let held = bytes + Array("h 1 10 4142 0-5-1\n".utf8)
        #expect(StreamManifest.decode(held)?.held[1]?.validator == "AB")
        #expect(StreamManifest.decode(held + StreamManifest.forgetting(1))?.held == [:])
        #expect(!StreamManifest.canRecord(validator: String(repeating: "a", count: 513)))
        #expect(!StreamManifest.canRecord(validator: "\"é\""))
        #expect(StreamManifest.canRecord(validator: "\"abc\""))
    }

    @Test func theFingerprintChangesWithAnyURLRangeOrOrder() {
        let base = StreamManifest.fingerprint(of: Self.resources)
        var ranged = Self.resources
        ranged[1].byteRange = 0..<100
        var moved = Self.resources
        moved.swapAt(0, 2)
        var renamed = Self.resources
        renamed[2].url = URL(string: "https://cdn.example/seg2.ts?token=1")!
        #expect(
            Set([
                base, StreamManifest.fingerprint(of: ranged), StreamManifest.fingerprint(of: moved),
                StreamManifest.fingerprint(of: renamed),
            ]).count == 4)
    }

    @Test func aDamagedHeaderIsNotTrustedAndEntriesStopAtTheFirstBadLine() {
        let good = StreamManifest(
            source: "s", fingerprint: "f", fetches: 3, kept: [.init(fetch: 1, size: 5, tag: 1), .init(fetch: 0, size: 7, tag: 9)])
        var future = good
        future.version = 99
        #expect(StreamManifest.decode(future.encoded()) == nil)
        #expect(StreamManifest.decode(Array("{\"version\":\"1\"}\n".utf8)) == nil)
        #expect(StreamManifest.decode([UInt8](repeating: 0x20, count: StreamManifest.maxEncodedSize + 1)) == nil)

        // A crash mid-append leaves a torn last line: the whole lines before it count.
        let bytes = good.encoded()
        let torn = StreamManifest.decode(Array(bytes.dropLast(3)))
        #expect(torn?.kept == [.init(fetch: 1, size: 5, tag: 1)])
        // An entry the list cannot have ends what is trusted.
        for bad in ["3 5 1", "0 -1 1", "x 5 1", "0 5", "0 5 99999999999"] {
            let edited = StreamManifest.decode(bytes + Array("\(bad)\n2 4 4\n".utf8))
            #expect(edited?.kept == good.kept, "\(bad)")
        }
        #expect(StreamManifest.decode(bytes + StreamManifest.line(.init(fetch: 2, size: 4, tag: 4)))?.kept.count == 3)
    }
}
