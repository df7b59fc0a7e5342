import Foundation

/// Reads where one Representation's segments come from: its SegmentTemplate, SegmentList or
/// SegmentBase, merged with those of its AdaptationSet and Period, or else its BaseURL alone.
struct DASHSegmentReader {
    var isLive: Bool
    var availabilityStart: Date?
    var timeShiftBufferDepth: Double?
    var now: Date
    var timing: PeriodTiming
    var representationID: String
    var bandwidth: Int?
    /// The Representation's BaseURL, resolved.
    var base: URL
    /// Whether some level below the MPD's own URL set a BaseURL (else `base` is the MPD itself).
    var hasBaseURL: Bool
    var encryption: SegmentEncryption

    static let kinds = ["SegmentTemplate", "SegmentList", "SegmentBase"]

    /// The segments, from the segment information of `levels` (Period, AdaptationSet, Representation).
    ///
    /// The lowest level that has segment information decides its kind; the same kind at the levels
    /// above lends the attributes and children (SegmentTimeline, Initialization) it does not set.
    func segments(levels: [MPDElement], budget: inout SegmentBudget) throws(StreamParseError) -> SegmentSource {
        let kind = levels.reversed().lazy.compactMap { level in Self.kinds.first { level.child($0) != nil } }.first
        guard let kind else { return try wholeFile(budget: &budget) }
        var merged = MPDElement(name: kind)
        for level in levels {
            guard let element = level.child(kind) else { continue }
            merged.attributes.merge(element.attributes) { $1 }
            let names = Set(element.children.map(\.name))
            merged.children = merged.children.filter { !names.contains($0.name) } + element.children
        }
        switch kind {
        case "SegmentTemplate": return try template(merged, budget: &budget)
        case "SegmentList": return try list(merged, budget: &budget)
        default: return try indexed(merged, budget: &budget)
        }
    }

    // MARK: - SegmentTemplate

    private func template(_ template: MPDElement, budget: inout SegmentBudget) throws(StreamParseError)
        -> SegmentSource
    {
        let timescale = try Self.timescale(template)
        let offset = try template.unsigned("presentationTimeOffset") ?? 0
        let startNumber = Int(try template.unsigned("startNumber") ?? 1)
        guard let media = template["media"] else { throw StreamParseError("SegmentTemplate has no media") }
        let mediaTemplate = try DASHURLTemplate(media)
        var initialization: MediaResource?
        if let text = template["initialization"] {
            let path = try DASHURLTemplate(text).expand(
                representationID: representationID, number: startNumber, time: offset, bandwidth: bandwidth)
            initialization = MediaResource(url: try DASHLocation.resolve(path, against: base, budget: &budget))
        } else {
            initialization = try self.initialization(template.child("Initialization"), budget: &budget)
        }

        let times: [DASHSegmentTime]
        var periodEnd: Double?
        if let timeline = template.child("SegmentTimeline") {
            var end: DASHSegmentTimeline.End?
            if let length = timing.duration, let ticks = Self.ticks(length, timescale: timescale, after: offset) {
                end = .period(ticks)
            } else if let elapsed = liveElapsed, let ticks = Self.ticks(elapsed, timescale: timescale, after: offset) {
                end = .liveEdge(ticks)
            }
            times = try DASHSegmentTimeline.segments(
                of: timeline, startNumber: startNumber, end: end, budget: &budget)
        } else if let duration = try template.unsigned("duration"), duration > 0 {
            let seconds = Double(duration) / Double(timescale)
            times = try DASHSegmentTimeline.uniform(
                duration: duration, startNumber: startNumber, presentationTimeOffset: offset,
                indices: try uniformIndices(segmentSeconds: seconds), budget: &budget)
            periodEnd = isLive ? nil : timing.duration
        } else {
            throw StreamParseError("SegmentTemplate has neither a SegmentTimeline nor a duration")
        }

        var segments: [MediaSegment] = []
        segments.reserveCapacity(times.count)
        for time in times {
            let path = try mediaTemplate.expand(
                representationID: representationID, number: time.number, time: time.time, bandwidth: bandwidth)
            segments.append(
                MediaSegment(
                    resource: MediaResource(url: try DASHLocation.resolve(path, against: base, budget: &budget)),
                    duration: Double(time.duration) / Double(timescale), sequence: time.number,
                    initialization: initialization, encryption: encryption))
        }
        // Segments counted from @duration fill the Period; the last one ends with it.
        if let periodEnd, let last = times.last, !segments.isEmpty {
            let start = Double(last.time - offset) / Double(timescale)
            segments[segments.count - 1].duration = min(
                segments[segments.count - 1].duration, max(0, periodEnd - start))
        }
        return .list(list(segments))
    }

    /// Which segments of a SegmentTemplate@duration exist, counting from 0 at the Period's start: a
    /// static Period's length in segments, the last one partly; a live one's segments that have ended
    /// by `now`, less those older than the time shift buffer.
    private func uniformIndices(segmentSeconds: Double) throws(StreamParseError) -> Range<Int> {
        if !isLive {
            guard let length = timing.duration else {
                throw StreamParseError(
                    "SegmentTemplate@duration with no Period length (no mediaPresentationDuration or Period@duration)")
            }
            return 0..<(try Self.count(length / segmentSeconds, roundingUp: true))
        }
        guard let elapsed = liveElapsed else {
            throw StreamParseError("a dynamic MPD with SegmentTemplate@duration and no availabilityStartTime")
        }
        let available = try Self.count(min(elapsed, timing.duration ?? elapsed) / segmentSeconds, roundingUp: false)
        guard let depth = timeShiftBufferDepth else { return 0..<available }
        let kept = try Self.count(depth / segmentSeconds, roundingUp: true)
        return max(0, available - kept)..<available
    }

    /// Seconds from the Period's start to `now`, for a live stream that says when it started.
    private var liveElapsed: Double? {
        guard isLive, let availabilityStart else { return nil }
        return max(0, now.timeIntervalSince(availabilityStart) - (timing.start ?? 0))
    }

    // MARK: - SegmentList

    private func list(_ list: MPDElement, budget: inout SegmentBudget) throws(StreamParseError) -> SegmentSource {
        let timescale = try Self.timescale(list)
        let startNumber = Int(try list.unsigned("startNumber") ?? 1)
        let duration = try list.unsigned("duration")
        let initialization = try self.initialization(list.child("Initialization"), budget: &budget)
        let entries = list.children("SegmentURL")
        try budget.take(entries.count)
        guard startNumber <= Int.max - entries.count else {
            throw StreamParseError("SegmentList: segment numbers run past 2^63")
        }
        var timed: [DASHSegmentTime] = []
        if duration == nil, let timeline = list.child("SegmentTimeline") {
            timed = try DASHSegmentTimeline.segments(of: timeline, startNumber: startNumber, end: nil, budget: &budget)
        }
        var segments: [MediaSegment] = []
        segments.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let url =
                try entry["media"].map { (media) throws(StreamParseError) in
                    try DASHLocation.resolve(media, against: base, budget: &budget)
                } ?? base
            let range = try entry["mediaRange"].map { (text) throws(StreamParseError) in
                try DASHLocation.byteRange(text)
            }
            let seconds: Double
            if let duration {
                seconds = Double(duration) / Double(timescale)
            } else if index < timed.count {
                seconds = Double(timed[index].duration) / Double(timescale)
            } else {
                seconds = (timing.duration ?? 0) / Double(entries.count)
            }
            segments.append(
                MediaSegment(
                    resource: MediaResource(url: url, byteRange: range), duration: seconds,
                    sequence: startNumber + index, initialization: initialization, encryption: encryption))
        }
        return .list(self.list(segments))
    }

    // MARK: - SegmentBase, or no segment information

    private func indexed(_ segmentBase: MPDElement, budget: inout SegmentBudget) throws(StreamParseError)
        -> SegmentSource
    {
        let initialization = try self.initialization(segmentBase.child("Initialization"), budget: &budget)
        guard let text = segmentBase["indexRange"] else { return try wholeFile(initialization, budget: &budget) }
        return .indexed(url: base, initialization: initialization, indexRange: try DASHLocation.byteRange(text))
    }

    /// A Representation with no segment information, or a SegmentBase without an index: its BaseURL
    /// is one segment, the whole Period long.
    private func wholeFile(_ initialization: MediaResource? = nil, budget: inout SegmentBudget) throws(StreamParseError)
        -> SegmentSource
    {
        guard hasBaseURL else {
            throw StreamParseError(
                "Representation \"\(representationID.prefix(40))\" has no SegmentTemplate, SegmentList, SegmentBase or BaseURL"
            )
        }
        try budget.take(1)
        let segment = MediaSegment(
            resource: MediaResource(url: base), duration: timing.duration ?? 0, sequence: 1,
            initialization: initialization, encryption: encryption)
        return .list(list([segment]))
    }

    // MARK: - Parts

    /// `Initialization@sourceURL` (else the BaseURL itself) and `@range`.
    private func initialization(_ element: MPDElement?, budget: inout SegmentBudget) throws(StreamParseError)
        -> MediaResource?
    {
        guard let element else { return nil }
        let url =
            try element["sourceURL"].map { (source) throws(StreamParseError) in
                try DASHLocation.resolve(source, against: base, budget: &budget)
            } ?? base
        let range = try element["range"].map { (text) throws(StreamParseError) in try DASHLocation.byteRange(text) }
        return MediaResource(url: url, byteRange: range)
    }

    private func list(_ segments: [MediaSegment]) -> SegmentList {
        SegmentList(segments: segments, isComplete: !isLive, targetDuration: segments.map(\.duration).max())
    }

    private static func timescale(_ element: MPDElement) throws(StreamParseError) -> Int64 {
        let timescale = try element.unsigned("timescale") ?? 1
        guard timescale > 0 else { throw StreamParseError("\(element.name.prefix(40))@timescale is 0") }
        return timescale
    }

    /// `seconds` after the Period's start as a time in `timescale` units, counted from `offset`
    /// (presentationTimeOffset); nil when it does not fit.
    private static func ticks(_ seconds: Double, timescale: Int64, after offset: Int64) -> Int64? {
        let ticks = (seconds * Double(timescale)).rounded() + Double(offset)
        guard ticks.isFinite, ticks >= 0, ticks < 0x1p62 else { return nil }
        return Int64(ticks)
    }

    /// A count of segments from a quotient, which must stay within what vfetch reads. A quotient a
    /// hair above a whole number (6.006 s / 2.002 s) is that number, not one more.
    private static func count(_ quotient: Double, roundingUp: Bool) throws(StreamParseError) -> Int {
        guard quotient.isFinite, quotient >= 0 else { throw StreamParseError("SegmentTemplate@duration is 0") }
        let nearest = quotient.rounded()
        let whole =
            abs(quotient - nearest) <= 1e-9 * max(1, quotient)
            ? nearest : roundingUp ? quotient.rounded(.up) : quotient.rounded(.down)
        guard whole <= Double(1 << 52) else {
            throw StreamParseError("the manifest lists more than \(SegmentBudget.maxSegments) segments")
        }
        return Int(whole)
    }
}
