import VFetchCore

// The player cache: readers' positions steer the scheduler, and what reaches the file is reported
// to them promptly rather than in 256 KiB write-buffer steps.
extension Engine {
    /// Takes the readers' news to the scheduler and tells them of new bytes.
    func serveReaders() {
        guard let scheduler else { return }
        if let change = demand?.take() {
            if change.readersOnly, scheduler.playback?.windowsOnly == false, let demand {
                self.scheduler?.playback?.windowsOnly = true
                self.scheduler?.playback?.lookahead = demand.lookahead
            }
            self.scheduler?.playback?.positions = change.positions
            for offset in change.waits { self.scheduler?.startSoon(at: offset) }
            self.scheduler?.trimToWindows()
            awaitedOffsets += change.waits
        }
        // Playback waits on bytes on disk (the player's, or the index's): they sit in a write buffer for
        // 20 ms at most, and not at all once a reader waits for one of them.
        awaitedOffsets.removeAll { file?.written.contains($0) != false }
        for offset in awaitedOffsets { self.scheduler?.hurry(offset, now: now) }
        let awaitedArrived = awaitedOffsets.contains { scheduler.completed.contains($0) }
        if options.playbackOrder, awaitedArrived || now - lastReaderFlush >= Self.readerFlushInterval {
            lastReaderFlush = now
            do { try flushWriteBuffers() } catch { fatal = fatal ?? error }
        }
        guard let demand, let file else { return }
        if file.bytesWritten != reportedBytes || reportedBytes < 0 {
            reportedBytes = file.bytesWritten
            demand.written(file.written)
        }
    }

    /// How long bytes a reader may wait for sit in a write buffer at most.
    static let readerFlushInterval = 0.02
}
