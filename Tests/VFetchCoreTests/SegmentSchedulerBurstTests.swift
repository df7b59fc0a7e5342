import Testing

@testable import VFetchCore

/// The scheduler's requests sized to the burst that starts every response (nginx's `limit_rate` first
/// chunk, a CDN's allowance; see `ResponseBurstsTests` for how it is learned).
@Suite struct SegmentSchedulerBurstTests {
    static let mib: Int64 = 1 << 20

    func scheduler() -> SegmentScheduler {
        var configuration = SegmentScheduler.Configuration()
        configuration.learnsBursts = true
        return SegmentScheduler(total: 256 * Self.mib, rangeRequests: true, configuration: configuration)
    }

    /// `#require` and `#expect` cannot wrap a mutating call.
    func assign(_ plan: inout SegmentScheduler, now: Double, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> SegmentScheduler.Assignment
    {
        let assignment = plan.assign(now: now)
        return try #require(assignment, sourceLocation: sourceLocation)
    }

    func ended(_ plan: inout SegmentScheduler, _ id: TransferID, _ outcome: SegmentScheduler.Outcome, now: Double) -> Bool {
        plan.transferEnded(id, outcome: outcome, now: now)
    }

    /// Delivers `bytes` to `id` in 64 KiB chunks over `seconds` from `start`.
    func deliver(_ plan: inout SegmentScheduler, _ id: TransferID, _ bytes: Int64, from start: Double, seconds: Double) {
        let chunks = bytes / (64 << 10)
        for index in 0..<chunks {
            _ = plan.receive(id, count: 64 << 10, now: start + seconds * Double(index) / Double(chunks))
        }
    }

    @Test func requestsStartAtTwoMiBAndDoubleWhenALargerOneDoesNotPause() throws {
        var plan = scheduler()
        // Three whole 2 MiB responses, then one request of twice that, to see.
        for round in 0..<3 {
            let assignment = try assign(&plan, now: 0)
            #expect(assignment.range?.count == Int(2 * Self.mib))
            deliver(&plan, assignment.transfer, 2 * Self.mib, from: 0, seconds: 0.05)
            #expect(ended(&plan, assignment.transfer, .finished, now: 0.05), "all it asked for is no failure (\(round))")
        }
        #expect(plan.retries == 0)
        let probe = try assign(&plan, now: 0.05)
        #expect(probe.range?.count == Int(4 * Self.mib))
        let beside = try assign(&plan, now: 0.05)
        #expect(beside.range?.count == Int(2 * Self.mib), "one size probe at a time")
        deliver(&plan, probe.transfer, 4 * Self.mib, from: 0.05, seconds: 0.05)
        #expect(ended(&plan, probe.transfer, .finished, now: 0.1))
        let after = try assign(&plan, now: 0.1)
        #expect(after.range?.count == Int(4 * Self.mib))
        #expect(plan.bursts.burst == nil)
    }

    @Test func aLargerRequestThatPausesKeepsTheSize() throws {
        var plan = scheduler()
        for _ in 0..<3 {
            let assignment = try assign(&plan, now: 0)
            deliver(&plan, assignment.transfer, 2 * Self.mib, from: 0, seconds: 0.05)
            _ = ended(&plan, assignment.transfer, .finished, now: 0.05)
        }
        let probe = try assign(&plan, now: 0.05)
        #expect(probe.range?.count == Int(4 * Self.mib))
        // nginx at 4 MiB/s: 2 MiB at once, then half a second of nothing.
        deliver(&plan, probe.transfer, 2 * Self.mib, from: 0.05, seconds: 0.02)
        _ = plan.restartPaused(now: 0.6)
        deliver(&plan, probe.transfer, 2 * Self.mib, from: 0.6, seconds: 0.02)
        #expect(ended(&plan, probe.transfer, .finished, now: 0.62))
        for _ in 0..<5 {
            let next = try assign(&plan, now: 0.62)
            #expect(next.range?.count == Int(2 * Self.mib))
            deliver(&plan, next.transfer, 2 * Self.mib, from: 0.62, seconds: 0.02)
            _ = ended(&plan, next.transfer, .finished, now: 0.64)
        }
    }

    @Test func threeResponsesPausingAfterTheSameBytesSetTheRequestSize() throws {
        var plan = scheduler()
        var held: [TransferID] = []
        for _ in 0..<3 { held.append(try assign(&plan, now: 0).transfer) }
        // Each sends 1 MiB of its 2 MiB at once, then nothing for a second (nginx at 1 MiB/s).
        for id in held { deliver(&plan, id, Self.mib, from: 0, seconds: 0.02) }
        let early = plan.restartPaused(now: 0.2)
        #expect(early.isEmpty, "0.2 s is no pause yet")
        #expect(plan.bursts.burst == nil)
        let restarted = plan.restartPaused(now: 0.5)
        #expect(plan.bursts.burst == Self.mib)
        // Past their burst with no more than a burst to go: they finish where they are.
        #expect(restarted.isEmpty)
        for id in held {
            deliver(&plan, id, Self.mib, from: 1, seconds: 0.02)
            #expect(ended(&plan, id, .finished, now: 1.02))
        }
        let next = try assign(&plan, now: 1.02)
        #expect(next.range?.count == Int(Self.mib))
        #expect(plan.retries == 0)
    }

    @Test func aLongRequestPausedPastItsBurstIsRestartedFresh() throws {
        var plan = scheduler()
        // The probe asks for the whole file (`0-`), two more for 2 MiB each; all pause after 1 MiB.
        let adopted = plan.adopt(requestedUpTo: nil, now: 0)
        let probe = try #require(adopted)
        let others = [try assign(&plan, now: 0).transfer, try assign(&plan, now: 0).transfer]
        for id in [probe] + others { deliver(&plan, id, Self.mib, from: 0, seconds: 0.02) }
        let restarted = plan.restartPaused(now: 0.5)
        #expect(plan.bursts.burst == Self.mib)
        #expect(restarted == [probe], "only the probe has more than a burst to go")
        #expect(ended(&plan, probe, .stopped, now: 0.5))
        let fresh = try assign(&plan, now: 0.5)
        #expect(fresh.range == Self.mib..<2 * Self.mib, "the rest of the probe's part, a burst at a time")
        #expect(plan.retries == 0)
    }
}

extension SegmentSchedulerBurstTests {
    @Test func anOriginFastOnOneConnectionGetsWholeSegments() throws {
        var plan = scheduler()
        plan.requestWholeSegments()
        let first = try assign(&plan, now: 0)
        #expect(first.range == 0..<256 * Self.mib)
        var controller = ConnectionController(.init(maximum: 32), now: 0, bytesDone: 0)
        _ = controller.update(bytesDone: 20 << 20, delivering: 1, now: 0.02)
        #expect(controller.oneConnectionIsFast)
    }
}
