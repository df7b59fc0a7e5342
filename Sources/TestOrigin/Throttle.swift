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

/// Paces the body writes of every connection together to one byte rate, as a shared link does.
///
/// Each chunk books the next free slot on the link and waits for it, so connections are served
/// in the order they asked: with N connections sending, each gets about 1/N of the rate. An idle
/// link lends at most ~50 ms of traffic, as `TokenBucket` does, so a late timer loses no throughput.
struct LinkPacer {
    /// The rate of the link.
    let bytesPerSecond: Int
    /// The most one booking may take: about 1/16 s of traffic, at most 16 KiB, so slots interleave finely.
    let chunkSize: Int
    /// When the link is free again after the bytes booked so far.
    private var freeAt: NIODeadline

    init(bytesPerSecond: Int, now: NIODeadline) {
        let rate = max(1, bytesPerSecond)
        self.bytesPerSecond = rate
        self.chunkSize = min(16 * 1024, max(1, rate / 16))
        self.freeAt = now
    }

    /// Books `count` bytes on the link and returns how long to wait before sending them (nil = now).
    mutating func book(_ count: Int, now: NIODeadline) -> TimeAmount? {
        let start = max(freeAt, now - .milliseconds(50))
        freeAt = start + .nanoseconds(Int64(count) * 1_000_000_000 / Int64(bytesPerSecond))
        return start > now ? start - now : nil
    }
}
