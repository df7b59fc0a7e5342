/// What serve's readers ask of the scheduler, through the engine: the bytes a reader waits for
/// start soon, a silent holder at them is raced, a transfer makes way for them, and the windows
/// playback wants next (and, with `--prefetch window|none`, nothing past them).
extension SegmentScheduler {
    /// Makes the bytes from `offset` on the next to be fetched: unless a transfer will reach them within
    /// half a second at its own rate, the segment holding `offset` is split there (at its block, or
    /// `exactly` there) and its second part goes to the next free connection (see `transferToPreempt`).
    /// A container's index is asked for exactly: it is small, and everything waits for it.
    package mutating func startSoon(at offset: Int64, exactly: Bool = false) {
        guard rangeRequests,
            let index = segments.firstIndex(where: { $0.next <= offset && offset < $0.end })
        else { return }
        let point = exactly ? offset : offset - offset % configuration.alignment
        let next = segments[index].next
        guard let holder = segments[index].holders.first else {
            segments[point > next ? split(index, at: point) : index].urgent = true
            return
        }
        guard point > next else { return }  // the holder is at the byte already (see `hurry`)
        let rate = rates.rate(of: holder) ?? rates.typical ?? 0
        let soonEnough = exactly ? 0 : max(Double(configuration.alignment), rate / 2)
        guard Double(point - next) > soonEnough else { return }
        segments[split(index, at: point)].urgent = true
    }

    /// A reader waits for the byte at `offset`: once its holder, at that byte, has paused long enough
    /// (see `Racing.racesHolder`), a fresh request races it from there, once. Call it every turn while
    /// the reader waits.
    package mutating func hurry(_ offset: Int64, now: Double) {
        guard rangeRequests, let index = segments.firstIndex(where: { $0.next <= offset && offset < $0.end }),
            segments[index].holders.count == 1, let holder = transfers[segments[index].holders[0]]
        else { return }
        let silence = now - (bursts.lastChunk(of: segments[index].holders[0]) ?? holder.startedAt)
        guard racing.racesHolder(at: segments[index].next, waitedAt: offset, silence: silence) else { return }
        segments[index].raceSoon = true
    }

    /// When `startSoon` work or a reader's window waits and every connection is busy: the transfer to
    /// stop for it (see `Racing.transferToPreempt`), never the one bringing a window's first bytes.
    package var transferToPreempt: TransferID? {
        let windows = playbackWindows
        let urgent = segments.contains { ($0.urgent && $0.holders.isEmpty) || $0.raceSoon }
        let readersWait = playback?.positions.isEmpty == false && playbackCut(windows) != nil
        let held = segments.compactMap { segment in segment.holders.first.map { (range: segment.range, holder: $0) } }
        return Racing.transferToPreempt(held: held, windows: windows, urgent: urgent, readersWait: readersWait)
    }

    /// The ranges playback wants next (see `Playback.windows`).
    package var playbackWindows: [Range<Int64>] {
        playback?.windows(firstMissing: segments.lazy.map(\.next).min(), total: total) ?? []
    }

    /// In windowsOnly mode, makes transfers stop at the end of the windows they serve (at the next block
    /// boundary when they serve none); the rest of their segments waits for a reader to come near.
    package mutating func trimToWindows() {
        guard let playback, playback.windowsOnly else { return }
        let windows = playbackWindows
        for index in segments.indices where !segments[index].holders.isEmpty {
            let end = playback.heldEnd(of: segments[index].range, windows: windows, block: configuration.alignment)
            _ = cut(index, at: end, roundingUp: true)
        }
    }

    /// Where to cut a held segment so each playback window is fetched chunk by chunk (see `Playback.cut`).
    func playbackCut(_ windows: [Range<Int64>]) -> Int64? {
        let missing = segments.sorted { $0.next < $1.next }.map { (range: $0.range, held: !$0.holders.isEmpty) }
        return playback?.cut(missing, windows: windows, block: configuration.alignment)
    }

    /// Ends idle segment `index` where its request in `window` ends (see `Playback.requestEnds`).
    mutating func endRequest(_ index: Int, in window: Range<Int64>) {
        guard let playback else { return }
        for end in playback.requestEnds(from: segments[index].next, in: window, block: configuration.alignment) {
            _ = cut(index, at: end, roundingUp: false)
        }
    }
}
