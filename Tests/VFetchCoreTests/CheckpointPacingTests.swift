import Testing

@testable import VFetchCore

@Suite struct CheckpointPacingTests {
    static let mib: Int64 = 1 << 20
    /// vfetch's defaults: 1 s, 8 MiB.
    static let pacing = CheckpointPacing(interval: 1, bytes: 8 << 20)

    @Test func anIntervalOrTheByteLimitAlwaysMakesOneDue() {
        #expect(Self.pacing.isDue(seconds: 1, received: 1, cost: 10))
        #expect(Self.pacing.isDue(seconds: 0.01, received: 8 * Self.mib, cost: 10), "however long the last one took")
        #expect(!Self.pacing.isDue(seconds: 0.5, received: Self.mib, cost: 0))
    }

    /// At 100 MB/s and a quarter of a millisecond a checkpoint (a page cache, tmpfs), one comes every 2 MiB.
    @Test func cheapCheckpointsComeEveryQuarterOfTheByteLimit() {
        let cost = 0.000_25
        #expect(!Self.pacing.isDue(seconds: 0.019, received: 2 * Self.mib - 1, cost: cost))
        #expect(Self.pacing.isDue(seconds: 0.021, received: 2 * Self.mib, cost: cost))
    }

    /// A checkpoint that takes 20 ms (syncs on a disk) waits for 20 times that, or for the byte limit.
    @Test func costlyCheckpointsTakeAtMostTheirShareOfTheTime() {
        let cost = 0.02
        #expect(!Self.pacing.isDue(seconds: 0.2, received: 4 * Self.mib, cost: cost))
        #expect(Self.pacing.isDue(seconds: 0.4, received: 4 * Self.mib, cost: cost))
        #expect(Self.pacing.isDue(seconds: 0.08, received: 8 * Self.mib, cost: cost))
        #expect(Self.pacing.timeShare == 0.05)
    }

    /// `--checkpoint-interval 0`: only when stopping (a quarter of Int64.max is 2 EiB).
    @Test func noLimitsMeansNever() {
        let never = CheckpointPacing(interval: .infinity, bytes: .max)
        #expect(!never.isDue(seconds: 1e9, received: 1 << 60, cost: 0))
    }
}
