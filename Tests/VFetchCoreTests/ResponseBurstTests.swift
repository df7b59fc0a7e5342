import Testing

@testable import VFetchCore

/// Requests sized to the burst that starts every response (nginx's `limit_rate` first chunk, a CDN's
/// allowance): learned from the pauses, never from a loss stall of a single response.
@Suite struct ResponseBurstTests {
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

    @Test func requestsStartAtTwoMiBAndDoubleWhileResponsesNeverPause() throws {
        var plan = scheduler()
        let first = try assign(&plan, now: 0)
        #expect(first.range?.count == Int(2 * Self.mib))
        deliver(&plan, first.transfer, 2 * Self.mib, from: 0, seconds: 0.05)
        #expect(ended(&plan, first.transfer, .finished, now: 0.05), "all it asked for is no failure")
        #expect(plan.retries == 0)
        let second = try assign(&plan, now: 0.05)
        #expect(second.range?.lowerBound == 2 * Self.mib && second.range?.count == Int(4 * Self.mib))
        #expect(plan.responseBurst == nil)
    }

    @Test func threeResponsesPausingAfterTheSameBytesSetTheRequestSize() throws {
        var plan = scheduler()
        var held: [TransferID] = []
        for _ in 0..<4 { held.append(try assign(&plan, now: 0).transfer) }
        // Each sends 2 MiB at once, then nothing for half a second (nginx at 4 MiB/s).
        for id in held { deliver(&plan, id, 2 * Self.mib, from: 0, seconds: 0.02) }
        let early = plan.restartPaused(now: 0.2)
        #expect(early.isEmpty, "0.2 s is no pause yet")
        #expect(plan.responseBurst == nil)
        // They asked for 2 MiB each and got it: done, not paused. A longer request pauses.
        for id in held { #expect(ended(&plan, id, .finished, now: 0.02)) }
        var long: [TransferID] = []
        for _ in 0..<3 {
            let assignment = try assign(&plan, now: 0.02)
            #expect(assignment.range?.count == Int(4 * Self.mib))
            long.append(assignment.transfer)
            deliver(&plan, assignment.transfer, 2 * Self.mib, from: 0.02, seconds: 0.02)
        }
        let restarted = plan.restartPaused(now: 0.5)
        #expect(plan.responseBurst == 2 * Self.mib)
        // Past their burst with another 2 MiB to go: a fresh request gets those sooner. Not more than a
        // burst to go: it waits.
        #expect(restarted.isEmpty)
        for id in long { #expect(ended(&plan, id, .stopped, now: 0.5)) }
        let next = try assign(&plan, now: 0.5)
        #expect(next.range?.count == Int(2 * Self.mib))
        #expect(plan.retries == 0)
    }

    @Test func aLongRequestPausedPastItsBurstIsRestartedFresh() throws {
        var plan = scheduler()
        // Three responses that never pause: requests grow to 16 MiB.
        for _ in 0..<3 {
            let assignment = try assign(&plan, now: 0)
            deliver(&plan, assignment.transfer, Int64(assignment.range!.count), from: 0, seconds: 0.02)
            #expect(ended(&plan, assignment.transfer, .finished, now: 0.02))
        }
        var pausing: [TransferID] = []
        for _ in 0..<3 {
            let assignment = try assign(&plan, now: 0.02)
            #expect(assignment.range?.count == Int(16 * Self.mib))
            pausing.append(assignment.transfer)
            deliver(&plan, assignment.transfer, 2 * Self.mib, from: 0.02, seconds: 0.02)
        }
        // Then they all pause after 2 MiB, 14 MiB short of what they asked for.
        let restarted = plan.restartPaused(now: 0.5)
        #expect(plan.responseBurst == 2 * Self.mib)
        #expect(Set(restarted) == Set(pausing))
        for id in restarted { #expect(ended(&plan, id, .stopped, now: 0.5)) }
        let fresh = try assign(&plan, now: 0.5)
        #expect(fresh.range?.count == Int(2 * Self.mib))
        #expect(plan.retries == 0)
    }

    @Test func oneStalledResponseIsNoBurst() throws {
        var plan = scheduler()
        let id = try assign(&plan, now: 0).transfer
        deliver(&plan, id, Self.mib, from: 0, seconds: 0.02)
        _ = plan.restartPaused(now: 1)
        #expect(plan.responseBurst == nil)
        let other = try assign(&plan, now: 1)
        #expect(other.range?.count == Int(2 * Self.mib))
    }
}
