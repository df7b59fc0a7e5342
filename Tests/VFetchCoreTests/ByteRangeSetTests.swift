import Testing

@testable import VFetchCore

@Suite struct ByteRangeSetTests {
    @Test func mergesAdjacentAndOverlappingRanges() {
        var set = ByteRangeSet()
        set.insert(10..<20)
        set.insert(30..<40)
        set.insert(20..<25)
        #expect(set.ranges == [10..<25, 30..<40])
        set.insert(24..<31)
        #expect(set.ranges == [10..<40])
        set.insert(0..<5)
        set.insert(50..<60)
        #expect(set.ranges == [0..<5, 10..<40, 50..<60])
        #expect(set.count == 45)
    }

    @Test func ignoresEmptyRangesAndSwallowsContainedOnes() {
        var set = ByteRangeSet([0..<100])
        set.insert(5..<5)
        set.insert(20..<30)
        #expect(set.ranges == [0..<100])
    }

    @Test func gapsAreTheComplement() {
        let set = ByteRangeSet([10..<20, 30..<40])
        #expect(set.gaps(in: 0..<50) == [0..<10, 20..<30, 40..<50])
        #expect(set.gaps(in: 12..<35) == [20..<30])
        #expect(ByteRangeSet().gaps(in: 0..<7) == [0..<7])
        #expect(ByteRangeSet([0..<7]).gaps(in: 0..<7).isEmpty)
    }

    @Test(arguments: [1, 7, 64])
    func randomInsertsMatchABitmap(seed: Int) {
        var generator = SplitMix(seed: UInt64(seed))
        var set = ByteRangeSet()
        var bits = [Bool](repeating: false, count: 500)
        for _ in 0..<200 {
            let start = Int(generator.next() % 500)
            let end = min(500, start + Int(generator.next() % 40))
            set.insert(Int64(start)..<Int64(end))
            for index in start..<end { bits[index] = true }
        }
        #expect(set.count == Int64(bits.filter { $0 }.count))
        for (index, bit) in bits.enumerated() { #expect(set.contains(Int64(index)) == bit) }
    }
}

/// A small deterministic generator, so random tests repeat.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
