/// How long to wait before asking for a failed segment again: exponential backoff with jitter,
/// never sooner than the server's `Retry-After`, unless that asks for longer than `maxRetryAfter`:
/// such a wait is not worth holding a download (and a queue slot) for, and the download fails instead.
package struct RetryPolicy: Sendable, Equatable {
    /// Failed attempts in a row, without a byte of progress, that a segment survives.
    package var maxRetries: Int
    package var baseDelay: Double
    package var maxDelay: Double
    /// The longest `Retry-After` worth waiting for, in seconds (`--max-retry-wait`).
    package var maxRetryAfter: Double

    /// Ten minutes: an origin back from maintenance soon is waited for; one that names an hour, or a date
    /// in 2099, fails the download at once, with its `Retry-After` in the error.
    package static let defaultMaxRetryAfter = 600.0

    package init(maxRetries: Int = 5, baseDelay: Double = 0.5, maxDelay: Double = 30, maxRetryAfter: Double = defaultMaxRetryAfter) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// Seconds to wait before attempt number `failures + 1`; `jitter` in 0..<1 spreads retries of many segments apart.
    /// Ask `refuses(retryAfter:)` first.
    package func delay(afterFailures failures: Int, retryAfter: Double?, jitter: Double) -> Double {
        let exponent = Double(max(0, failures - 1))
        let backoff = min(maxDelay, baseDelay * pow2(exponent))
        return max(backoff * (0.5 + jitter / 2), min(retryAfter ?? 0, maxRetryAfter))
    }

    /// Whether the server's `Retry-After` asks for a longer wait than `maxRetryAfter`: then do not retry.
    package func refuses(retryAfter: Double?) -> Bool {
        guard let retryAfter else { return false }
        return !(retryAfter <= maxRetryAfter)  // NaN too
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(min(exponent, 62)) { value *= 2 }
        return value
    }
}
