import Testing

@testable import VFetchCore

/// Playback order on its own: the windows readers want, and where requests in them end, in byte offsets.
@Suite struct PlaybackTests {
    static let mib: Int64 = 1 << 20
    static let block: Int64 = 64 << 10

    func playback(windowsOnly: Bool = false) -> SegmentScheduler.Playback {
        SegmentScheduler.Playback(lookahead: 4 * Self.mib, chunk: Self.mib, windowsOnly: windowsOnly)
    }

    @Test func withoutReadersOneWindowStartsAtTheFirstMissingByte() {
        #expect(playback().windows(firstMissing: 3 * Self.mib, total: 64 * Self.mib) == [3 * Self.mib..<7 * Self.mib])
        #expect(playback().windows(firstMissing: nil, total: 64 * Self.mib).isEmpty, "nothing is missing")
        #expect(playback(windowsOnly: true).windows(firstMissing: 0, total: 64 * Self.mib).isEmpty, "no reader, no window")
    }

    @Test func eachReaderHasAWindowEndingAtTheFileAndPinnedRangesComeFirst() {
        var playback = playback()
        playback.positions = [10 * Self.mib, 62 * Self.mib, 80 * Self.mib]
        playback.pinned = [60 * Self.mib..<61 * Self.mib]
        let windows = playback.windows(firstMissing: 0, total: 64 * Self.mib)
        // A reader past the end asked for another version of the file: its window is empty.
        #expect(
            windows == [
                60 * Self.mib..<61 * Self.mib, 10 * Self.mib..<14 * Self.mib, 62 * Self.mib..<64 * Self.mib,
                64 * Self.mib..<64 * Self.mib,
            ])
    }

    static let chunks: [(distance: Int64, size: Int64)] = [(0, 64 << 10), (1 << 20, 256 << 10), (3 << 20, 768 << 10), (40 << 20, 1 << 20)]

    @Test(arguments: chunks)
    func aChunkIsAQuarterOfItsDistanceIntoTheWindowFromABlockToTheLargest(distance: Int64, size: Int64) {
        #expect(playback().chunkSize(at: distance, minimum: Self.block) == size)
    }

    @Test func aHolderBeforeTheWindowIsCutAtTheWindowsBlock() {
        let window = 10 * Self.mib + 100..<14 * Self.mib + 100
        let cut = playback().cut([(0..<64 * Self.mib, true)], windows: [window], block: Self.block)
        #expect(cut == 10 * Self.mib)
    }

    @Test func aHolderAtTheWindowIsCutAfterItsChunkUntilEveryChunkIsHeld() {
        let window = 0..<4 * Self.mib
        var missing: [(range: Range<Int64>, held: Bool)] = [(0..<64 * Self.mib, true)]
        var cuts: [Int64] = []
        while let cut = playback().cut(missing, windows: [window], block: Self.block) {
            cuts.append(cut)
            let last = missing.removeLast().range
            missing += [(last.lowerBound..<cut, true), (cut..<last.upperBound, true)]
        }
        // A block, then a quarter of the distance, growing to 1 MiB, until the window is covered.
        #expect(cuts.first == Self.block)
        #expect(zip(cuts, cuts.dropFirst()).allSatisfy { $0 < $1 && $1 - $0 <= Self.mib })
        #expect(cuts.last.map { $0 >= window.upperBound - Self.mib && $0 < window.upperBound } == true)
    }

    @Test func anIdleRangeIsNeverCutAndNoChunkIsASliver() {
        let window = 0..<4 * Self.mib
        #expect(playback().cut([(0..<64 * Self.mib, false)], windows: [window], block: Self.block) == nil)
        // What the chunk would leave is under half a chunk: the holder keeps it all.
        #expect(playback().cut([(0..<Self.block + 1000, true)], windows: [window], block: Self.block) == nil)
    }

    @Test func aRequestInAWindowEndsAfterItsChunkAndInWindowsOnlyModeAtTheWindowsEnd() {
        let window = 2 * Self.mib..<6 * Self.mib
        #expect(playback().requestEnds(from: 3 * Self.mib, in: window, block: Self.block) == [3 * Self.mib + 256 << 10])
        // Just before a block boundary the chunk goes on to the next one.
        let late = playback().requestEnds(from: 2 * Self.mib + Self.block - 10, in: window, block: Self.block)
        #expect(late == [2 * Self.mib + 2 * Self.block])
        let ends = playback(windowsOnly: true).requestEnds(from: 5 * Self.mib + 900 << 10, in: window, block: Self.block)
        #expect(ends == [6 * Self.mib + 832 << 10, 6 * Self.mib])
    }

    @Test func aHeldRangeStopsAtTheEndOfTheWindowsItServesOrAtItsNextBlock() {
        let windows = [0..<Self.mib + 10, 3 * Self.mib..<4 * Self.mib]
        #expect(playback().heldEnd(of: 0..<64 * Self.mib, windows: windows, block: Self.block) == 4 * Self.mib)
        #expect(playback().heldEnd(of: 0..<2 * Self.mib, windows: windows, block: Self.block) == Self.mib + Self.block)
        #expect(playback().heldEnd(of: 5 * Self.mib + 7..<6 * Self.mib, windows: windows, block: Self.block) == 5 * Self.mib + Self.block)
    }
}
