import VFetchCore

/// One entry of a stream's index: a packet (MP4: every sample) or a place to start decoding
/// (Matroska: a cue point, the position of a cluster), in file bytes and seconds.
struct IndexEntry: Equatable, Sendable {
    var position: Int64
    /// Bytes from `position`; 0 when the index does not say, and the entry then runs to the next
    /// entry's position (of any stream) or the end of the file.
    var size: Int64
    /// Seconds from the start of the container (MP4: decoding time).
    var time: Double
    var isKeyframe: Bool
}

/// One stream's index entries, in time order.
struct StreamIndex: Equatable, Sendable {
    var isVideo: Bool
    var entries: [IndexEntry]
    /// Seconds the entries' times were moved from decoding to presentation time (B-frames).
    var decodeDelay: Double = 0
}

/// A movie fragment of a fragmented MP4: samples in `mdat` can only be read with the `moof` before it.
struct Fragment: Equatable, Sendable {
    var moof: Range<Int64>
    var mdat: Range<Int64>
}

/// Maps time to bytes for one file, from its streams' indexes. Pure Swift: it knows no C.
///
/// A stretch of time is playable when every index entry it needs is present, starting at a
/// keyframe. With sizes in the index (MP4, interleaved audio and video) every audio and video
/// stream counts; with positions only (Matroska cues, video keyframes) the bytes between two
/// entries belong to the earlier entry's time, and that one stream stands for all of them.
struct MediaIndex: Sendable {
    /// Bytes any playback needs before a sample: container header and index (MP4: `ftyp`, `moov`).
    var header: [Range<Int64>]
    /// Index bytes that were missing when the file was opened, needed to seek (Matroska `Cues`).
    var missingIndex: Range<Int64>?
    /// Fragmented MP4 only, in file order.
    var fragments: [Fragment]
    var length: Int64
    var duration: Double
    /// Whether the index covers the whole file. When it does not (Matroska without its Cues, an
    /// MP4 whose later fragments are not present), a run of present entries ends at the last entry.
    var isComplete: Bool
    /// The streams that decide playback, the primary one (video if any) first.
    private(set) var streams: [StreamIndex]
    /// Every entry's position, sorted and unique: where an entry without a size ends.
    private let positions: [Int64]

    init(
        streams candidates: [StreamIndex], header: [Range<Int64>], missingIndex: Range<Int64>? = nil,
        fragments: [Fragment] = [], length: Int64, duration: Double?, isComplete: Bool
    ) {
        let indexed = candidates.map { stream in
            var stream = stream
            // Only a damaged container puts an entry outside the file (an MP4 chunk offset past its
            // end, a Matroska cue position libavformat adds to the segment's start unchecked): no
            // playback can read it, and a position near Int64.max overflows `position + size`.
            stream.entries = stream.entries.compactMap { entry in
                guard entry.position >= 0, entry.position < length else { return nil }
                var entry = entry
                entry.size = min(max(0, entry.size), length - entry.position)
                return entry
            }
            stream.entries.sort { ($0.time, $0.position) < ($1.time, $1.position) }
            return stream
        }.filter { !$0.entries.isEmpty }
        var ordered = indexed
        if let primary = indexed.firstIndex(where: \.isVideo) {
            ordered.insert(ordered.remove(at: primary), at: 0)
        }
        if let primary = ordered.first, primary.entries.allSatisfy({ $0.size == 0 }) {
            ordered = [primary]
        }
        self.streams = ordered
        self.positions = Array(Set(indexed.flatMap { $0.entries.map(\.position) })).sorted()
        // Within the file too: a header that runs to a first entry past the end, or damaged Cues
        // whose size runs past it, cannot ask for bytes the file does not have.
        let file = 0..<max(0, length)
        self.header = header.map { $0.clamped(to: file) }
        self.missingIndex = missingIndex?.clamped(to: file)
        self.fragments = fragments.sorted { $0.mdat.lowerBound < $1.mdat.lowerBound }
        self.length = length
        self.isComplete = isComplete
        let lastTime = indexed.flatMap { $0.entries.map(\.time) }.max() ?? 0
        self.duration = duration ?? max(0, lastTime)
    }

    // MARK: Playable time

    /// Time ranges (seconds) that can be played from the bytes `present`, sorted and merged.
    func playableRanges(present: [Range<Int64>]) -> [ClosedRange<Double>] {
        let present = PresentBytes(present)
        guard header.allSatisfy(present.covers) else { return [] }
        guard !streams.isEmpty else { return estimatedByBitRate(present) }
        var playable: [ClosedRange<Double>]?
        for stream in streams {
            let runs = playableRuns(of: stream, present: present)
            playable = playable.map { Self.intersection($0, runs) } ?? runs
        }
        return Self.merged(playable ?? []).filter { $0.upperBound > $0.lowerBound }
    }

    /// The stretches of one stream that start at a present keyframe and run until the first entry
    /// that is not present.
    private func playableRuns(of stream: StreamIndex, present: PresentBytes) -> [ClosedRange<Double>] {
        var runs: [ClosedRange<Double>] = []
        var start: Double?
        for (number, entry) in stream.entries.enumerated() {
            if requirements(of: entry).allSatisfy(present.covers) {
                // A stream whose first packet comes a little after the container's start plays from the start.
                if start == nil, entry.isKeyframe { start = number == 0 ? 0 : clamped(entry.time) }
            } else if let runStart = start {
                runs.append(runStart...max(runStart, clamped(entry.time)))
                start = nil
            }
        }
        if let runStart = start {
            let end = isComplete ? duration : clamped(stream.entries.last?.time ?? runStart)
            runs.append(runStart...max(runStart, end))
        }
        return runs
    }

    /// Without an index, assume a constant bit rate over the run of bytes present from the start.
    private func estimatedByBitRate(_ present: PresentBytes) -> [ClosedRange<Double>] {
        guard length > 0, duration > 0, let head = present.run(containing: 0) else { return [] }
        let end = head.upperBound >= length ? duration : duration * Double(head.upperBound) / Double(length)
        return [0...end]
    }

    // MARK: Bytes for a start time

    /// The byte ranges needed to start playing at `seconds`: header, a missing index, then from
    /// the keyframe at or before `seconds` (each stream) to the next keyframe of the primary
    /// stream; sorted and merged. Nothing present is subtracted.
    func bytesNeeded(toStartAt seconds: Double) -> [Range<Int64>] {
        var needed = ByteRangeSet(header)
        if let missingIndex { needed.insert(missingIndex) }
        for range in dataRanges(toStartAt: seconds) { needed.insert(range) }
        return needed.ranges
    }

    /// The file offset where reading for playback at `seconds` starts.
    func byteOffset(forTime seconds: Double) -> Int64? {
        dataRanges(toStartAt: seconds).map(\.lowerBound).min()
    }

    private func dataRanges(toStartAt seconds: Double) -> [Range<Int64>] {
        guard let primary = streams.first, let key = keyframe(atOrBefore: seconds, in: primary) else { return [] }
        let start = primary.entries[key].time
        let end = primary.entries[(key + 1)...].first { $0.isKeyframe && $0.time > start }?.time ?? .infinity
        var ranges: [Range<Int64>] = []
        for (number, stream) in streams.enumerated() {
            // The other streams from the primary keyframe's time, as a player reads them after
            // seeking there, to the next keyframe's decoding time: files interleave by decoding time.
            let first = number == 0 ? key : keyframe(atOrBefore: start, in: stream) ?? 0
            let stop = number == 0 ? end : end - primary.decodeDelay
            for entry in stream.entries[first...] {
                if entry.time >= stop { break }
                ranges += requirements(of: entry)
            }
        }
        return ranges
    }

    /// The last keyframe at or before `seconds`, or the first keyframe when there is none before.
    private func keyframe(atOrBefore seconds: Double, in stream: StreamIndex) -> Int? {
        let entries = stream.entries
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].time <= seconds { low = middle + 1 } else { high = middle }
        }
        if let before = entries[..<low].lastIndex(where: \.isKeyframe) { return before }
        return entries[low...].firstIndex(where: \.isKeyframe)
    }

    // MARK: Entries to bytes

    /// The bytes an entry needs: its own, and in a fragmented MP4 its fragment's `moof`.
    private func requirements(of entry: IndexEntry) -> [Range<Int64>] {
        let own = span(of: entry)
        guard let fragment = fragment(containing: entry.position) else { return [own] }
        return [fragment.moof, own]
    }

    private func span(of entry: IndexEntry) -> Range<Int64> {
        if entry.size > 0 { return entry.position..<entry.position + entry.size }
        var low = 0
        var high = positions.count
        while low < high {
            let middle = (low + high) / 2
            if positions[middle] <= entry.position { low = middle + 1 } else { high = middle }
        }
        let end = low < positions.count ? positions[low] : max(length, entry.position + 1)
        return entry.position..<end
    }

    private func fragment(containing position: Int64) -> Fragment? {
        guard !fragments.isEmpty else { return nil }
        var low = 0
        var high = fragments.count
        while low < high {
            let middle = (low + high) / 2
            if fragments[middle].mdat.lowerBound <= position { low = middle + 1 } else { high = middle }
        }
        guard low > 0, fragments[low - 1].mdat.contains(position) else { return nil }
        return fragments[low - 1]
    }

    private func clamped(_ time: Double) -> Double { min(max(0, time), duration) }

    // MARK: Range arithmetic

    static func intersection(_ a: [ClosedRange<Double>], _ b: [ClosedRange<Double>]) -> [ClosedRange<Double>] {
        var result: [ClosedRange<Double>] = []
        var i = 0
        var j = 0
        while i < a.count, j < b.count {
            let low = max(a[i].lowerBound, b[j].lowerBound)
            let high = min(a[i].upperBound, b[j].upperBound)
            if low <= high { result.append(low...high) }
            if a[i].upperBound < b[j].upperBound { i += 1 } else { j += 1 }
        }
        return result
    }

    static func merged(_ ranges: [ClosedRange<Double>]) -> [ClosedRange<Double>] {
        var result: [ClosedRange<Double>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }
}

/// The bytes present in a file, as sorted, merged runs, asked "is all of this present?" many times.
struct PresentBytes {
    private let runs: [Range<Int64>]

    init(_ ranges: [Range<Int64>]) {
        runs = ByteRangeSet(ranges).ranges
    }

    /// The run that holds `offset`, if that byte is present.
    func run(containing offset: Int64) -> Range<Int64>? {
        var low = 0
        var high = runs.count
        while low < high {
            let middle = (low + high) / 2
            if runs[middle].lowerBound <= offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0, runs[low - 1].contains(offset) else { return nil }
        return runs[low - 1]
    }

    func covers(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return true }
        guard let run = run(containing: range.lowerBound) else { return false }
        return run.upperBound >= range.upperBound
    }
}
