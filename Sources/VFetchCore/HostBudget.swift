/// The connections one host gets from this process, shared by every download that fetches from it (a
/// file's, a stream's, the player cache's, the queue's), so that downloads from one host split what it
/// allows instead of fighting over it. A value type: told what each download wants and each transfer as
/// it opens and closes, it answers whether a transfer may open now. Pure: the clock is an argument.
///
/// - The host gets at most the largest `--connections` of its downloads, and no more than it allows
///   (its `HostCeiling`, learned from refusals counted across all of them).
/// - That is split by max-min fairness: a download that wants less leaves the rest to the others.
/// - A transfer counts from the moment it opens, so two downloads never take the same room; one cut
///   before its answer ended counts `closeDelay` longer, since the host counts a response it was sending
///   until it sees the close. A download alone on the host reopens at once what it cut: nothing else
///   would take the room, and a host that refuses that teaches its ceiling.
package struct HostBudget: Sendable {
    /// What one download holds and wants.
    package struct Claim: Sendable, Equatable {
        /// Its `--connections`.
        package var maximum: Int
        /// What it would hold if the host were its alone: what its controller measured, or `maximum`
        /// when its controller is held back by this budget; 0 while it has nothing to fetch.
        package var wanted = 1
        /// A player waits on its first request (see `allowance`).
        package var urgent = false
        /// Transfers it has open, and how many of those had their answers.
        package var open = 0
        package var working = 0
        /// Until when each transfer it cut may still count at the host.
        package var closing: [Double] = []
    }

    package private(set) var ceiling: HostCeiling
    package private(set) var claims: [Int: Claim] = [:]
    /// Seconds a transfer cut before its answer ended still counts.
    package var closeDelay = 0.1

    package init(ceiling: HostCeiling = HostCeiling()) { self.ceiling = ceiling }

    package var isEmpty: Bool { claims.isEmpty }

    /// What the host can have at once from this process.
    package var capacity: Int { min(largestMaximum, ceiling.value ?? .max) }

    private var largestMaximum: Int { claims.values.map(\.maximum).max() ?? 1 }

    /// `urgent`: a player waits on the download's first request.
    package mutating func join(_ download: Int, maximum: Int, urgent: Bool = false) {
        claims[download] = Claim(maximum: max(1, maximum), urgent: urgent)
    }

    package mutating func leave(_ download: Int) {
        claims[download] = nil
    }

    /// Records what `download` wants and how many of its transfers had their answers; returns how many
    /// connections it may hold now.
    package mutating func report(_ download: Int, wanted: Int, working: Int, now: Double) -> Int {
        guard var claim = claims[download] else { return 0 }
        claim.wanted = max(0, min(claim.maximum, wanted))
        claim.working = working
        claim.closing.removeAll { $0 <= now }
        claims[download] = claim
        ceiling.update(inUse: held(now: now), maximum: largestMaximum, now: now)
        return allowance(for: download, now: now)
    }

    /// Opens a transfer for `download` if it may hold one more now: then it counts at once.
    package mutating func open(_ download: Int, now: Double) -> Bool {
        guard let claim = claims[download] else { return false }
        let holds = claims.count > 1 ? held(claim, now: now) : claim.open
        guard holds < allowance(for: download, now: now) else { return false }
        claims[download]?.open += 1
        return true
    }

    /// One of `download`'s transfers ended. `cut`: it was stopped while the host was still sending, and
    /// counts there until the host sees the close.
    package mutating func closed(_ download: Int, cut: Bool, now: Double) {
        guard var claim = claims[download] else { return }
        claim.open = max(0, claim.open - 1)
        claim.closing.removeAll { $0 <= now }
        if cut { claim.closing.append(now + closeDelay) }
        claims[download] = claim
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
        ceiling.accepted(working: totalWorking, maximum: largestMaximum)
    }

    /// How many connections `download` may hold: its fair share of the capacity and what no download
    /// wants (room for its controller to try more), less what the others hold beyond theirs.
    package func allowance(for download: Int, now: Double) -> Int {
        guard let claim = claims[download] else { return 0 }
        let shares = fairShares()
        let unwanted = capacity - shares.values.reduce(0, +)
        let others = held(now: now) - held(claim, now: now)
        let allowance = max(0, min((shares[download] ?? 0) + unwanted, capacity - others))
        // A player waits on an urgent first request: on a host that has refused nothing it goes at once,
        // and the others make room on their next turn.
        if claim.urgent, claim.open == 0, ceiling.value == nil { return max(1, allowance) }
        return allowance
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

    /// Transfers a download has open or cut too recently for the host to have seen them close.
    private func held(_ claim: Claim, now: Double) -> Int { claim.open + claim.closing.count { $0 > now } }

    private func held(now: Double) -> Int { claims.values.reduce(0) { $0 + held($1, now: now) } }

    private var totalWorking: Int { claims.values.reduce(0) { $0 + $1.working } }
}
