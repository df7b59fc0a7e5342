import VFetchCore

// `--stream`: the tail at once, the MP4 index as soon as the head says where it is, then playback order.
extension Engine {
    /// Playback first: the tail now (an MP4 `moov` at the end costs no extra round trip), then the file in order.
    func planPlayback(length: Int64) {
        scheduler?.playback = SegmentScheduler.Playback(
            lookahead: demand?.lookahead ?? 8 << 20, chunk: 1 << 20, windowsOnly: demand.map { $0.prefetch != .full } ?? false)
        // The request sent with the probe takes the tail when it answers (or, failing that, `transferDone` asks).
        if demand?.prefetch != ReaderDemand.Prefetch.none, !transfers.values.contains(where: \.isTail) {
            fetchTail(length: length)
        }
    }

    /// The tail the usual way: pinned, and next on a free connection.
    func fetchTail(length: Int64) {
        let start = length - min(Self.playbackTail, length / 2)  // at most half the file
        guard start < length else { return }
        scheduler?.playback?.pinned.append(start..<length)
        scheduler?.startSoon(at: start)
    }

    /// Whether to ask for the tail at t=0, beside the probe, before the length is known: for playback
    /// (`--stream`, a player cache entry that prefetches), unless an earlier run saved bytes to reuse.
    var wantsTailAtOnce: Bool {
        guard demand.map({ $0.prefetch != .none }) ?? options.stream, options.connections > 1 else { return false }
        if case .file(let path) = destination, !options.restart, FileSystem.exists(SideFiles(output: path).manifest) { return false }
        return true
    }

    func startTail() {
        start(url: url, range: nil, id: nil, isProbe: false, isTail: true)
    }

    /// The tail's response: judged and bound to the end of the file once the probe has said what the file is.
    func tailAnswered(_ transfer: Transfer) -> Bool {
        guard remote != nil else {
            transfer.waitsForProbe = true  // its first bytes wait, paused (see `admit`)
            return true
        }
        return bindTail(transfer)
    }

    /// Makes the tail's response the holder of the end of the file if it is the bytes asked for, of the
    /// file the probe found; otherwise stops it (a redirector may have sent it to another mirror), and
    /// `transferDone` asks for the tail the usual way.
    func bindTail(_ transfer: Transfer) -> Bool {
        guard let remote, let length = remote.length, remote.acceptsRanges, length > Self.playbackTail else {
            transfer.abort = .stopped
            return false
        }
        let asked = (length - Self.playbackTail)..<length
        if ResponseVerdict.check(transfer.head, asked: asked, remote: remote) == .accept {
            transfer.id = scheduler?.adopt(from: asked.lowerBound, now: now)
        }
        guard transfer.id != nil else {
            transfer.abort = .stopped
            return false
        }
        scheduler?.playback?.pinned.append(asked)
        return true
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
