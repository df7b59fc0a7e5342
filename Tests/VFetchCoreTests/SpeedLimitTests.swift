import Testing

@testable import VFetchCore

@Suite struct SpeedLimitTests {
    @Test func holdsTheAverageWhateverTheChunkSize() {
        var limit = SpeedLimit(bytesPerSecond: 1_000_000)
        var taken = 0
        var now = 0.0
        // A transfer offering 256 KiB chunks every millisecond for ten seconds.
        while now < 10 {
            limit.refill(now: now)
            if limit.take(256 << 10) { taken += 256 << 10 }
            now += 0.001
        }
        #expect(abs(Double(taken) - 10_000_000) <= Double(256 << 10) + 100_000, "\(taken) bytes in 10 s at 1 MB/s")
    }

    @Test func aQuietSpellIsNotMadeUpForWithABurst() {
        var limit = SpeedLimit(bytesPerSecond: 1_000_000)
        limit.refill(now: 0)
        limit.refill(now: 60)
        // At most a tenth of a second's worth after a minute of nothing.
        #expect(limit.allowance <= 100_000)
        let whole = limit.take(100_000)
        let more = limit.take(1)
        #expect(whole && !more)
        #expect(limit.secondsUntilAllowed == 0)
        limit.refill(now: 60)
        let nothing = limit.take(0)
        #expect(!nothing, "no time passed, nothing to take")
    }

    @Test func aChunkLargerThanWhatIsLeftGoesWholeAndLeavesADebt() {
        var limit = SpeedLimit(bytesPerSecond: 1_000_000)
        limit.refill(now: 1)
        let large = limit.take(500_000)
        #expect(large && limit.allowance == -400_000)
        #expect(abs(limit.secondsUntilAllowed - 0.4) < 1e-9)
    }
}
