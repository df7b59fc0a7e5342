import Testing

@testable import VFetchMedia

/// The timestamp fixes `StreamRemuxer` makes before the muxer, as `ffmpeg -c copy` makes them.
@Suite struct MonotonicTimestampsTests {
    /// Feeds (pts, dts) pairs and answers what the muxer gets.
    static func fixed(_ packets: [(Int64, Int64)], strict: Bool = true) -> [[Int64]] {
        var order = MonotonicTimestamps()
        return packets.map { packet in
            let result = order.fix(pts: packet.0, dts: packet.1, strict: strict)
            return [result.pts, result.dts]
        }
    }

    @Test func growingTimestampsPassUnchanged() {
        // B-frames: pts out of order, dts growing.
        let packets: [(Int64, Int64)] = [(2, 0), (5, 1), (3, 2), (4, 3), (8, 4)]
        #expect(Self.fixed(packets) == packets.map { [$0.0, $0.1] })
    }

    @Test func aDTSThatDoesNotGrowMovesUp() {
        #expect(Self.fixed([(10, 10), (10, 10), (9, 9), (30, 5)]) == [[10, 10], [11, 11], [12, 12], [30, 13]])
        // MPEG-TS accepts equal ones.
        #expect(Self.fixed([(10, 10), (10, 10), (9, 9)], strict: false) == [[10, 10], [10, 10], [10, 10]])
    }

    @Test func aDTSAfterItsPTSBecomesTheMiddleValue() {
        // The middle of pts 15, dts 40 and previous + 1 = 11 is 15.
        #expect(Self.fixed([(10, 10), (15, 40)]) == [[10, 10], [15, 15]])
        // First packet: no previous dts, so the smaller of the two.
        #expect(Self.fixed([(3, 9)]) == [[3, 3]])
    }

    @Test func extremesDoNotTrap() {
        #expect(Self.fixed([(.max, .max), (.max, .max)]) == [[.max, .max], [.max, .max]])
        #expect(Self.fixed([(.min, .max), (.min, .min)]) == [[.min, .min], [.min + 1, .min + 1]])
    }
}
