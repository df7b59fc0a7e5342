import Foundation
import Testing
@testable import VFetchCore

/// An origin's `Retry-After` is honoured up to a limit (10 minutes by default); beyond it the download
/// fails at once, naming it, instead of waiting silently for an hour or until 2099.
@Suite struct RetryAfterLimitTests {
    func ended(_ plan: inout SegmentScheduler, _ id: TransferID, retryAfter: Double?, now: Double) -> Bool {
        plan.transferEnded(id, outcome: .failed(retryAfter: retryAfter), now: now)
    }

    @Test func aWaitWithinTheLimitIsHonoured() throws {
        var plan = SegmentScheduler(total: 1000, rangeRequests: true)
        let assigned0 = plan.assign(now: 0)
        let id = try #require(assigned0).transfer
        #expect(ended(&plan, id, retryAfter: 600, now: 0))
        let early = plan.assign(now: 599)
        #expect(early == nil)
        let onTime = plan.assign(now: 600)
        #expect(onTime != nil)
    }

    @Test(arguments: [3600.0, 601])
    func aLongerWaitFailsAtOnce(retryAfter: Double) throws {
        var plan = SegmentScheduler(total: 1000, rangeRequests: true)
        let assigned0 = plan.assign(now: 0)
        let id = try #require(assigned0).transfer
        #expect(ended(&plan, id, retryAfter: retryAfter, now: 0) == false, "no segment waits \(retryAfter) s")
    }

    @Test func aDateIn2099FailsAtOnce() throws {
        let seconds = try #require(ResponseVerdict.retryAfter("Thu, 01 Jan 2099 00:00:00 GMT", now: Date()))
        var plan = SegmentScheduler(total: 1000, rangeRequests: true)
        let assigned0 = plan.assign(now: 0)
        let id = try #require(assigned0).transfer
        #expect(ended(&plan, id, retryAfter: seconds, now: 0) == false)
    }

    @Test func theLimitIsConfigurableAndSaysWhatItRefused() throws {
        var configuration = SegmentScheduler.Configuration()
        configuration.retry.maxRetryAfter = 5
        var plan = SegmentScheduler(total: 1000, rangeRequests: true, configuration: configuration)
        let assigned0 = plan.assign(now: 0)
        var id = try #require(assigned0).transfer
        #expect(ended(&plan, id, retryAfter: 5, now: 0))
        #expect(plan.refusedRetryAfter == nil)
        let assigned5 = plan.assign(now: 5)
        id = try #require(assigned5).transfer
        #expect(ended(&plan, id, retryAfter: 6, now: 5) == false)
        #expect(plan.refusedRetryAfter == 6)
        #expect(RetryPolicy(maxRetryAfter: 5).refuses(retryAfter: 6) && !RetryPolicy(maxRetryAfter: 5).refuses(retryAfter: nil))
    }

    @Test func aHostLimitsRetryAfterHoldsTheCountNoLongerThanTheLimit() {
        var controller = ConnectionController(.init(maximum: 8), now: 0, bytesDone: 0)
        let refused = controller.refused(working: 3, retryAfter: 3_000_000_000, now: 1)
        #expect(refused && controller.hostCeiling == 3)
        _ = controller.update(bytesDone: 1 << 30, delivering: 3, now: 500)
        #expect(controller.hostCeiling == 3)
        _ = controller.update(bytesDone: 1 << 30, delivering: 3, now: 602)
        #expect(controller.hostCeiling == 4, "one more connection is tried after the limit, not in 2099")
    }
}
