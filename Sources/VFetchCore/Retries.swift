/// When a failed request may be sent again, and when it may not: its failures in a row under a
/// `RetryPolicy`. The probe keeps one before the file is known; each missing range of the file keeps
/// its own. Pure: the clock and the jitter are arguments.
package struct Retries: Sendable, Equatable {
    package enum Verdict: Sendable, Equatable {
        /// Ask again, not before this time.
        case retry(at: Double)
        /// `--retries` failures in a row: the download fails with the last one.
        case exhausted
        /// The server's `Retry-After` asks for longer than `--max-retry-wait`.
        case waitTooLong(Double)
    }

    package let policy: RetryPolicy
    package private(set) var failures = 0
    /// When the request may be sent (again).
    package private(set) var notBefore = 0.0

    package init(policy: RetryPolicy) { self.policy = policy }

    /// The request failed (a 5xx, 429, a reset) at `now`; `jitter` in 0..<1. A request that brought bytes
    /// before it failed (`afterProgress`) starts the count again: only failures without progress run out.
    package mutating func failed(retryAfter: Double?, now: Double, jitter: Double, afterProgress: Bool = false) -> Verdict {
        failures = afterProgress ? 1 : failures + 1
        if policy.refuses(retryAfter: retryAfter), let retryAfter { return .waitTooLong(retryAfter) }
        if failures > policy.maxRetries { return .exhausted }
        notBefore = now + policy.delay(afterFailures: failures, retryAfter: retryAfter, jitter: jitter)
        return .retry(at: notBefore)
    }
}
