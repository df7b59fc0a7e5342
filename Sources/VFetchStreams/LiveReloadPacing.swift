/// When to read a live playlist again: a target duration after the last read when it brought new segments,
/// half of one when it had not changed (as hls.js and ffmpeg do), and never sooner than `floor` after
/// it, so a playlist that says `#EXT-X-TARGETDURATION:0` cannot make the client read it in a loop.
/// No clock: the caller waits `interval` from its last read.
package struct LiveReloadPacing: Sendable, Equatable {
    /// The shortest wait between two reads, whatever the playlist says.
    package static let floor = 1.0
    /// The target duration when no playlist gave one.
    package static let defaultTarget = 2.0

    /// Seconds from the last read to the next.
    package private(set) var interval: Double
    private var target: Double

    /// After the first read, whose lists gave `targetDuration` (nil: none did).
    package init(targetDuration: Double?) {
        target = Self.usable(targetDuration) ?? Self.defaultTarget
        interval = max(Self.floor, target)
    }

    /// A read gave `targetDuration` (nil: none; the last one holds) and `changed`: new segments or not.
    package mutating func reloaded(targetDuration: Double?, changed: Bool) {
        target = Self.usable(targetDuration) ?? target
        interval = max(Self.floor, changed ? target : target / 2)
    }

    private static func usable(_ seconds: Double?) -> Double? {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return nil }
        return seconds
    }
}
