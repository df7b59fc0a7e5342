/// When a download records its progress: often enough that a kill loses little, seldom enough that
/// checkpoints take little of the download's time.
///
/// A kill loses what arrived since the last checkpoint. At most `bytes` (8 MiB) and `interval`
/// (1 s) pass between two, whatever a checkpoint costs. Once a quarter of `bytes` has arrived, one
/// comes sooner if it is cheap: when the last one took no more than `timeShare` of the time since
/// it. On a fast download to a page cache or tmpfs (a fraction of a millisecond each) that is every
/// 2 MiB, so a kill loses about 1 MiB rather than 4; on a disk whose syncs take tens of
/// milliseconds, `bytes` still decides.
package struct CheckpointPacing: Sendable, Equatable {
    /// The longest time between checkpoints while bytes arrive.
    package var interval: Double
    /// The most bytes received between checkpoints.
    package var bytes: Int64
    /// The share of the time checkpoints may take when they come before `bytes`.
    package var timeShare = 0.05

    package init(interval: Double, bytes: Int64) {
        self.interval = interval
        self.bytes = bytes
    }

    /// Whether a checkpoint is due `seconds` after the last one began, `received` bytes later,
    /// when the last one took `cost` seconds.
    package func isDue(seconds: Double, received: Int64, cost: Double) -> Bool {
        if seconds >= interval || received >= bytes { return true }
        return received >= bytes / 4 && cost <= seconds * timeShare
    }
}
