extension SegmentScheduler {
    /// Playback order: the `lookahead` bytes after each reader's position (or, without readers, after
    /// the first missing byte) are fetched in chunks, in file order, before connections split what is
    /// left of the file.
    ///
    /// It knows where readers are and what they pinned (`positions`, `pinned`, set as readers move) and
    /// answers in byte offsets: which ranges are wanted next, where a request in a window ends, where a
    /// held range is cut so a window comes chunk by chunk. The scheduler splits its segments there.
    package struct Playback: Sendable, Equatable {
        package var lookahead: Int64
        /// The largest chunk (see `chunkSize`).
        package var chunk: Int64
        /// Where readers read (the player cache); empty: one window from the first missing byte.
        package var positions: [Int64] = []
        /// Fetch nothing outside the windows (the player cache's `--prefetch window|none`).
        package var windowsOnly = false
        /// Ranges wanted whatever the readers do, such as an MP4's index (`moov`).
        package var pinned: [Range<Int64>] = []
        package init(lookahead: Int64, chunk: Int64, windowsOnly: Bool = false) {
            self.lookahead = lookahead
            self.chunk = chunk
            self.windowsOnly = windowsOnly
        }

        /// The request for the bytes `distance` into a window: a quarter of the distance, at least
        /// `minimum` (a block), at most `chunk`. The bytes a player needs first, after it opens or
        /// seeks, come over several connections at once, and every later chunk still comes in time:
        /// its last byte, fetched from the moment the window opened at a fifth of the stream's bit
        /// rate, arrives before playback reaches it.
        package func chunkSize(at distance: Int64, minimum: Int64) -> Int64 {
            min(chunk, max(minimum, distance / 4))
        }

        /// The ranges playback wants next: `lookahead` bytes from each reader's position, or without
        /// readers from `firstMissing` (`--playback-order`), and the pinned ranges.
        package func windows(firstMissing: Int64?, total: Int64?) -> [Range<Int64>] {
            let end = total ?? .max
            // A reader's position may lie past the end (it asked for another version of the file).
            var starts = positions.map { min($0, end) }
            if starts.isEmpty, !windowsOnly, let firstMissing { starts = [firstMissing] }
            return pinned + starts.map { $0..<min($0 + lookahead, end) }
        }

        /// Where to cut a held range so each window is fetched chunk by chunk: inside one of `missing`
        /// (the missing ranges in file order, `held` when a transfer fetches it), or nil when each
        /// chunk of every window already has a transfer. Cuts fall on multiples of `block`.
        package func cut(_ missing: [(range: Range<Int64>, held: Bool)], windows: [Range<Int64>], block: Int64) -> Int64? {
            for window in windows {
                for (range, held) in missing {
                    guard range.upperBound > window.lowerBound else { continue }
                    guard range.lowerBound < window.upperBound else { break }
                    guard held else { continue }
                    // A holder still before the window does not serve it: cut at the window's start.
                    let start = window.lowerBound.aligned(to: block)
                    if start > range.lowerBound, start < range.upperBound { return start }
                    let chunk = chunkSize(at: range.lowerBound - window.lowerBound, minimum: block)
                    let cut = chunkEnd(from: range.lowerBound, size: chunk, block: block)
                    if cut < min(range.upperBound, window.upperBound), range.upperBound - cut >= chunk / 2 { return cut }
                }
            }
            return nil
        }

        /// Where the request for an idle range that starts at `start` in `window` ends, first to last
        /// (the range is cut at each that falls inside it): after one chunk, so the next connection takes
        /// the next; in windowsOnly mode at the latest at the window's end.
        package func requestEnds(from start: Int64, in window: Range<Int64>, block: Int64) -> [Int64] {
            let chunkEnd = chunkEnd(from: start, size: chunkSize(at: start - window.lowerBound, minimum: block), block: block)
            return windowsOnly ? [chunkEnd, window.upperBound.aligned(to: block, roundingUp: true)] : [chunkEnd]
        }

        /// In windowsOnly mode, where a transfer fetching `range` stops: at the end of the windows it serves
        /// (the next block boundary when it serves none); the rest waits for a reader to come near.
        package func heldEnd(of range: Range<Int64>, windows: [Range<Int64>], block: Int64) -> Int64 {
            let end = windows.filter { $0.overlaps(range) }.map(\.upperBound).max() ?? range.lowerBound + 1
            return end.aligned(to: block, roundingUp: true)
        }

        /// Where a chunk of about `size` bytes from `start` ends: on a block boundary, and past the next
        /// one when `start` lies just before it (a chunk is never a sliver).
        private func chunkEnd(from start: Int64, size: Int64, block: Int64) -> Int64 {
            let end = (start + size).aligned(to: block)
            return end - start >= size / 2 ? end : (start + size).aligned(to: block, roundingUp: true)
        }
    }
}

extension Int64 {
    /// This offset on a multiple of `block`: the one at or before it, or at or after it when `roundingUp`.
    func aligned(to block: Int64, roundingUp: Bool = false) -> Int64 {
        let down = self - self % block
        return roundingUp && down < self ? down + block : down
    }
}
