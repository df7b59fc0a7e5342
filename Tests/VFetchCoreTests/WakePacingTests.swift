import Testing

@testable import VFetchCore

@Suite struct WakePacingTests {
    @Test func withNoDataTheLoopNeverWaits() {
        var pacing = WakePacing(now: 0)
        #expect(pacing.pause(now: 0.1, delivered: 0, timeout: 0.1) == 0)
        #expect(pacing.pause(now: 0.2, delivered: 0, timeout: 0.1) == 0)
    }

    @Test func aSlowFlowWaitsAtMostTheDelayAfterTheLastWake() {
        var pacing = WakePacing(now: 0)
        // 16 MiB/s: 1 MiB takes 62 ms, so the wait is capped at 5 ms after the last wake.
        _ = pacing.pause(now: 0.05, delivered: 800_000, timeout: 0.1)
        pacing.woke(now: 0.05)
        #expect(abs(pacing.pause(now: 0.052, delivered: 840_000, timeout: 0.1) - 0.003) < 1e-9)
        // Never past the caller's timeout.
        #expect(pacing.pause(now: 0.052, delivered: 840_000, timeout: 0.002) == 0.002)
    }

    @Test func aFastFlowHardlyWaits() {
        var pacing = WakePacing(now: 0)
        // 1 GB/s: 1 MiB arrives in about a millisecond.
        _ = pacing.pause(now: 0.05, delivered: 50_000_000, timeout: 0.1)
        pacing.woke(now: 0.05)
        let pause = pacing.pause(now: 0.0501, delivered: 50_100_000, timeout: 0.1)
        #expect(pause > 0 && pause < 0.0011)
    }
}
