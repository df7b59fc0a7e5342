import Foundation
import Testing

@testable import VFetchStreams

/// LL-HLS media playlists: `EXT-X-PART`s belong to the segment after them, or to the one still being written.
@Suite struct HLSPartsTests {
    private static let base = URL(string: "https://cdn.example.com/live/index.m3u8")!

    private func media(_ text: String) throws -> SegmentList {
        guard case .media(let list) = try HLSPlaylist.parse(text, url: Self.base) else { throw StreamParseError("a master playlist") }
        return list
    }

    /// As Apple's LL-HLS tools write it: parts of the last segments, then of the one under way, and a preload hint.
    static let live = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-VERSION:9
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3.0
        #EXT-X-PART-INF:PART-TARGET=1.0
        #EXT-X-MEDIA-SEQUENCE:20
        #EXTINF:4.0,
        s20.ts
        #EXT-X-PART:DURATION=2.0,URI="s21.ts",BYTERANGE=1000@0,INDEPENDENT=YES
        #EXT-X-PART:DURATION=2.0,URI="s21.ts",BYTERANGE=800
        #EXTINF:4.0,
        s21.ts
        #EXT-X-PART:DURATION=1.0,URI="s22.part0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=1.0,URI="s22.part1.ts"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s22.part2.ts"
        #EXT-X-RENDITION-REPORT:URI="../audio/index.m3u8",LAST-MSN=22,LAST-PART=1
        """

    @Test func partsBelongToTheirSegmentAndTheTrailingOnesToTheSegmentUnderWay() throws {
        let list = try media(Self.live)
        #expect(list.segments.map(\.resource.url.lastPathComponent) == ["s20.ts", "s21.ts"])
        #expect(list.segments.map(\.sequence) == [20, 21])
        #expect(list.segments[0].parts.isEmpty)
        // A part's range without an offset follows the part before it in the same file.
        #expect(list.segments[1].parts.map(\.resource.byteRange) == [0..<1000, 1000..<1800])
        #expect(list.segments[1].parts.map(\.sequence) == [21, 21])
        #expect(list.partial.map(\.resource.url.lastPathComponent) == ["s22.part0.ts", "s22.part1.ts"])
        #expect(list.partial.map(\.sequence) == [22, 22])
        #expect(list.partial.map(\.duration) == [1, 1])
        // The duration counts whole segments: parts under way are not yet media the list covers.
        #expect(list.duration == 8)
    }

    @Test func aFinishedListHasNoPartsUnderWayAndEncryptedSegmentsKeepNoParts() throws {
        let ended = try media(Self.live.replacingOccurrences(of: "#EXT-X-PRELOAD-HINT", with: "#EXTINF:2,\ns22.ts\n#EXT-X-ENDLIST\n#X"))
        #expect(ended.partial.isEmpty)
        #expect(ended.segments.last?.parts.count == 2)
        let encrypted = try media(
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXT-X-PART:DURATION=1,URI=\"p0.ts\"\n#EXTINF:1,\ns0.ts\n"
                + "#EXT-X-PART:DURATION=1,URI=\"p1.ts\"\n")
        #expect(encrypted.segments[0].parts.isEmpty && encrypted.partial.isEmpty)
    }

    @Test func aPartWithoutItsURIOrDurationOrWithABadRangeIsRefusedNamingItsLine() {
        for part in [
            "#EXT-X-PART:DURATION=1", "#EXT-X-PART:URI=\"p.ts\"", "#EXT-X-PART:DURATION=x,URI=\"p.ts\"",
            "#EXT-X-PART:DURATION=1,URI=\"p.ts\",BYTERANGE=10",
        ] {
            #expect(throws: StreamParseError.self, "\(part)") { try media("#EXTM3U\n#EXTINF:1,\ns0.ts\n\(part)\n") }
        }
    }
}
