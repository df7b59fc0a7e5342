/// The first request's retries, before the file is known: no segment exists yet to carry a failure
/// count, so the probe keeps its own, under the same `RetryPolicy` as segments. Pure: the clock and the
/// jitter are arguments.
package struct ProbeRetries: Sendable, Equatable {
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
    /// When the probe may be sent (again).
    package private(set) var notBefore = 0.0

    package init(policy: RetryPolicy) { self.policy = policy }

    /// The probe failed (a 5xx, 429, a reset) at `now`; `jitter` in 0..<1.
    package mutating func failed(retryAfter: Double?, now: Double, jitter: Double) -> Verdict {
        failures += 1
        if policy.refuses(retryAfter: retryAfter), let retryAfter { return .waitTooLong(retryAfter) }
        if failures > policy.maxRetries { return .exhausted }
        notBefore = now + policy.delay(afterFailures: failures, retryAfter: retryAfter, jitter: jitter)
        return .retry(at: notBefore)
    }
}
