/// The connections one host gets from this process, shared by every download that fetches from it
/// (the player cache's, the queue's), so that two downloads from one host do not fight over what the
/// host allows. A value type: told what each download holds and wants, it answers with how many
/// connections each may hold. Pure: the clock is an argument.
///
/// - The host gets at most the largest `--connections` of its downloads, and no more than it allows
///   (its `HostCeiling`, learned from refusals counted across all of them).
/// - That is split by max-min fairness: a download that wants less leaves the rest to the others.
/// - A download may only grow into connections the others have given back, and only once those had
///   `closeDelay` to close at the host (it counts a response it was sending until it sees the close), so
///   a newcomer does not open one that the host would refuse while the others still hold theirs.
package struct HostBudget: Sendable {
    /// What one download holds and wants.
    package struct Claim: Sendable, Equatable {
        /// Its `--connections`.
        package var maximum: Int
        /// What it would hold if the host were its alone: what its controller measured, or `maximum`
        /// when its controller is held back by this budget.
        package var wanted = 1
        /// Transfers it has open, and how many of those had their answers.
        package var open = 0
        package var working = 0
        /// When it last stopped transfers to give connections back.
        package var gaveBackAt = -Double.infinity
    }

    package private(set) var ceiling: HostCeiling
    package private(set) var claims: [Int: Claim] = [:]
    /// Seconds a connection given back is not yet another download's.
    package var closeDelay = 0.1

    package init(ceiling: HostCeiling = HostCeiling()) { self.ceiling = ceiling }

    package var isEmpty: Bool { claims.isEmpty }

    /// What the host can have at once from this process.
    package var capacity: Int {
        let maximum = claims.values.map(\.maximum).max() ?? 1
        return min(maximum, ceiling.value ?? .max)
    }

    package mutating func join(_ download: Int, maximum: Int) {
        claims[download] = Claim(maximum: max(1, maximum))
    }

    package mutating func leave(_ download: Int) {
        claims[download] = nil
    }

    /// Records what `download` holds and wants; returns how many connections it may hold now.
    package mutating func report(_ download: Int, wanted: Int, open: Int, working: Int, now: Double) -> Int {
        guard var claim = claims[download] else { return 0 }
        claim.wanted = max(1, min(claim.maximum, wanted))
        claim.open = open
        claim.working = working
        claims[download] = claim
        let maximum = claims.values.map(\.maximum).max() ?? 1
        ceiling.update(inUse: claims.values.reduce(0) { $0 + $1.open }, maximum: maximum, now: now)
        return allowance(for: download, now: now)
    }

    /// `download` stopped transfers to hold fewer connections (its allowance or its controller said so)
    /// and has `open` and `working` left.
    package mutating func gaveBack(_ download: Int, open: Int, working: Int, now: Double) {
        claims[download]?.open = open
        claims[download]?.working = working
        claims[download]?.gaveBackAt = now
    }

    /// A request of `download` was refused (429, 503, a reset before its first byte) while it had `working`
    /// answered transfers. Returns true when that is the host's limit, counted over every download here.
    package mutating func refused(_ download: Int, working: Int, retryAfter: Double?, now: Double) -> Bool {
        claims[download]?.working = working
        return ceiling.refused(working: totalWorking, retryAfter: retryAfter, now: now)
    }

    /// A response of `download` was accepted while it had `working` answered transfers, itself included.
    package mutating func accepted(_ download: Int, working: Int) {
        claims[download]?.working = working
        let maximum = claims.values.map(\.maximum).max() ?? 1
        ceiling.accepted(working: totalWorking, maximum: maximum)
    }

    /// How many connections `download` may hold: its fair share of the capacity and what no download
    /// wants (room for its controller to try more), less what the others still hold beyond theirs; no
    /// more than it holds while connections another gave back may still be closing.
    package func allowance(for download: Int, now: Double) -> Int {
        guard let claim = claims[download] else { return 0 }
        let shares = fairShares()
        let unwanted = capacity - shares.values.reduce(0, +)
        let others = claims.values.reduce(0) { $0 + $1.open } - claim.open
        let allowance = max(0, min((shares[download] ?? 0) + unwanted, capacity - others))
        let closing = claims.contains { $0.key != download && now - $0.value.gaveBackAt < closeDelay }
        // A newcomer's first request (its probe) waits for nobody on a host that has refused nothing: a
        // player may wait on it, and the others make room on their next turn.
        if claim.open == 0, ceiling.value == nil { return max(1, closing ? 0 : allowance) }
        return closing ? min(allowance, claim.open) : allowance
    }

    /// Max-min fair shares of the capacity: the smallest wants are met first, the rest is split evenly.
    /// Ties go to the download that joined first (the lower number).
    package func fairShares() -> [Int: Int] {
        var left = capacity
        var shares: [Int: Int] = [:]
        let byWant = claims.sorted { ($0.value.wanted, $0.key) < ($1.value.wanted, $1.key) }
        for (index, (download, claim)) in byWant.enumerated() {
            let remaining = byWant.count - index
            // Whole connections: the first of the remaining take the odd ones.
            let even = left / remaining + (left % remaining > 0 ? 1 : 0)
            let share = min(claim.wanted, even)
            shares[download] = share
            left -= share
        }
        return shares
    }

    private var totalWorking: Int { claims.values.reduce(0) { $0 + $1.working } }
}
