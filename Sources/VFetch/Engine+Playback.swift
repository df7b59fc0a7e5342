import VFetchCore

// `--stream`: the tail at once, the MP4 index as soon as the head says where it is, then playback order.
extension Engine {
    /// Playback first: the tail now (an MP4 `moov` at the end costs no extra round trip), then the file in order.
    func planPlayback(length: Int64) {
        scheduler?.playback = SegmentScheduler.Playback(
            lookahead: demand?.lookahead ?? 8 << 20, chunk: 1 << 20, windowsOnly: demand.map { $0.prefetch != .full } ?? false)
        let tail = min(Self.playbackTail, length / 2)
        if tail > 0, demand?.prefetch != ReaderDemand.Prefetch.none {
            scheduler?.playback?.pinned.append((length - tail)..<length)
            scheduler?.startSoon(at: length - tail)
        }
    }

    /// `--stream`: once the head is on disk, the top-level boxes say exactly where an MP4's `moov` is;
    /// if the tail fetched at once does not cover it, it is fetched next.
    func locateMovieBox() {
        guard !movieBoxSettled, let file, let length = remote?.length else { return }
        let layout = MP4Boxes.scan(length: length) { offset, count in file.bytes(at: offset, count: count) }
        if !layout.boxes.isEmpty, !MP4Boxes.looksLikeMP4(layout.boxes) {
            movieBoxSettled = true  // not MP4: playback order alone will do
        } else if let moov = MP4Boxes.moov(in: layout.boxes) {
            movieBoxSettled = true
            if let missing = file.written.gaps(in: moov.range).first {
                scheduler?.playback?.pinned.append(moov.range)
                scheduler?.startSoon(at: missing.lowerBound)
            }
        } else if let next = layout.stoppedAt {
            // The box after `mdat`: fetched next unless a transfer is about to reach it.
            scheduler?.startSoon(at: next)
        }
    }

    /// How much of the end of the file `--stream` fetches at once.
    static let playbackTail: Int64 = 2 << 20
}
