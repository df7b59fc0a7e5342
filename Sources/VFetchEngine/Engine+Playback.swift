import VFetchContainers
import VFetchCore

// `--playback-order`: the tail at once, the container's index as soon as the head says where it is, then playback order.
extension Engine {
    /// Playback first: the tail now (an MP4 `moov` at the end costs no extra round trip), then the file in order.
    func planPlayback(length: Int64) {
        scheduler?.playback = SegmentScheduler.Playback(
            lookahead: demand?.lookahead ?? 8 << 20, chunk: 1 << 20, windowsOnly: demand.map { $0.prefetch != .full } ?? false)
        // The request sent with the probe takes the tail when it answers (or, failing that, `ended` asks).
        if demand?.prefetch != ReaderDemand.Prefetch.none, demand?.tailFirst ?? true, tail == nil {
            fetchTail(length: length)
        }
    }

    /// The tail the usual way: next on a free connection. Not pinned: it is a guess at where the index
    /// is, on one connection; the index itself is pinned once the head says exactly where it is.
    func fetchTail(length: Int64) {
        let start = length - min(Self.playbackTail, length / 2)  // at most half the file
        guard start < length else { return }
        scheduler?.startSoon(at: start)
    }

    /// Whether to ask for the tail at t=0, beside the probe, before the length is known: for playback
    /// (`--playback-order`, a player cache entry that prefetches and is not a stream's segment), unless an
    /// earlier run saved bytes to reuse.
    var wantsTailAtOnce: Bool {
        guard demand.map({ $0.prefetch != .none && $0.tailFirst }) ?? options.playbackOrder, options.connections > 1 else {
            return false
        }
        if case .file(let path) = destination, !options.restart, FileSystem.exists(SideFiles(output: path).manifest) { return false }
        return true
    }

    /// The tail's response: judged and bound to the end of the file once the probe has said what the file is.
    func tailAnswered(_ transfer: Transfer) -> Bool {
        guard remote != nil else {
            transfer.held = true  // its first bytes wait, paused (see `Driver.admit`)
            return true
        }
        return bindTail(transfer)
    }

    /// Makes the tail's response the holder of the end of the file if it is the bytes asked for, of the
    /// file the probe found; otherwise stops it (a redirector may have sent it to another mirror), and
    /// `ended` asks for the tail the usual way.
    func bindTail(_ transfer: Transfer) -> Bool {
        guard let remote, let file, let length = remote.length, remote.acceptsRanges, length > Self.playbackTail else {
            transfer.cut = .stopped
            return false
        }
        let asked = (length - Self.playbackTail)..<length
        if case .part = ResponseVerdict.check(transfer.head, asked: asked, remote: remote) {
            transfer.transferID = scheduler?.adopt(from: asked.lowerBound, now: now)
        }
        guard transfer.transferID != nil else {
            transfer.cut = .stopped
            return false
        }
        transfer.sink = WriteBuffer(capacity: 256 << 10, file: file)
        return true
    }

    /// Playback: as bytes reach the file, the container's head says where its index is (`ContainerIndex`);
    /// that range is fetched next, exactly, and its header first when only a pointer to it is known.
    /// An index that cannot be right leaves the playback order alone, with a notice.
    func locateIndex() {
        guard options.playbackOrder, !indexSettled, let file, let length = remote?.length,
            file.bytesWritten != indexCheckedAt
        else { return }
        indexCheckedAt = file.bytesWritten
        switch ContainerIndex.locate(length: length, read: { offset, count in file.bytes(at: offset, count: count) }) {
        case .range(let index):
            indexSettled = true
            guard let missing = file.written.gaps(in: index).first else { return }
            scheduler?.playback?.pinned.append(index)
            scheduler?.startSoon(at: missing.lowerBound, exactly: true)
        case .headerAt(let offset):
            guard indexHeaderAskedAt != offset else { return }
            indexHeaderAskedAt = offset
            scheduler?.startSoon(at: offset, exactly: true)
        case .none:
            indexSettled = true
        case .unknown:
            break
        case .damaged(let reason):
            indexSettled = true
            events.yield(.notice("the file's index cannot be right (\(reason)); fetching in playback order"))
        }
    }

    /// How much of the end of the file `--playback-order` fetches at once: what a throttled origin sends in its
    /// first write (nginx's `limit_rate` sends a second's worth at once), so an index at the very end comes
    /// with the head; a larger index is asked for exactly once the head says where it starts.
    static let playbackTail: Int64 = 512 << 10
}
