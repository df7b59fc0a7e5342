/// How long the transfer loop lets data gather before it wakes: about `batchBytes` at the rate of the
/// last window of at least 50 ms, and never more than `maxDelay` after the last wake. Pure: the clock
/// and the byte count are arguments.
///
/// Every turn of the loop costs libcurl a `poll` of each transfer's socket before it reads it (libcurl
/// 7.88), so over HTTP/2, many throttled streams on one connection, waking for each TLS record spent
/// more on polls than on the data. A fast link brings the batch in a millisecond or two and hardly
/// waits; the kernel's socket buffer holds what arrives meanwhile. With no data arriving it never waits.
package struct WakePacing: Sendable {
    package var batchBytes = 1 << 20
    /// Seconds. Each wait also delays noticing that a request ended, and so the next one on its
    /// connection: 10 ms cost 2-4 % in the uneven benchmark, 5 ms nothing, for the same CPU saving on HTTP/2.
    package var maxDelay = 0.005
    package var window = 0.050

    /// Bytes per second over the last window; 0 while nothing arrives.
    package private(set) var rate = 0.0
    private var windowStart: (time: Double, bytes: Int)
    private var lastWake: Double

    package init(now: Double) {
        windowStart = (now, 0)
        lastWake = now
    }

    /// Seconds to wait before polling, with `delivered` body bytes so far, at most `timeout`.
    package mutating func pause(now: Double, delivered: Int, timeout: Double) -> Double {
        if now - windowStart.time >= window {
            rate = Double(delivered - windowStart.bytes) / (now - windowStart.time)
            windowStart = (now, delivered)
        }
        guard rate > 0 else { return 0 }
        let wait = min(maxDelay, Double(batchBytes) / rate) - (now - lastWake)
        return max(0, min(wait, timeout))
    }

    /// The loop woke (from its poll) at `now`.
    package mutating func woke(now: Double) { lastWake = now }
}
