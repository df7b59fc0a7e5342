/// How many connections a download may use: it starts with a few and multiplies them while that
/// pays. When servers limit each connection (CDNs), every new connection adds throughput and the ramp
/// climbs to the maximum; when one connection can already fill the link, extra ones only cost CPU and
/// the ramp settles back.
package struct ConnectionRamp: Sendable, Equatable {
    package let maximum: Int
    package private(set) var limit: Int
    /// Each step multiplies the connections by this…
    package var growth = 4
    /// …and must raise throughput by this factor to be kept.
    package var requiredGain = 1.25
    /// The shortest time a step is measured; slow links get three times the time a step took to start delivering.
    package var minimumWindow = 0.1
    /// …and lasts until each connection could have delivered this much, so slow links are not judged on noise.
    package var minimumBytesPerConnection: Int64 = 256 << 10

    private var stepStarted: Double
    private var window: (start: Double, bytes: Int64, length: Double)?
    private var previous: (limit: Int, rate: Double)?
    private var settled = false

    package init(maximum: Int, initial: Int = 4, now: Double) {
        self.maximum = max(1, maximum)
        limit = min(self.maximum, max(1, initial))
        stepStarted = now
    }

    package static func == (lhs: ConnectionRamp, rhs: ConnectionRamp) -> Bool {
        lhs.limit == rhs.limit && lhs.settled == rhs.settled && lhs.maximum == rhs.maximum
    }

    /// Feeds the bytes done so far and how many transfers are receiving data; returns the connection limit.
    package mutating func update(bytesDone: Int64, delivering: Int, now: Double) -> Int {
        guard !settled else { return limit }
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
            previous = (limit, rate)
            limit = min(maximum, limit * growth)
            stepStarted = now
        }
        return limit
    }
}
