/// How many connections a download may use.
///
/// First the probe runs alone for a moment. If it alone delivers `soloBytes` within `soloSeconds`,
/// the server does not limit connections and every extra one only costs CPU: the ramp grows gently
/// from one (×2). Otherwise (a CDN limiting each connection, or any real network in TCP slow start)
/// it opens `fastInitial` at once and multiplies by `fastGrowth`. Either way a step is kept only
/// while it raises throughput by `requiredGain`; one that does not is undone and the ramp settles.
package struct ConnectionRamp: Sendable, Equatable {
    package let maximum: Int
    package private(set) var limit = 1
    package var soloBytes: Int64 = 1 << 20
    package var soloSeconds = 0.02
    package var fastInitial = 16
    package var fastGrowth = 2
    package var gentleGrowth = 2
    package var requiredGain = 1.25
    /// The shortest time a step is measured; slow links get three times the time a step took to start delivering.
    package var minimumWindow = 0.05
    /// …and a step lasts until each connection could have delivered this much, so slow links are not judged on noise.
    package var minimumBytesPerConnection: Int64 = 256 << 10

    private var solo: (start: Double, bytes: Int64)?
    private var growth = 1
    private var stepStarted: Double
    private var window: (start: Double, bytes: Int64, length: Double)?
    private var previous: (limit: Int, rate: Double)?
    private var settled = false

    package init(maximum: Int, now: Double) {
        self.maximum = max(1, maximum)
        stepStarted = now
        settled = self.maximum == 1
    }

    /// True once the limit no longer changes.
    package var isSettled: Bool { settled }

    package static func == (lhs: ConnectionRamp, rhs: ConnectionRamp) -> Bool {
        lhs.limit == rhs.limit && lhs.settled == rhs.settled && lhs.maximum == rhs.maximum
    }

    /// Feeds the bytes done so far and how many transfers are receiving data; returns the connection limit.
    package mutating func update(bytesDone: Int64, delivering: Int, now: Double) -> Int {
        guard !settled else { return limit }
        if growth == 1 { return soloPhase(bytesDone: bytesDone, now: now) }
        guard let current = window else {
            // Measure a step only once all its connections deliver.
            if delivering >= limit {
                window = (now, bytesDone, max(minimumWindow, 3 * (now - stepStarted)))
            }
            return limit
        }
        guard now - current.start >= current.length,
            bytesDone - current.bytes >= minimumBytesPerConnection * Int64(limit)
        else { return limit }
        let rate = Double(bytesDone - current.bytes) / (now - current.start)
        window = nil
        if let previous, rate < previous.rate * requiredGain {
            settled = true
            limit = previous.limit
        } else if limit >= maximum {
            settled = true
        } else {
            step(from: rate, to: limit * growth, now: now)
        }
        return limit
    }

    private mutating func soloPhase(bytesDone: Int64, now: Double) -> Int {
        guard let solo else {
            self.solo = (now, bytesDone)
            return limit
        }
        let elapsed = now - solo.start
        if bytesDone - solo.bytes >= soloBytes {
            growth = gentleGrowth
            step(from: Double(bytesDone - solo.bytes) / max(elapsed, 1e-6), to: limit * growth, now: now)
        } else if elapsed >= soloSeconds {
            growth = fastGrowth
            limit = min(maximum, fastInitial)
            stepStarted = now
        }
        return limit
    }

    private mutating func step(from rate: Double, to next: Int, now: Double) {
        previous = (limit, rate)
        limit = min(maximum, next)
        stepStarted = now
    }
}
