extension SegmentScheduler {
    package struct Configuration: Sendable, Equatable {
        /// No segment is split into parts smaller than this.
        package var minSplitSize: Int64 = 1 << 20
        /// Split points fall on multiples of this, so cache blocks are written by one segment.
        package var alignment: Int64 = 64 << 10
        /// A transfer slower than this fraction of the typical rate for `slowSeconds` ticks is replaced.
        package var slowFactor: Double = 0.3
        package var slowSeconds: Int = 3
        /// A segment whose holder needs longer than this to finish, at under `raceFactor` of the
        /// typical rate, is raced by an idle connection: a race only pays against a straggler.
        package var raceAfterSeconds: Double = 0.3
        package var raceFactor: Double = 0.5
        package var retry = RetryPolicy()
        /// Learn the burst that starts each response (see `ResponseBursts`). The engine turns it on,
        /// except under `--max-speed`, whose pauses would look like the origin's.
        package var learnsBursts = false
        /// A pause of at least this long, after at least `minimumBurst` bytes, ends a response's burst.
        package var burstGap = 0.3
        /// A reader waiting at its holder's next byte races it after this much silence (see `hurry`).
        package var hurryGap = 0.1
        package var minimumBurst: Int64 = 256 << 10
        /// Until the burst is known, requests ask for this much: nginx's default first chunk, so the first
        /// requests of a download do not all pause together after it. After three responses that delivered
        /// it all without a pause, one request asks for twice as much: if that one does not pause either,
        /// the size doubles (an unthrottled origin soon gets whole segments); if it pauses, the size stays.
        package var firstRequestSize: Int64 = 2 << 20
        package init() {}

        /// The split floor when the user names none: 1 MiB, lower for a file too small to give each of
        /// `connections` two of those; never below 64 KiB (`--min-split` is held to that too).
        package static func minSplitSize(length: Int64?, connections: Int, asked: Int64? = nil) -> Int64 {
            max(64 << 10, asked ?? min(1 << 20, (length ?? .max) / Int64(2 * max(1, connections))))
        }
    }
}
