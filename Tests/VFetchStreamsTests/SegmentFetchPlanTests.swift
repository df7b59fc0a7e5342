import Testing
import VFetchCore

@testable import VFetchStreams

/// The plan against simulated origins: each turn starts what the plan asks, and the origin answers each
/// fetch at once by its rule. Time moves to the next retry when nothing can start.
@Suite struct SegmentFetchPlanTests {
    /// An origin's answer to one fetch, given how many fetches it is serving at that moment (itself included).
    typealias Origin = (_ fetch: Int, _ attempt: Int, _ concurrent: Int) -> RequestFailure?

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
            let fetches = actions.compactMap { if case .fetch(let piece, let fetch, _) = $0 { (piece, fetch) } else { nil } }
            run.peak = max(run.peak, fetches.count)
            // Refusals come back before any body has finished, as they do from a real origin.
            var answers: [(piece: Int, fetch: Int, failure: RequestFailure?)] = []
            for (position, (piece, fetch)) in fetches.enumerated() {
                run.started.append(fetch)
                attempts[fetch, default: 0] += 1
                answers.append((piece, fetch, origin(fetch, attempts[fetch]!, run.plan.inFlight - fetches.count + position + 1)))
            }
            for answer in answers where answer.failure != nil { run.plan.failed(answer.piece, answer.failure!, now: now, jitter: 0.5) }
            for answer in answers where answer.failure == nil {
                run.plan.fetched(answer.piece)
                if run.plan.isComplete(answer.fetch) { run.plan.kept(answer.fetch) }
            }
            if fetches.isEmpty { now = run.plan.wakeup(after: now) ?? now + 1 }
        }
        return run
    }

    @Test func fetchesStartInPlayOrderUpToTheConnectionLimit() {
        var plan = SegmentFetchPlan(count: 10, connections: 4)
        #expect(plan.next(now: 0).compactMap(\.fetchIndex) == [0, 1, 2, 3])
        #expect(plan.next(now: 0) == [])
        plan.fetched(2)
        plan.kept(1)
        #expect(plan.next(now: 0).compactMap(\.fetchIndex) == [4])
        #expect(plan.inFlight == 4)
        #expect(plan.doneCount == 1)
    }

    @Test func fetchesKeptFromAnEarlierRunAreNotFetchedAgain() {
        let run = Self.run(SegmentFetchPlan(count: 6, done: [0, 2, 5], connections: 8, pieceSize: nil)) { _, _, _ in nil }
        #expect(run.started == [1, 3, 4])
        #expect(run.plan.isFinished)
    }

    /// What the host's budget says costs no failure: a request it had no room for, and a refusal it judged
    /// the host's connection limit. Even with no retries allowed, every segment is kept.
    @Test func theHostsLimitCostsNoFailure() {
        var plan = SegmentFetchPlan(count: 6, connections: 4, pieceSize: nil, retry: RetryPolicy(maxRetries: 0))
        var attempts: [Int: Int] = [:]
        for turn in 0..<100 where !plan.isFinished {
            for action in plan.next(now: Double(turn)) {
                guard case .fetch(let piece, let fetch, _) = action else {
                    Issue.record("\(action)")
                    return
                }
                // Every other turn the budget has no room; the host refuses the first two requests of each fetch.
                if turn % 2 == 0 {
                    plan.notStarted(piece)
                    continue
                }
                attempts[fetch, default: 0] += 1
                if attempts[fetch]! <= 2 {
                    plan.refusedByHost(piece)
                } else {
                    plan.fetched(piece)
                    plan.kept(fetch)
                }
            }
        }
        #expect(plan.isFinished)
        #expect(plan.doneCount == 6)
        #expect(plan.skipped.isEmpty)
    }

    @Test func aMissingSegmentFailsTheDownloadNamingItAfterItsRetries() {
        let run = Self.run(SegmentFetchPlan(count: 10, connections: 4, pieceSize: nil)) { index, _, _ in
            index == 7 ? .status(404, retryAfter: nil) : nil
        }
        #expect(run.failure == .fail(fetch: 7, reason: "HTTP 404"))
        #expect(run.started.filter { $0 == 7 }.count == 1 + RetryPolicy().maxRetries)
    }

    @Test func skipUnavailableSkipsTheMissingSegmentAndReportsIt() {
        let plan = SegmentFetchPlan(count: 10, connections: 4, pieceSize: nil, skipUnavailable: true)
        let run = Self.run(plan) { index, _, _ in index == 7 ? .invalid("an HTML page, not a segment") : nil }
        #expect(run.failure == nil)
        #expect(run.plan.isFinished)
        #expect(run.plan.doneCount == 9)
        #expect(run.plan.skipped.map(\.fetch) == [7])
        #expect(run.plan.skipped.first?.reason == "an HTML page, not a segment")
    }

    @Test func aRetryAfterLongerThanTheLongestWaitFailsAtOnce() {
        let run = Self.run(SegmentFetchPlan(count: 3, connections: 1, pieceSize: nil)) { _, _, _ in .status(503, retryAfter: 3600) }
        #expect(run.failure == .fail(fetch: 0, reason: "HTTP 503 with Retry-After 3600 s, longer than the longest wait"))
        #expect(run.started == [0])
    }

    @Test func aServerThatResetsEveryConnectionEndsWithinTheRetryBudget() {
        let run = Self.run(SegmentFetchPlan(count: 5, connections: 8, pieceSize: nil)) { _, _, _ in
            .transfer(.reset, message: "Connection reset by peer")
        }
        #expect(run.failure != nil)
        #expect(run.started.count <= 8 + 5 * (1 + RetryPolicy().maxRetries))
    }

    @Test func anUnreachableHostFailsAtOnce() {
        let run = Self.run(SegmentFetchPlan(count: 5, connections: 2, pieceSize: nil)) { _, _, _ in
            .transfer(.unresolved, message: "Could not resolve host")
        }
        #expect(run.failure == .fail(fetch: 0, reason: "Could not resolve host"))
    }

    @Test func aSegmentThatFailsTwiceThenWorksIsKept() {
        let run = Self.run(SegmentFetchPlan(count: 4, connections: 4, pieceSize: nil)) { index, attempt, _ in
            index == 2 && attempt <= 2 ? .transfer(.transient, message: "Operation timed out") : nil
        }
        #expect(run.failure == nil)
        #expect(run.plan.doneCount == 4)
        #expect(run.started.filter { $0 == 2 }.count == 3)
    }
}

extension SegmentFetchPlan.Action {
    var fetchIndex: Int? { if case .fetch(_, let fetch, _) = self { fetch } else { nil } }
    var range: Range<Int64>?? { if case .fetch(_, _, let range) = self { range } else { nil } }
    var piece: Int? { if case .fetch(let piece, _, _) = self { piece } else { nil } }
}

/// Fetches asked for in pieces when connections would sit idle.
@Suite struct SegmentFetchPieceTests {
    static let mib: Int64 = 1 << 20

    @Test func everySegmentIsAskedForByItsFirstPieceInPlayOrder() {
        var plan = SegmentFetchPlan(count: 40, connections: 4)
        let actions = plan.next(now: 0)
        #expect(actions.map(\.fetchIndex) == [0, 1, 2, 3])
        #expect(actions.allSatisfy { $0.range == 0..<Self.mib / 2 })
        // The rest of the first segment goes ahead of later segments.
        plan.learned(length: 3 * Self.mib / 2, of: 0)
        plan.fetched(actions[0].piece!)
        #expect(plan.next(now: 0).map(\.range) == [Self.mib / 2..<3 * Self.mib / 2])
    }

    @Test func idleConnectionsAskForAFirstPieceThenTheRestOnceTheLengthIsKnown() {
        var plan = SegmentFetchPlan(count: 2, connections: 8)
        let first = plan.next(now: 0)
        #expect(first.map(\.range) == [0..<Self.mib / 2, 0..<Self.mib / 2])
        plan.learned(length: 5 * Self.mib / 2, of: 0)
        let rest = plan.next(now: 0)
        // Two equal pieces, each under a MiB, not a MiB and a remainder.
        #expect(rest.map(\.range) == [Self.mib / 2..<3 * Self.mib / 2, 3 * Self.mib / 2..<5 * Self.mib / 2])
        #expect(rest.allSatisfy { $0.fetchIndex == 0 })
        for action in first + rest where action.fetchIndex == 0 { plan.fetched(action.piece!) }
        #expect(plan.isComplete(0))
        #expect(!plan.isComplete(1))
    }

    @Test func aSegmentShorterThanAPieceIsCompleteWithItsFirstAnswer() {
        var plan = SegmentFetchPlan(count: 1, connections: 8)
        let first = plan.next(now: 0)
        plan.learned(length: 300_000, of: 0)
        plan.fetched(first[0].piece!)
        #expect(plan.isComplete(0))
        #expect(plan.next(now: 0).isEmpty)
    }

    @Test func aByteRangeOfKnownLengthIsSplitAtOnceAndASmallOneIsNot() {
        var plan = SegmentFetchPlan(count: 2, lengths: [0: 5 * Self.mib / 2, 1: 1_000], connections: 8)
        let third = (5 * Self.mib / 2 + 2) / 3  // rounded up
        #expect(plan.next(now: 0).map(\.range) == [0..<third, third..<2 * third, 2 * third..<5 * Self.mib / 2, .some(nil)])
    }

    @Test func anOriginThatIgnoresRangesEndsTheSplitting() {
        var plan = SegmentFetchPlan(count: 3, connections: 8)
        let first = plan.next(now: 0)
        plan.answeredWhole(first[0].piece!)
        #expect(plan.isComplete(0))
        plan.kept(0)
        // The two other first pieces are already out; nothing new is split.
        plan.failed(first[1].piece!, .transfer(.transient, message: "timeout"), now: 0, jitter: 0)
        let retried = plan.next(now: 100)
        #expect(retried.map(\.fetchIndex) == [1])
        #expect(plan.pieceSize == nil)
    }

    @Test func aRejectedSegmentIsAskedForAgainWhole() {
        var plan = SegmentFetchPlan(count: 1, lengths: [0: 2 * Self.mib], connections: 8)
        let pieces = plan.next(now: 0)
        #expect(pieces.count == 2)
        for piece in pieces { plan.fetched(piece.piece!) }
        #expect(plan.isComplete(0))
        plan.rejected(0, .invalid("an HTML page, not a segment"), now: 0, jitter: 0)
        let again = plan.next(now: 100)
        #expect(again.map(\.range) == [.some(nil)])
    }

    /// A kill left bytes of a segment on disk: only what is missing is asked for, in pieces, and the segment is
    /// complete once they arrive; refused whole, it is asked for whole again, the held bytes forgotten.
    @Test func heldBytesAreNotAskedForAgain() {
        let held = ByteRangeSet([0..<Self.mib, 2 * Self.mib..<2 * Self.mib + 100])
        var plan = SegmentFetchPlan(count: 2, lengths: [0: 3 * Self.mib], held: [0: held], connections: 8)
        let actions = plan.next(now: 0)
        let missing = actions.filter { $0.fetchIndex == 0 }.compactMap(\.range).compactMap { $0 }
        #expect(ByteRangeSet(missing).ranges == [Self.mib..<2 * Self.mib, 2 * Self.mib + 100..<3 * Self.mib])
        #expect(missing.allSatisfy { $0.count <= Self.mib })
        #expect(actions.filter { $0.fetchIndex == 1 }.count == 1)
        for action in actions where action.fetchIndex == 0 {
            #expect(!plan.isComplete(0))
            plan.fetched(action.piece!)
        }
        #expect(plan.isComplete(0))
        plan.rejected(0, .invalid("an HTML page, not a segment"), now: 0, jitter: 0)
        let again = plan.next(now: 100)
        #expect(again.filter { $0.fetchIndex == 0 }.map(\.range) == [.some(nil)])
    }

    @Test func aSegmentRefusedEveryTimeFailsAfterItsRetries() {
        var plan = SegmentFetchPlan(count: 1, connections: 8, retry: RetryPolicy(maxRetries: 2))
        var now = 0.0
        for _ in 0..<10 {
            let actions = plan.next(now: now)
            if case .fail(let fetch, let reason)? = actions.first {
                #expect(fetch == 0)
                #expect(reason == "an HTML page, not a segment")
                return
            }
            // An origin without ranges, answering a page each time.
            for action in actions {
                if action.range == .some(nil) { plan.fetched(action.piece!) } else { plan.answeredWhole(action.piece!) }
            }
            if plan.isComplete(0) { plan.rejected(0, .invalid("an HTML page, not a segment"), now: now, jitter: 0) }
            now += 100
        }
        Issue.record("never gave up")
    }
}
