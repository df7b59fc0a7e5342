/// Joins the tracks of an MPD's Periods into one track each, so that a download gets the whole
/// presentation and not its first Period alone (which may be a 30 s pre-roll).
enum DASHPeriodJoin {
    /// One track per track of the first Period that has any; each later Period adds the segments of
    /// its counterpart (``Counterparts``), the first of them a discontinuity. A track with no
    /// counterpart in some Period is left out, as it would have a gap.
    static func joined(_ periods: [[StreamTrack]]) throws(StreamParseError) -> [StreamTrack] {
        let periods = periods.filter { !$0.isEmpty }
        guard var tracks = periods.first else {
            throw StreamParseError("the MPD has no video, audio or text Representation")
        }
        for (number, later) in periods.enumerated().dropFirst() {
            let counterparts = Counterparts(later)
            var kept: [StreamTrack] = []
            for var track in tracks {
                guard let next = counterparts.of(track) else { continue }
                guard case .list(var list) = track.segments, case .list(let more) = next.segments else {
                    throw StreamParseError(
                        "Period \(number + 1): a SegmentBase (sidx) track in an MPD of several Periods, "
                            + "which vfetch does not join")
                }
                var added = more.segments
                if !added.isEmpty { added[0].discontinuity = true }
                list.segments += added
                list.isComplete = list.isComplete && more.isComplete
                list.targetDuration = [list.targetDuration, more.targetDuration].compactMap { $0 }.max()
                track.segments = .list(list)
                if track.encryption == .none { track.encryption = next.encryption }
                kept.append(track)
            }
            tracks = kept
        }
        guard !tracks.isEmpty else { throw StreamParseError("the MPD's Periods have no track in common") }
        return tracks
    }

    /// A later Period's tracks, found by what continues a track: the one with its id, else the one of
    /// its kind and language (else of its kind) whose bandwidth is nearest, as an inserted ad has.
    /// Indexed, so that a hostile MPD of many Periods and Representations costs no quadratic time.
    struct Counterparts {
        private var byID: [String: StreamTrack] = [:]
        /// Each sorted by bandwidth.
        private var byKindAndLanguage: [String: [StreamTrack]] = [:]
        private var byKind: [StreamTrack.Kind: [StreamTrack]] = [:]

        init(_ tracks: [StreamTrack]) {
            for track in tracks {
                byID[track.id] = byID[track.id] ?? track
                byKindAndLanguage[Self.key(track), default: []].append(track)
                byKind[track.kind, default: []].append(track)
            }
            byKindAndLanguage = byKindAndLanguage.mapValues { $0.sorted { ($0.bandwidth ?? 0) < ($1.bandwidth ?? 0) } }
            byKind = byKind.mapValues { $0.sorted { ($0.bandwidth ?? 0) < ($1.bandwidth ?? 0) } }
        }

        func of(_ track: StreamTrack) -> StreamTrack? {
            if let same = byID[track.id] { return same }
            guard let candidates = byKindAndLanguage[Self.key(track)] ?? byKind[track.kind] else { return nil }
            // The first at or above the bandwidth, or the one below it, whichever is nearer.
            let bandwidth = track.bandwidth ?? 0
            var low = 0
            var high = candidates.count
            while low < high {
                let middle = (low + high) / 2
                if (candidates[middle].bandwidth ?? 0) < bandwidth { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return candidates[low] }
            guard low < candidates.count else { return candidates[low - 1] }
            let above = (candidates[low].bandwidth ?? 0) - bandwidth
            let below = bandwidth - (candidates[low - 1].bandwidth ?? 0)
            return below <= above ? candidates[low - 1] : candidates[low]
        }

        private static func key(_ track: StreamTrack) -> String {
            track.kind.rawValue + "/" + (track.language ?? "")
        }
    }
}
