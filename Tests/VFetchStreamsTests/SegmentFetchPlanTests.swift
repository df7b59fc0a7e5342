import Testing
import VFetchCore

@testable import VFetchStreams

/// The plan against simulated origins: each turn starts what the plan asks, and the origin answers each
/// fetch at once by its rule. Time moves to the next retry when nothing can start.
@Suite struct SegmentFetchPlanTests {
    /// An origin's answer to one fetch, given how many fetches it is serving at that moment (itself included).
    typealias Origin = (_ fetch: Int, _ attempt: Int, _ concurrent: Int) -> SegmentFetchPlan.Failure?

    struct Run {
        var plan: SegmentFetchPlan
        var started: [Int] = []
        var failure: SegmentFetchPlan.Action?
        var peak = 0
        var turns = 0
    }

    /// Drives the plan until it finishes or fails: every fetch that a turn starts runs concurrently and ends
    /// in that turn, done or failed as `origin` says.
    static func run(_ plan: SegmentFetchPlan, origin: Origin) -> Run {
        var run = Run(plan: plan)
        var now = 0.0
        var attempts: [Int: Int] = [:]
        while run.turns < 10_000 {
            let actions = run.plan.next(now: now)
            if case .fail? = actions.first {
                run.failure = actions.first
                break
            }
            if run.plan.isFinished { break }
            run.turns += 1
            let fetches = actions.compactMap { if case .fetch(let index) = $0 { index } else { nil } }
            run.peak = max(run.peak, fetches.count)
            // Refusals come back before any body has finished, as they do from a real origin.
            var answers: [(Int, SegmentFetchPlan.Failure?)] = []
            for (position, index) in fetches.enumerated() {
                run.started.append(index)
                attempts[index, default: 0] += 1
                answers.append((index, origin(index, attempts[index]!, run.plan.inFlight - fetches.count + position + 1)))
            }
            for (index, failure) in answers where failure != nil { run.plan.failed(index, failure!, now: now, jitter: 0.5) }
            for (index, failure) in answers where failure == nil { run.plan.fetched(index) }
            if fetches.isEmpty { now = run.plan.wakeup(after: now) ?? now + 1 }
        }
        return run
    }

    @Test func fetchesStartInPlayOrderUpToTheConnectionLimit() {
        var plan = SegmentFetchPlan(count: 10, connections: 4)
        #expect(plan.next(now: 0) == [.fetch(0), .fetch(1), .fetch(2), .fetch(3)])
        #expect(plan.next(now: 0) == [])
        plan.fetched(1)
        #expect(plan.next(now: 0) == [.fetch(4)])
        #expect(plan.inFlight == 4)
        #expect(plan.doneCount == 1)
    }

    @Test func fetchesKeptFromAnEarlierRunAreNotFetchedAgain() {
        let run = Self.run(SegmentFetchPlan(count: 6, done: [0, 2, 5], connections: 8)) { _, _, _ in nil }
        #expect(run.started == [1, 3, 4])
        #expect(run.plan.isFinished)
    }

    @Test func aHostAllowingFourConnectionsTeachesTheLimitWithoutFailingASegment() {
        // 503 to every fetch beyond the fourth at once, as nginx's limit_conn answers.
        let run = Self.run(SegmentFetchPlan(count: 200, connections: 16)) { _, _, concurrent in
            concurrent > 4 ? .status(503, retryAfter: nil) : nil
        }
        #expect(run.failure == nil)
        #expect(run.plan.doneCount == 200)
        #expect(run.plan.connectionLimit <= 4)
        #expect(run.plan.connectionLimit >= 3)
        // Within 10% of the optimum: 50 turns of 4 fetches.
        #expect(run.turns <= 55)
    }

    @Test func aMissingSegmentFailsTheDownloadNamingItAfterItsRetries() {
        let run = Self.run(SegmentFetchPlan(count: 10, connections: 4)) { index, _, _ in index == 7 ? .status(404, retryAfter: nil) : nil }
        #expect(run.failure == .fail(fetch: 7, reason: "HTTP 404"))
        #expect(run.started.filter { $0 == 7 }.count == 1 + RetryPolicy().maxRetries)
    }

    @Test func skipUnavailableSkipsTheMissingSegmentAndReportsIt() {
        let plan = SegmentFetchPlan(count: 10, connections: 4, skipUnavailable: true)
        let run = Self.run(plan) { index, _, _ in index == 7 ? .invalid("an HTML page, not a segment") : nil }
        #expect(run.failure == nil)
        #expect(run.plan.isFinished)
        #expect(run.plan.doneCount == 9)
        #expect(run.plan.skipped.map(\.fetch) == [7])
        #expect(run.plan.skipped.first?.reason == "an HTML page, not a segment")
    }

    @Test func aRetryAfterLongerThanTheLongestWaitFailsAtOnce() {
        let run = Self.run(SegmentFetchPlan(count: 3, connections: 1)) { _, _, _ in .status(503, retryAfter: 3600) }
        #expect(run.failure == .fail(fetch: 0, reason: "HTTP 503 with Retry-After 3600 s, longer than the longest wait"))
        #expect(run.started == [0])
    }

    @Test func aServerThatResetsEveryConnectionEndsWithinTheRetryBudget() {
        let run = Self.run(SegmentFetchPlan(count: 5, connections: 8)) { _, _, _ in .transfer(.reset, message: "Connection reset by peer") }
        #expect(run.failure != nil)
        #expect(run.started.count <= 8 + 5 * (1 + RetryPolicy().maxRetries))
    }

    @Test func anUnreachableHostFailsAtOnce() {
        let run = Self.run(SegmentFetchPlan(count: 5, connections: 2)) { _, _, _ in .transfer(.unresolved, message: "Could not resolve host") }
        #expect(run.failure == .fail(fetch: 0, reason: "Could not resolve host"))
    }

    @Test func aSegmentThatFailsTwiceThenWorksIsKept() {
        let run = Self.run(SegmentFetchPlan(count: 4, connections: 4)) { index, attempt, _ in
            index == 2 && attempt <= 2 ? .transfer(.transient, message: "Operation timed out") : nil
        }
        #expect(run.failure == nil)
        #expect(run.plan.doneCount == 4)
        #expect(run.started.filter { $0 == 2 }.count == 3)
    }
}
