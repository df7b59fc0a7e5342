import VFetchCore

// The player cache: readers' positions steer the scheduler, and what reaches the file is reported
// to them promptly rather than in 256 KiB write-buffer steps.
extension Engine {
    /// Takes the readers' news to the scheduler and tells them of new bytes.
    func serveReaders() {
        guard scheduler != nil else { return }
        // Playback waits on bytes on disk (the player's, or the index's): they do not wait in a buffer.
        if options.stream, now - lastReaderFlush >= Self.readerFlushInterval {
            lastReaderFlush = now
            do { try flushWriteBuffers() } catch { fatal = fatal ?? error }
        }
        guard let demand, let file else { return }
        if let change = demand.take() {
            if change.readersOnly, scheduler?.playback?.windowsOnly == false {
                scheduler?.playback?.windowsOnly = true
                scheduler?.playback?.lookahead = demand.lookahead
            }
            scheduler?.playback?.positions = change.positions
            for offset in change.waits { scheduler?.startSoon(at: offset) }
            scheduler?.trimToWindows()
        }
        if file.bytesWritten != reportedBytes || reportedBytes < 0 {
            reportedBytes = file.bytesWritten
            demand.written(file.written)
        }
    }

    /// How long bytes a reader may wait for sit in a write buffer at most.
    static let readerFlushInterval = 0.02
}
