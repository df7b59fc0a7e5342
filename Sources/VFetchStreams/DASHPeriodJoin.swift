/// Joins the tracks of an MPD's Periods into one track each, so that a download gets the whole
/// presentation and not its first Period alone (which may be a 30 s pre-roll).
enum DASHPeriodJoin {
    /// A track of one Period, with the `@id` of its AdaptationSet: what continues it in a later Period.
    struct Entry {
        var track: StreamTrack
        var adaptationSet: String?
    }

    /// One track per track of any Period; each later Period adds the segments of its counterpart
    /// (``Counterparts``), the first of them a discontinuity. A track missing from a Period is kept, as
    /// players keep it: that Period is a gap in it (its seconds in `gapSeconds`, the next segment a
    /// discontinuity), as are the Periods before a track's first (subtitles after a pre-roll).
    ///
    /// `durations`: each Period's length in seconds, where the MPD says or implies it.
    static func joined(_ periods: [[Entry]], durations: [Double?]) throws(StreamParseError) -> [StreamTrack] {
        var tracks: [Entry] = []
        var elapsed = 0.0
        for (number, (period, duration)) in zip(periods, durations).enumerated() {
            // A Period of unknown length (a live one's last) lasts as long as its longest track.
            let length =
                duration ?? period.compactMap { entry in
                    if case .list(let list) = entry.track.segments { list.duration } else { nil }
                }.max() ?? 0
            defer { elapsed += length }
            let counterparts = Counterparts(period)
            var used = Set<String>()
            for index in tracks.indices {
                let next = counterparts.of(tracks[index])
                if let next { used.insert(next.track.id) }
                try extend(&tracks[index].track, with: next?.track, lasting: length, period: number)
            }
            for entry in period where !used.contains(entry.track.id) {
                var late = entry
                if elapsed > 0, case .list(var list) = late.track.segments {
                    list.gapSeconds += elapsed
                    late.track.segments = .list(list)
                }
                tracks.append(late)
            }
        }
        guard !tracks.isEmpty else { throw StreamParseError("the MPD has no video, audio or text Representation") }
        return tracks.map(\.track)
    }

    /// Adds a later Period's counterpart to `track`, or the gap where it has none.
    private static func extend(_ track: inout StreamTrack, with next: StreamTrack?, lasting length: Double, period: Int)
        throws(StreamParseError)
    {
        let unjoinable = StreamParseError(
            "Period \(period + 1): a SegmentBase (sidx) track in an MPD of several Periods, which vfetch does not join")
        guard case .list(var list) = track.segments else { throw unjoinable }
        guard let next else {
            // The gap ends where the next Period's segments start, each a discontinuity.
            list.gapSeconds += length
            track.segments = .list(list)
            return
        }
        guard case .list(let more) = next.segments else { throw unjoinable }
        var added = more.segments
        if !added.isEmpty { added[0].discontinuity = true }
        list.segments += added
        list.gapSeconds += more.gapSeconds
        list.isComplete = list.isComplete && more.isComplete
        list.targetDuration = [list.targetDuration, more.targetDuration].compactMap { $0 }.max()
        track.segments = .list(list)
        if track.encryption == .none { track.encryption = next.encryption }
    }

    /// A later Period's tracks, found by what continues a track: the one with its id, else the one in
    /// an AdaptationSet of the same `@id`, else the one of its kind and language (else of its kind),
    /// each time the one whose bandwidth is nearest, as an inserted ad has.
    /// Indexed, so that a hostile MPD of many Periods and Representations costs no quadratic time.
    struct Counterparts {
        private var byID: [String: Entry] = [:]
        /// Each sorted by bandwidth.
        private var byAdaptationSet: [String: [Entry]] = [:]
        private var byKindAndLanguage: [String: [Entry]] = [:]
        private var byKind: [StreamTrack.Kind: [Entry]] = [:]

        init(_ entries: [Entry]) {
            for entry in entries {
                let track = entry.track
                byID[track.id] = byID[track.id] ?? entry
                if let set = entry.adaptationSet { byAdaptationSet[Self.key(track, set: set), default: []].append(entry) }
                byKindAndLanguage[Self.key(track), default: []].append(entry)
                byKind[track.kind, default: []].append(entry)
            }
            let sorted = { (entries: [Entry]) in entries.sorted { ($0.track.bandwidth ?? 0) < ($1.track.bandwidth ?? 0) } }
            byAdaptationSet = byAdaptationSet.mapValues(sorted)
            byKindAndLanguage = byKindAndLanguage.mapValues(sorted)
            byKind = byKind.mapValues(sorted)
        }

        func of(_ entry: Entry) -> Entry? {
            let track = entry.track
            if let same = byID[track.id] { return same }
            let sameSet = entry.adaptationSet.flatMap { byAdaptationSet[Self.key(track, set: $0)] }
            guard let candidates = sameSet ?? byKindAndLanguage[Self.key(track)] ?? byKind[track.kind] else { return nil }
            // The first at or above the bandwidth, or the one below it, whichever is nearer.
            let bandwidth = track.bandwidth ?? 0
            var low = 0
            var high = candidates.count
            while low < high {
                let middle = (low + high) / 2
                if (candidates[middle].track.bandwidth ?? 0) < bandwidth { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return candidates[low] }
            guard low < candidates.count else { return candidates[low - 1] }
            let above = (candidates[low].track.bandwidth ?? 0) - bandwidth
            let below = bandwidth - (candidates[low - 1].track.bandwidth ?? 0)
            return below <= above ? candidates[low - 1] : candidates[low]
        }

        private static func key(_ track: StreamTrack) -> String {
            track.kind.rawValue + "/" + (track.language ?? "")
        }

        private static func key(_ track: StreamTrack, set: String) -> String { track.kind.rawValue + "/" + set }
    }
}
