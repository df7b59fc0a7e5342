import VFetchCore

/// Which of a stream's fetches (segments, init sections, keys) to start next, and what each failure
/// means: a state machine the fetcher feeds with events and whose actions it performs. No I/O, no clock
/// of its own: `now` comes in with every event.
///
/// Fetches start in play order, so the output fills from its start. A host that answers 429 or 503 while
/// other fetches of it work has reached its connection limit: the plan holds one connection fewer and
/// asks again, without counting a failure. A fetch that keeps failing fails the download, naming the
/// fetch, unless `skipUnavailable` lets it be skipped, and then it is reported as a gap.
package struct SegmentFetchPlan: Sendable {
    package enum State: Sendable, Equatable {
        case waiting(notBefore: Double)
        case fetching
        case done
        case skipped(reason: String)
    }

    /// Why one fetch failed, as the adapter saw it.
    package enum Failure: Error, Sendable, Equatable {
        /// An HTTP answer other than the bytes asked for.
        case status(Int, retryAfter: Double?)
        /// Below HTTP: connect, reset, timeout (`TransferFailure` classifies it).
        case transfer(TransferFailure, message: String)
        /// An answer that is not what a segment can be: an HTML page, a wrong length.
        case invalid(String)
    }

    /// What the fetcher does next.
    package enum Action: Sendable, Equatable {
        case fetch(Int)
        /// Give up the download: `fetch` failed for good.
        case fail(fetch: Int, reason: String)
    }

    package private(set) var states: [State]
    private var failures: [Int]
    /// How many fetches run at once: `connections` at first, lowered to what a limited host allows.
    package private(set) var connectionLimit: Int
    package let retry: RetryPolicy
    package let skipUnavailable: Bool
    private var failed: Action?

    /// `done`: fetches kept from an earlier run.
    package init(count: Int, done: Set<Int> = [], connections: Int, retry: RetryPolicy = RetryPolicy(), skipUnavailable: Bool = false) {
        states = (0..<count).map { done.contains($0) ? .done : .waiting(notBefore: 0) }
        failures = Array(repeating: 0, count: count)
        connectionLimit = max(1, connections)
        self.retry = retry
        self.skipUnavailable = skipUnavailable
    }

    package var inFlight: Int { states.count { $0 == .fetching } }
    package var doneCount: Int { states.count { $0 == .done } }
    /// Every fetch is done or skipped.
    package var isFinished: Bool {
        states.allSatisfy { if case .waiting = $0 { false } else { $0 != .fetching } }
    }
    /// The skipped fetches and why, in order.
    package var skipped: [(fetch: Int, reason: String)] {
        states.enumerated().compactMap { if case .skipped(let reason) = $1 { ($0, reason) } else { nil } }
    }

    /// The fetches to start now: the earliest waiting ones, up to the connection limit; or the failure.
    package mutating func next(now: Double) -> [Action] {
        if let failed { return [failed] }
        var actions: [Action] = []
        var free = connectionLimit - inFlight
        for index in states.indices where free > 0 {
            guard case .waiting(let notBefore) = states[index], notBefore <= now else { continue }
            states[index] = .fetching
            actions.append(.fetch(index))
            free -= 1
        }
        return actions
    }

    /// When the next waiting fetch may start, if that is in the future and a connection is free for it.
    package func wakeup(after now: Double) -> Double? {
        guard failed == nil, inFlight < connectionLimit else { return nil }
        return states.compactMap { if case .waiting(let at) = $0, at > now { at } else { nil } }.min()
    }

    package mutating func fetched(_ index: Int) {
        guard states.indices.contains(index) else { return }
        states[index] = .done
        failures[index] = 0
    }

    /// Records a failure: the fetch waits for its retry, or the download fails (or the fetch is skipped).
    /// `jitter` in 0..<1 spreads the retries of many fetches apart.
    package mutating func failed(_ index: Int, _ failure: Failure, now: Double, jitter: Double) {
        guard states.indices.contains(index), states[index] == .fetching else { return }
        let othersWork = states.enumerated().contains { $0.offset != index && ($0.element == .fetching || $0.element == .done) }
        var retryAfter: Double?
        switch failure {
        case .status(let status, let after) where status == 429 || status == 503:
            retryAfter = after
            if retry.refuses(retryAfter: after) {
                return give(up: index, "HTTP \(status) with Retry-After \(Int(after ?? 0)) s, longer than the longest wait")
            }
            if othersWork, inFlight > 1 {
                // The host's connection limit, not a broken segment: fewer connections, and no failure counted.
                connectionLimit = max(1, inFlight - 1)
                states[index] = .waiting(notBefore: now + (after ?? retry.delay(afterFailures: 0, retryAfter: nil, jitter: jitter)))
                return
            }
        case .transfer(let transfer, _):
            switch transfer.verdict(fileKnown: true, answered: false, othersWork: { othersWork }) {
            case .unreachable, .badURL, .permanent: return give(up: index, Self.describe(failure))
            case .hostLimit where inFlight > 1:
                // A reset or refusal on an extra connection while others work: the host's limit, as above.
                connectionLimit = max(1, inFlight - 1)
                states[index] = .waiting(notBefore: now)
                return
            case .hostLimit, .retry: break
            }
        case .status, .invalid: break
        }
        failures[index] += 1
        guard failures[index] <= retry.maxRetries else { return give(up: index, Self.describe(failure)) }
        let delay = retry.delay(afterFailures: failures[index] - 1, retryAfter: retryAfter, jitter: jitter)
        states[index] = .waiting(notBefore: now + delay)
    }

    private mutating func give(up index: Int, _ reason: String) {
        states[index] = .skipped(reason: reason)
        if !skipUnavailable { failed = failed ?? .fail(fetch: index, reason: reason) }
    }

    static func describe(_ failure: Failure) -> String {
        switch failure {
        case .status(let status, _): "HTTP \(status)"
        case .transfer(_, let message): message
        case .invalid(let reason): reason
        }
    }
}
