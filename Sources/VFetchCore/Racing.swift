/// When a second request races the transfer that holds a range, and which transfer gives way when
/// urgent work waits and every connection is busy.
///
/// A race fetches bytes twice, so it pays only against a straggler, or where a reader waits at a holder
/// that went silent; a preempted transfer's bytes are asked for again later, so it is the one whose
/// bytes are needed last. Pure: the scheduler describes its ranges, their holders and their rates.
package struct Racing: Sendable {
    /// A range whose holder needs longer than this to finish, at under `factor` of the typical rate, is raced.
    package let afterSeconds: Double
    package let factor: Double
    /// A reader waiting at its holder's next byte races it after this much silence.
    package let hurryGap: Double
    /// How far before a reader's offset its holder counts as at it: a block.
    package let block: Int64

    package init(afterSeconds: Double, factor: Double, hurryGap: Double, block: Int64) {
        self.afterSeconds = afterSeconds
        self.factor = factor
        self.hurryGap = hurryGap
        self.block = block
    }

    /// Whether a reader waiting at `offset` races the only holder of its range, which fetches from `next`
    /// and has sent nothing for `silence` seconds. The holder is at the reader's byte and paused: its
    /// response is likely past its burst (nginx sends a response's first second at once and the next a
    /// second later), and a fresh request starts with a burst of its own.
    package func racesHolder(at next: Int64, waitedAt offset: Int64, silence: Double) -> Bool {
        next + block > offset && silence >= hurryGap
    }

    /// Whether the only holder of a range with `remaining` bytes, going at `rate` (nil: not measured yet)
    /// where `typicalRate` is typical, is a straggler worth racing: stalled, or slow with far to go.
    package func isStraggler(remaining: Int64, rate: Double?, typicalRate: Double?) -> Bool {
        guard let rate else { return false }
        if rate <= 0 { return true }  // delivered nothing for a whole tick: stalled
        guard let typicalRate, rate < factor * typicalRate else { return false }
        return Double(remaining) / rate > afterSeconds
    }

    /// The transfer to stop when urgent work (`urgent`) or a reader's window (`readersWait`) waits and
    /// every connection is busy; `held` names each held range's first holder. The one furthest into the
    /// file outside every window goes, its bytes needed last; for urgent work, failing that, the one
    /// furthest in. Never the one bringing a window's first bytes: they would only be asked for again, later.
    package static func transferToPreempt(
        held: [(range: Range<Int64>, holder: TransferID)], windows: [Range<Int64>], urgent: Bool, readersWait: Bool
    ) -> TransferID? {
        guard urgent || readersWait else { return nil }
        let preemptible = held.filter { held in !windows.contains { held.range.contains($0.lowerBound) } }
        let background = preemptible.filter { held in !windows.contains { $0.overlaps(held.range) } }
        let furthest = { (held: [(range: Range<Int64>, holder: TransferID)]) in
            held.max { $0.range.lowerBound < $1.range.lowerBound }
        }
        return (furthest(background) ?? (urgent ? furthest(preemptible) : nil))?.holder
    }
}
