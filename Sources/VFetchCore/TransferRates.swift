/// Measures how fast each transfer goes, what rate is typical for the download, and which transfers
/// are so far below it for so long that they should be replaced.
///
/// A value-type state machine: the scheduler tells it about each transfer (`started`, `received`,
/// `ended`) and calls `tick` once a second; it answers with the rates that racing decisions need and
/// with the transfers to replace.
package struct TransferRates: Sendable {
    struct Measure {
        var startedAt: Double
        var received: Int64 = 0
        var receivedAtTick: Int64 = 0
        /// Over the last tick; nil until a tick measured the whole of one.
        var rate: Double?
        var slowTicks = 0
    }

    /// The best recent median transfer rate, decaying (see `tick`); nil until measured over three or more transfers.
    package private(set) var typical: Double?
    private var measures: [TransferID: Measure] = [:]
    private var lastTick: Double?
    /// The rates of transfers that ended since the last tick, over their whole life.
    private var endedRates: [Double] = []
    /// What is left of the typical rate after a tick that measured no faster median: it halves in about 3 s.
    private static let typicalDecay = 0.8
    private let slowFactor: Double
    private let slowSeconds: Int
    private let replacesSlow: Bool

    /// A transfer slower than `slowFactor` of the typical rate for `slowSeconds` ticks is replaced, unless
    /// not `replacesSlow` (the only transfer of a download without range requests).
    package init(slowFactor: Double, slowSeconds: Int, replacesSlow: Bool) {
        self.slowFactor = slowFactor
        self.slowSeconds = slowSeconds
        self.replacesSlow = replacesSlow
    }

    package mutating func started(_ id: TransferID, now: Double) {
        measures[id] = Measure(startedAt: now)
    }

    package mutating func received(_ id: TransferID, count: Int64) {
        measures[id]?.received += count
    }

    /// The transfer is over: its rate over its whole life counts at the next tick.
    package mutating func ended(_ id: TransferID, now: Double) {
        guard let measure = measures.removeValue(forKey: id) else { return }
        // Under 64 KiB, a transfer's life measures the round trip more than the rate.
        if measure.received >= 64 << 10, now > measure.startedAt {
            endedRates.append(Double(measure.received) / (now - measure.startedAt))
        }
    }

    /// The transfer's rate over the last tick; nil before a tick measured it.
    package func rate(of id: TransferID) -> Double? { measures[id]?.rate }

    /// The transfer's rate over the last tick or, before one measured it, what it received since it
    /// started, once it is half a second old.
    package func rate(of id: TransferID, now: Double) -> Double? {
        guard let measure = measures[id] else { return nil }
        let age = now - measure.startedAt
        return measure.rate ?? (age >= 0.5 ? Double(measure.received) / age : nil)
    }

    /// The typical rate or, before a tick measured one, the median rate of three or more transfers that
    /// ended: at the start of a download the first segments often end before a tick sees them.
    package var typicalSoFar: Double? {
        typical ?? (endedRates.count >= 3 ? endedRates.sorted()[endedRates.count / 2] : nil)
    }

    /// Measures each transfer's rate once a second; returns those far slower than their peers for
    /// `slowSeconds` ticks, to be replaced. `remaining` is what is left of a transfer's segment, nil for
    /// one that holds none (it is not measured).
    package mutating func tick(now: Double, remaining: (TransferID) -> Int64?) -> [TransferID] {
        guard let last = lastTick else {
            lastTick = now
            return []
        }
        let elapsed = now - last
        guard elapsed >= 1 else { return [] }
        lastTick = now
        var left: [TransferID: Int64] = [:]
        for (id, var measure) in measures {
            guard let remaining = remaining(id) else { continue }
            left[id] = remaining
            if now - measure.startedAt >= elapsed {
                measure.rate = Double(measure.received - measure.receivedAtTick) / elapsed
            }
            measure.receivedAtTick = measure.received
            measures[id] = measure
        }
        // Fast transfers often end before a tick measures them, while slow ones always live that long: count
        // the rates of those that ended too, or the slow would make the median.
        let rates = (measures.values.compactMap(\.rate) + endedRates).sorted()
        let ended = endedRates.count
        endedRates.removeAll()
        guard replacesSlow, rates.count >= 3 else { return [] }
        let median = rates[rates.count / 2]
        // New transfers have no rate yet; a median of the few old ones (often the slow) is no norm.
        if rates.count * 2 >= measures.count + ended {
            // Keep the best recent median, decaying: at the end of a download only the stragglers are left,
            // and their own median would make them look typical, so they would never be raced or replaced.
            typical = max(median, (typical ?? 0) * Self.typicalDecay)
        }
        let norm = typical ?? median
        var slow: [TransferID] = []
        for (id, var measure) in measures {
            guard let rate = measure.rate, let remaining = left[id] else { continue }
            let lagging = rate < slowFactor * norm && Double(remaining) > rate * 2
            measure.slowTicks = lagging ? measure.slowTicks + 1 : 0
            measures[id] = measure
            if measure.slowTicks >= slowSeconds { slow.append(id) }
        }
        return slow.sorted()
    }
}
