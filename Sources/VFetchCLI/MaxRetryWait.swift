import ArgumentParser

/// Checks `--max-retry-wait` of `get` and `serve`: seconds, from 0 (never wait for a `Retry-After`) to a day.
func validateMaxRetryWait(_ seconds: Double) throws {
    guard (0...86_400).contains(seconds) else {
        throw ValidationError("--max-retry-wait must be between 0 and 86400 seconds")
    }
}
