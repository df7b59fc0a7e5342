/// How many connections a download holds open: a value-type state machine that is told what the
/// transfers do and answers with the count. Pure: the clock is an argument, so it is tested against
/// simulated origins in milliseconds.
///
/// Real origins deliver in bursts: nginx's `limit_rate` sends each response's first chunk (2 MiB by
/// default) at once and then a chunk per pause, CDNs allow a burst of several MiB, so a rate measured
/// over less than about a second says nothing. Hence:
/// - The first connection alone can tell one thing only: an origin that gives one connection
///   `soloBytes` within `soloSeconds` limits nothing a burst could fake, and the count grows from 1.
///   Otherwise `maximum` connections open at once: too many cost a little CPU, too few cost throughput.
/// - Every count is measured over `window` seconds at least, once all its connections deliver. A step
///   up is kept when it gains `requiredGain`; a step down when it keeps `tolerance` of the rate.
/// - Nothing is final. A held count is probed again after `reprobeAfter` seconds (doubling while
///   probes do not pay, up to `maxReprobeAfter`), and at once when the rate moves by `rateChange`.
/// - What the host allows comes from outside, as `allowed` on every update: the download's share of the
///   host's `HostBudget`, which learns the host's limit from refusals counted over every download of the
///   process. The controller never measures a count it may not hold, and says it `wanted` more while
///   the budget holds it back, so that the budget can give it more.
package struct ConnectionController: Sendable {
    package struct Configuration: Sendable, Equatable {
        /// `--connections`: never more.
        package var maximum: Int
        package var soloBytes: Int64 = 16 << 20
        package var soloSeconds = 0.05
        package var window = 1.0
        package var requiredGain = 1.15
        package var tolerance = 0.92
        /// A step down closes this fraction of the connections.
        package var stepDown = 0.25
        package var reprobeAfter = 2.0
        package var maxReprobeAfter = 16.0
        package var rateChange = 0.3

        package init(maximum: Int) { self.maximum = max(1, maximum) }
    }

    /// A count being measured; `baseline` is the count it is compared with and that count's rate.
    struct Step: Sendable {
        var count: Int
        var started: Double
        var window: (start: Double, bytes: Int64)?
        var baseline: (count: Int, rate: Double)?
        /// What the probe did alone, when the step opened wide after it: a hint only, bursts inflate it.
        var solo: Double? = nil
    }

    enum Phase: Sendable {
        /// The probe alone, since `start`, with `bytes` done then.
        case solo(start: Double, bytes: Int64)
        case measuring(Step)
        /// `limit` holds with `rate`; the next probe at `probeAt`.
        case holding(rate: Double, window: (start: Double, bytes: Int64), probeAt: Double, next: Probe)
    }

    enum Probe: Sendable {
        case up, down
        /// Connections each carry their own limit and all are open: only a change of rate is worth a look.
        case none
    }

    package let configuration: Configuration
    /// The count to hold now.
    package private(set) var limit = 1
    /// What the host's budget allows this download, as last told.
    package private(set) var allowed: Int
    /// The controller would hold more than `allowed`: the budget, not a measurement, stopped it.
    private var heldBack = false
    /// The probe alone delivered `soloBytes` within `soloSeconds`: nothing limits a connection here.
    package private(set) var oneConnectionIsFast = false
    private var phase: Phase
    private var reprobeAfter: Double

    package init(_ configuration: Configuration, now: Double, bytesDone: Int64) {
        self.configuration = configuration
        reprobeAfter = configuration.reprobeAfter
        allowed = configuration.maximum
        phase = .solo(start: now, bytes: bytesDone)
        if configuration.maximum == 1 { phase = .holding(rate: 0, window: (now, bytesDone), probeAt: .infinity, next: .none) }
    }

    /// The most connections worth trying now: the user's maximum, or what the host's budget allows.
    private var cap: Int { min(configuration.maximum, allowed) }

    /// What this download would hold if the host's budget allowed it all: its maximum while the budget
    /// holds it back, otherwise the count it measured.
    package var wanted: Int { heldBack ? configuration.maximum : limit }

    /// When the count may change next with no byte arriving: the probe alone is judged at 5 ms (a slow
    /// start is hopeless) and at `soloSeconds`. A download polling less often would stay at one
    /// connection while that one waits on a throttled origin's next second; nil: no such moment.
    package func nextDecision(after now: Double) -> Double? {
        guard case .solo(let start, _) = phase else { return nil }
        return now < start + Self.earliestJudgement ? start + Self.earliestJudgement : max(now, start + configuration.soloSeconds)
    }

    /// How long the probe runs alone at least before it may be judged hopeless.
    private static let earliestJudgement = 0.005

    /// Feeds the bytes done so far, how many transfers are receiving data and what the host's budget
    /// allows (at least 1 counts); returns the count to hold.
    package mutating func update(bytesDone: Int64, delivering: Int, allowed: Int? = nil, now: Double) -> Int {
        if let allowed { follow(allowed: allowed, now: now) }
        switch phase {
        case .solo(let start, let bytes):
            let elapsed = now - start
            let solo = Double(bytesDone - bytes)
            // Even three times as fast from here on, would it get there? If not, no need to wait and see.
            let hopeless =
                elapsed >= Self.earliestJudgement
                && solo + 3 * solo / elapsed * (configuration.soloSeconds - elapsed) < Double(configuration.soloBytes)
            if bytesDone - bytes >= configuration.soloBytes {
                oneConnectionIsFast = true
                measure(min(cap, 2), baseline: (1, solo / max(elapsed, 1e-3)), now: now)
            } else if elapsed >= configuration.soloSeconds || hopeless {
                measure(cap, baseline: nil, now: now)
                heldBack = cap < configuration.maximum
                if case .measuring(var step) = phase {
                    step.solo = Double(bytesDone - bytes) / max(now - start, 1e-3)
                    phase = .measuring(step)
                }
            }
        case .measuring(var step):
            guard let window = step.window else {
                // Measure a count only once all its connections deliver (or it had its time to get there).
                if delivering >= step.count || now - step.started >= configuration.window {
                    step.window = (now, bytesDone)
                    phase = .measuring(step)
                }
                return limit
            }
            guard now - window.start >= configuration.window else { return limit }
            judge(step, rate: Double(bytesDone - window.bytes) / (now - window.start), bytesDone: bytesDone, now: now)
        case .holding(let rate, let window, let probeAt, let next):
            guard now - window.start >= configuration.window else { return limit }
            guard delivering >= limit else {
                // Fewer transfers than connections (the end of the file, a reader's window): the count is
                // not what limits the rate now, so the rate says nothing about it.
                phase = .holding(rate: rate, window: (now, bytesDone), probeAt: max(probeAt, now), next: next)
                return limit
            }
            let current = Double(bytesDone - window.bytes) / (now - window.start)
            let moved = rate > 0 && abs(current - rate) > configuration.rateChange * rate
            if moved { reprobeAfter = configuration.reprobeAfter }
            if moved, current < rate / 2, limit < cap {
                // A collapse, as when an origin starts limiting each connection under load: go wide at once.
                measure(cap, baseline: (limit, current), now: now)
                heldBack = cap < configuration.maximum
            } else if moved || (now >= probeAt && next != .none) {
                probe(next == .none ? .up : next, rate: current, bytesDone: bytesDone, now: now)
            } else {
                // Bursts make single windows noisy: the reference follows them slowly.
                phase = .holding(rate: 0.7 * rate + 0.3 * current, window: (now, bytesDone), probeAt: probeAt, next: next)
            }
        }
        return limit
    }

    // MARK: - Private

    /// Takes the budget's word: fewer connections at once, or more for a count the budget held back.
    private mutating func follow(allowed newValue: Int, now: Double) {
        let previousCap = cap
        allowed = max(1, newValue)
        if cap < limit {
            limit = cap
            if case .measuring(var step) = phase, step.count > limit {
                // The step was never going to happen: measure what the host allows.
                step.count = limit
                step.window = nil
                step.started = now
                if let baseline = step.baseline, baseline.count >= limit { step.baseline = nil }
                phase = .measuring(step)
            }
        } else if cap > previousCap, heldBack {
            limit = cap
            heldBack = cap < configuration.maximum
            if case .measuring(var step) = phase {
                step.count = limit
                step.window = nil
                step.started = now
                phase = .measuring(step)
            }
        }
    }

    private mutating func measure(_ count: Int, baseline: (count: Int, rate: Double)?, now: Double) {
        heldBack = false
        limit = max(1, count)
        phase = .measuring(Step(count: limit, started: now, baseline: baseline))
    }

    private mutating func hold(_ count: Int, rate: Double, next: Probe, bytesDone: Int64, now: Double) {
        heldBack = false
        limit = count
        phase = .holding(rate: rate, window: (now, bytesDone), probeAt: now + reprobeAfter, next: next)
    }

    /// Decides on a measured step.
    private mutating func judge(_ step: Step, rate: Double, bytesDone: Int64, now: Double) {
        guard let baseline = step.baseline else {
            // The first count measured: hold it, then see whether more do better or fewer as well, unless
            // it carries as many times what the probe did alone: then connections share no bottleneck.
            let proportional = step.solo.map { rate >= $0 * Double(step.count) * 0.9 } ?? false
            let next: Probe = step.count < cap ? .up : proportional ? .none : .down
            hold(step.count, rate: rate, next: next, bytesDone: bytesDone, now: now)
            heldBack = step.count >= cap && cap < configuration.maximum
            return
        }
        if step.count > baseline.count {
            if rate >= baseline.rate * configuration.requiredGain {
                reprobeAfter = configuration.reprobeAfter
                if step.count < cap {
                    measure(min(cap, step.count * 2), baseline: (step.count, rate), now: now)
                } else {
                    // Gaining in proportion to the count, connections share no bottleneck: fewer would be slower.
                    let proportional = rate >= baseline.rate * Double(step.count) / Double(baseline.count) * 0.9
                    hold(step.count, rate: rate, next: proportional ? .none : .down, bytesDone: bytesDone, now: now)
                    heldBack = cap < configuration.maximum
                }
            } else {
                // More did not pay: back to the baseline, and next time see whether fewer do as well.
                backOff()
                hold(min(baseline.count, cap), rate: baseline.rate, next: .down, bytesDone: bytesDone, now: now)
            }
        } else {
            if rate >= baseline.rate * configuration.tolerance {
                reprobeAfter = configuration.reprobeAfter
                if step.count > 1 {
                    measure(stepDown(from: step.count), baseline: (step.count, rate), now: now)
                } else {
                    hold(1, rate: rate, next: .up, bytesDone: bytesDone, now: now)
                }
            } else {
                backOff()
                hold(min(baseline.count, cap), rate: baseline.rate, next: .up, bytesDone: bytesDone, now: now)
            }
        }
    }

    /// Tries one step from the held count: up by half, or down unless the host's budget is what holds
    /// the count (fewer would only be slower).
    private mutating func probe(_ direction: Probe, rate: Double, bytesDone: Int64, now: Double) {
        let count = limit
        switch direction {
        case .up where count < cap:
            measure(min(cap, max(count + 1, count * 3 / 2)), baseline: (count, rate), now: now)
        case .down where count > 1 && (count < allowed || allowed >= configuration.maximum):
            measure(stepDown(from: count), baseline: (count, rate), now: now)
        default:
            hold(count, rate: rate, next: .none, bytesDone: bytesDone, now: now)
            heldBack = direction == .up && cap < configuration.maximum
        }
    }

    private func stepDown(from count: Int) -> Int {
        max(1, min(count - 1, Int((Double(count) * (1 - configuration.stepDown)).rounded())))
    }

    private mutating func backOff() {
        reprobeAfter = min(configuration.maxReprobeAfter, reprobeAfter * 2)
    }
}
