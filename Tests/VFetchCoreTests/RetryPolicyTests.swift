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
        var ceiling = HostCeiling(maxRetryAfter: 600)
        let refused = ceiling.refused(working: 3, retryAfter: 3_000_000_000, now: 1)
        #expect(refused && ceiling.value == 3)
        ceiling.update(inUse: 3, maximum: 8, now: 500)
        #expect(ceiling.value == 3)
        ceiling.update(inUse: 3, maximum: 8, now: 602)
        #expect(ceiling.value == 4, "one more connection is tried after the limit, not in 2099")
    }

    @Test func theProbeRetriesUnderTheSegmentsPolicyThenGivesUp() {
        var probe = Retries(policy: RetryPolicy(maxRetries: 2, baseDelay: 0.5, maxDelay: 30, maxRetryAfter: 60))
        var verdict = probe.failed(retryAfter: nil, now: 10, jitter: 1)
        #expect(verdict == .retry(at: 10.5))
        // Never sooner than the server's Retry-After.
        verdict = probe.failed(retryAfter: 7, now: 11, jitter: 0)
        #expect(verdict == .retry(at: 18))
        verdict = probe.failed(retryAfter: nil, now: 20, jitter: 0)
        #expect(verdict == .exhausted)
        var patient = Retries(policy: RetryPolicy(maxRetryAfter: 60))
        verdict = patient.failed(retryAfter: 3600, now: 0, jitter: 0)
        #expect(verdict == .waitTooLong(3600))
    }

    @Test func aRangeThatBroughtBytesBeforeItFailedStartsItsCountAgain() {
        var range = Retries(policy: RetryPolicy(maxRetries: 1, baseDelay: 1, maxDelay: 1))
        #expect(range.failed(retryAfter: nil, now: 0, jitter: 1) == .retry(at: 1))
        #expect(range.failed(retryAfter: nil, now: 2, jitter: 1, afterProgress: true) == .retry(at: 3))
        #expect(range.failures == 1)
        #expect(range.failed(retryAfter: nil, now: 4, jitter: 1) == .exhausted, "two failures in a row without a byte")
        #expect(range.notBefore == 3)
    }
}
