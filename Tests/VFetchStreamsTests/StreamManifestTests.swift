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

    @Test func theFingerprintChangesWithAnyURLRangeOrOrder() {
        let base = StreamManifest.fingerprint(of: Self.resources)
        var ranged = Self.resources
        ranged[1].byteRange = 0..<100
        var moved = Self.resources
        moved.swapAt(0, 2)
        var renamed = Self.resources
        renamed[2].url = URL(string: "https://cdn.example/seg2.ts?token=1")!
        #expect(Set([base, StreamManifest.fingerprint(of: ranged), StreamManifest.fingerprint(of: moved), StreamManifest.fingerprint(of: renamed)]).count == 4)
    }

    @Test func aDamagedOrImpossibleManifestIsNotTrusted() {
        let good = StreamManifest(source: "s", fingerprint: "f", fetches: 2, kept: [.init(fetch: 1, size: 5, tag: 1)])
        var outOfRange = good
        outOfRange.kept = [.init(fetch: 2, size: 5, tag: 1)]
        var negative = good
        negative.kept = [.init(fetch: 0, size: -1, tag: 1)]
        var future = good
        future.version = 99
        for bad in [outOfRange, negative, future] { #expect(StreamManifest.decode(bad.encoded()) == nil) }
        let bytes = good.encoded()
        #expect(StreamManifest.decode(Array(bytes.prefix(bytes.count / 2))) == nil)
        #expect(StreamManifest.decode(Array("{\"version\":\"1\"}".utf8)) == nil)
        #expect(StreamManifest.decode([UInt8](repeating: 0x20, count: StreamManifest.maxEncodedSize + 1)) == nil)
    }
}
