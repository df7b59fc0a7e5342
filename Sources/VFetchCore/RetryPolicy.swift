/// How long to wait before asking for a failed segment again: exponential backoff with jitter,
/// never sooner than the server's `Retry-After`.
package struct RetryPolicy: Sendable, Equatable {
    /// Failed attempts in a row, without a byte of progress, that a segment survives.
    package var maxRetries: Int
    package var baseDelay: Double
    package var maxDelay: Double

    package init(maxRetries: Int = 5, baseDelay: Double = 0.5, maxDelay: Double = 30) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// Seconds to wait before attempt number `failures + 1`; `jitter` in 0..<1 spreads retries of many segments apart.
    package func delay(afterFailures failures: Int, retryAfter: Double?, jitter: Double) -> Double {
        let exponent = Double(max(0, failures - 1))
        let backoff = min(maxDelay, baseDelay * pow2(exponent))
        return max(backoff * (0.5 + jitter / 2), retryAfter ?? 0)
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(min(exponent, 62)) { value *= 2 }
        return value
    }
}
