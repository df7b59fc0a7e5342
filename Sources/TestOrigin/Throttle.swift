import NIOCore

/// A token bucket that paces one TCP connection's body writes to a byte rate.
///
/// The bucket starts with one chunk's worth of tokens, so the first write goes out at once,
/// and holds at most ~50 ms of traffic, so a late timer does not lose throughput but an idle
/// connection cannot burst far above the rate.
struct TokenBucket {
    /// The sustained rate.
    let bytesPerSecond: Int
    /// The size of one paced write: about 1/16 s of traffic, at most 16 KiB.
    let chunkSize: Int
    private let capacity: Double
    private var tokens: Double
    private var lastRefill: NIODeadline

    init(bytesPerSecond: Int, now: NIODeadline) {
        let rate = max(1, bytesPerSecond)
        self.bytesPerSecond = rate
        self.chunkSize = min(16 * 1024, max(1, rate / 16))
        self.capacity = Double(max(chunkSize, rate / 20))
        self.tokens = Double(chunkSize)
        self.lastRefill = now
    }

    /// Takes `count` tokens (at most `chunkSize`) and returns nil, or, when there are not enough
    /// yet, takes none and returns how long to wait before asking again.
    mutating func take(_ count: Int, now: NIODeadline) -> TimeAmount? {
        let elapsed = Double((now - lastRefill).nanoseconds) / 1e9
        tokens = min(capacity, tokens + max(0, elapsed) * Double(bytesPerSecond))
        lastRefill = now
        let wanted = Double(min(count, chunkSize))
        if tokens >= wanted {
            tokens -= wanted
            return nil
        }
        let seconds = (wanted - tokens) / Double(bytesPerSecond)
        // At least 1 ms, so rounding can never turn the wait into a busy loop.
        return .nanoseconds(max(1_000_000, Int64((seconds * 1e9).rounded(.up))))
    }
}
