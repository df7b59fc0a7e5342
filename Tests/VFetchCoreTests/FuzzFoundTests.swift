import Foundation
import Testing

@testable import VFetchCore

/// Inputs the fuzz tests (VFetchMediaTests/Fuzz) found crashing, kept as they were found.
@Suite struct FuzzFoundTests {
    /// A manifest on disk may claim any length up to Int64.max; `vfetch status` and `vfetch info`
    /// read its blocks and draw its map. With a last block that ends past Int64.max (2 blocks of
    /// 2^62 bytes for a length of 2^63 - 1), both overflowed.
    @Test func manifestOfTheLargestLength() throws {
        let json =
            #"{"block_size":4611686018427387904,"blocks":"Aw==","blocks_done":2,"content_type":null,"#
            + #""created":"2026-11-21T04:20:00Z","etag":null,"final_url":"http://h/a","format":"vfetch-manifest","#
            + #""last_modified":null,"length":9223372036854775807,"url":"http://h/a","version":1}"#
        let manifest = try Manifest(decoding: Array(json.utf8) + Array("\nsha256 \(SHA256.hex(Array(json.utf8)))\n".utf8))
        #expect(manifest.blocks.completedRanges.ranges == [0..<Int64.max])
        #expect(manifest.blocks.map(width: 40) == String(repeating: "█", count: 40))
    }

    @Test func mapOfTheLargestTotal() {
        // Just over half of the largest file: 2^62 of 2^63 - 1 bytes.
        let half = ByteRangeSet([0..<Int64.max / 2 + 1])
        #expect(half.map(total: Int64.max, width: 4) == "██░·")
        #expect(half.map(total: Int64.max, width: 1) == "▓")
        #expect(ByteRangeSet([0..<1]).map(total: Int64.max, width: 1) == "░")
        // Unchanged for ordinary totals.
        #expect(ByteRangeSet([0..<50]).map(total: 100, width: 4) == "██··")
    }

    /// `bytes 0-9223372036854775807/*`: a server that does not say the total bounds nothing, and the
    /// range's end, one past the last byte, did not fit in an Int64.
    @Test func contentRangeEndingAtTheLargestOffset() {
        #expect(ContentRange("bytes 0-9223372036854775807/*") == nil)
        #expect(ContentRange("bytes 9223372036854775806-9223372036854775806/*")?.range == (Int64.max - 1)..<Int64.max)
    }
}
