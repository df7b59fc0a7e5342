/// One segment's place in a Representation's timeline: its `$Number$`, its start (`$Time$`) and its
/// duration, both in the Representation's timescale units.
struct DASHSegmentTime: Equatable {
    var number: Int
    var time: Int64
    var duration: Int64
}

/// The segments a `SegmentTimeline`, or a fixed segment `@duration`, lays out.
enum DASHSegmentTimeline {
    /// Where an `S@r` of -1 stops repeating, when no later `S@t` says, in timescale units.
    enum End: Equatable {
        /// The Period ends here: segments that start before it (the last may end after it).
        case period(Int64)
        /// A live stream's edge: segments that have ended by it.
        case liveEdge(Int64)
    }

    /// The segments of a `SegmentTimeline`: each `S` is `@d` long, starts at `@t` (else where the one
    /// before ended) and repeats `@r` more times. `@r` of -1 repeats until the next `S@t`, else
    /// until `end`, else not at all.
    static func segments(
        of timeline: MPDElement, startNumber: Int, end: End?, budget: inout SegmentBudget
    ) throws(StreamParseError) -> [DASHSegmentTime] {
        var segments: [DASHSegmentTime] = []
        var time: Int64 = 0
        var number = startNumber
        let entries = timeline.children("S")
        for (index, entry) in entries.enumerated() {
            if let start = try entry.unsigned("t") { time = start }
            guard let duration = try entry.unsigned("d"), duration > 0 else {
                throw StreamParseError("SegmentTimeline: an S has no d, or d=0")
            }
            let repeats: Int64
            switch try entry.integer("r") ?? 0 {
            case -1:
                // Times are not below 0, so `until - time` cannot overflow.
                switch try entries.dropFirst(index + 1).first?.unsigned("t").map(End.period) ?? end {
                case .period(let until)?:
                    // The segments that start before `until`, less this one.
                    repeats = until > time ? (until - time - 1) / duration : 0
                case .liveEdge(let edge)?:
                    repeats = edge > time ? max(0, (edge - time) / duration - 1) : 0
                case nil:
                    repeats = 0
                }
            case let count where count >= 0:
                repeats = count
            case let count:
                throw StreamParseError("SegmentTimeline: S@r is \(count)")
            }
            guard repeats < budget.remaining else {
                throw StreamParseError(
                    "SegmentTimeline: S@r=\(repeats) makes more than the \(budget.maxSegments) segments vfetch reads"
                )
            }
            try budget.take(Int(repeats) + 1)
            for _ in 0...repeats {
                segments.append(DASHSegmentTime(number: number, time: time, duration: duration))
                let (nextTime, timeOverflow) = time.addingReportingOverflow(duration)
                let (nextNumber, numberOverflow) = number.addingReportingOverflow(1)
                guard !timeOverflow, !numberOverflow else {
                    throw StreamParseError("SegmentTimeline: segment times or numbers run past 2^63")
                }
                time = nextTime
                number = nextNumber
            }
        }
        return segments
    }

    /// Segments of equal `duration` (SegmentTemplate@duration), the `indices`-th ones counting from 0
    /// at the start of the Period: segment k is number `startNumber + k` and starts at time
    /// `presentationTimeOffset + k × duration`.
    static func uniform(
        duration: Int64, startNumber: Int, presentationTimeOffset: Int64, indices: Range<Int>,
        budget: inout SegmentBudget
    ) throws(StreamParseError) -> [DASHSegmentTime] {
        try budget.take(indices.count)
        var segments: [DASHSegmentTime] = []
        segments.reserveCapacity(indices.count)
        for index in indices {
            let (number, numberOverflow) = startNumber.addingReportingOverflow(index)
            let (offset, offsetOverflow) = Int64(index).multipliedReportingOverflow(by: duration)
            let (time, timeOverflow) = presentationTimeOffset.addingReportingOverflow(offset)
            guard !numberOverflow, !offsetOverflow, !timeOverflow else {
                throw StreamParseError("SegmentTemplate: segment times or numbers run past 2^63")
            }
            segments.append(DASHSegmentTime(number: number, time: time, duration: duration))
        }
        return segments
    }
}
