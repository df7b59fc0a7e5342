/// `--max-speed`: one token bucket for the whole download, however many transfers share it.
///
/// A chunk that finds the bucket empty pauses its transfer: the write callback answers
/// `CURL_WRITEFUNC_PAUSE`, libcurl keeps the chunk and stops reading that socket, and TCP slows the
/// sender down. Each turn of the loop refills the bucket and resumes the transfers that waited longest.
/// (A `CURLOPT_MAX_RECV_SPEED_LARGE` of limit ÷ connections on each transfer did not hold: libcurl
/// reads a burst before it applies, and every new segment starts with a burst of its own.)
package struct SpeedLimit: Sendable, Equatable {
    package let bytesPerSecond: Double
    /// Bytes that may arrive now; below zero: owed for a chunk larger than what was left.
    package private(set) var allowance = 0.0
    private var refilledAt = 0.0

    package init(bytesPerSecond: Int64) {
        self.bytesPerSecond = Double(max(1, bytesPerSecond))
    }

    /// Adds what the time since the last refill allows, keeping at most a tenth of a second's worth,
    /// so that a quiet spell (a retry's backoff) is not made up for with a burst.
    package mutating func refill(now: Double) {
        allowance = min(bytesPerSecond / 10, allowance + max(0, now - refilledAt) * bytesPerSecond)
        refilledAt = now
    }

    /// Takes a chunk of `count` bytes unless the bucket is empty; a chunk larger than what is left
    /// goes whole and leaves a debt, so the average holds whatever the chunk size.
    package mutating func take(_ count: Int) -> Bool {
        guard allowance > 0 else { return false }
        allowance -= Double(count)
        return true
    }

    /// How much a transfer reads at once under the limit: a quarter of a connection's share of a second
    /// (1 KiB to 256 KiB), so each transfer's turn comes several times a second; one that waited a whole
    /// second for its turn would look stalled.
    package func receiveBufferSize(connections: Int) -> Int {
        min(256 << 10, max(1 << 10, Int(bytesPerSecond / Double(max(1, connections)) / 4)))
    }

    /// How long until the bucket is no longer empty.
    package var secondsUntilAllowed: Double {
        allowance > 0 ? 0 : -allowance / bytesPerSecond
    }
}
