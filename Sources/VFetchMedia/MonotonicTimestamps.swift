/// The decoding times one output stream has had so far, to make the next ones grow as a muxer
/// requires: what `ffmpeg -c copy` does before it hands a packet to the muxer.
struct MonotonicTimestamps: Equatable {
    /// The last `dts` handed to the muxer.
    private(set) var lastDTS: Int64?

    /// The packet's `pts` and `dts`, fixed: a `dts` after its `pts` cannot be right, and both become
    /// the middle one of the two and the previous `dts` + 1; a `dts` not after the previous one
    /// (before it, when `strict` is false, for muxers that accept equal ones) is moved up to the
    /// smallest allowed, and the `pts` with it when it would fall behind.
    mutating func fix(pts: Int64, dts: Int64, strict: Bool) -> (pts: Int64, dts: Int64) {
        var (pts, dts) = (pts, dts)
        let next = lastDTS.map { $0 == .max ? $0 : $0 + 1 }
        let floor = strict ? next : lastDTS
        if dts > pts {
            let middle = [pts, dts, next ?? .min].sorted()[1]
            (pts, dts) = (middle, middle)
        }
        if let floor, dts < floor {
            if pts >= dts { pts = max(pts, floor) }
            dts = floor
        }
        lastDTS = dts
        return (pts, dts)
    }
}
