/// The most transfers a host allows at once, learned from its refusals: a 429, a 503, or a reset
/// before the first byte on an extra connection while others deliver (nginx's `limit_conn`, a CDN's
/// per-client cap). Pure: the clock is an argument.
///
/// Nothing is final: a limit may have been a moment's, so one more transfer is tried after
/// `reprobeAfter` seconds (doubling to 64 s while the host keeps refusing), and never before the
/// refusal's `Retry-After`, of which at most `maxRetryAfter` is honoured: one that names an hour or
/// 2099 must not hold the count below what the host may allow again long before.
package struct HostCeiling: Sendable, Equatable {
    /// nil until the host refused a transfer beside working ones.
    package private(set) var value: Int?
    package let reprobeAfter: Double
    package let maxRetryAfter: Double
    private var probeAt = 0.0
    private var probeAfter = 0.0

    package init(reprobeAfter: Double = 4, maxRetryAfter: Double = RetryPolicy.defaultMaxRetryAfter) {
        self.reprobeAfter = reprobeAfter
        self.maxRetryAfter = maxRetryAfter
    }

    /// A request was refused while `working` transfers had their answers. Returns true when that is the
    /// host's limit (the refused range goes to a working connection, with no failure counted); false when
    /// nothing works: then it is a real failure of the range.
    package mutating func refused(working: Int, retryAfter: Double?, now: Double) -> Bool {
        guard working > 0 else { return false }
        if value == nil { probeAfter = reprobeAfter }
        value = min(value ?? .max, working)
        probeAt = now + max(probeAfter, min(retryAfter ?? 0, maxRetryAfter))
        return true
    }

    /// A response was accepted while `working` transfers (itself included) had theirs: answers that
    /// crossed a refusal can make the host look stricter than it is.
    package mutating func accepted(working: Int, maximum: Int) {
        guard let ceiling = value, working > ceiling else { return }
        value = min(maximum, working)
    }

    /// Tries one more transfer when one is due and all the host allows are in use.
    package mutating func update(inUse: Int, maximum: Int, now: Double) {
        guard let ceiling = value, ceiling < maximum, now >= probeAt, inUse >= ceiling else { return }
        value = ceiling + 1
        probeAt = now + probeAfter
        probeAfter = min(64, probeAfter * 2)
    }
}
