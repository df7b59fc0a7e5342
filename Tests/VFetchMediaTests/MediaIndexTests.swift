import Testing

@testable import VFetchMedia

/// The time-to-bytes model on hand-made indexes, no libavformat involved.
@Suite struct MediaIndexTests {
    /// 10 s of interleaved video and audio, 10 packets a second each, 100 bytes apiece after a
    /// 1000-byte header: video at 1000 + 200·i, audio right after it. A video keyframe every second.
    private func interleaved(isComplete: Bool = true, fragments: [Fragment] = []) -> MediaIndex {
        let video = (0..<100).map {
            IndexEntry(position: 1000 + 200 * Int64($0), size: 100, time: Double($0) / 10, isKeyframe: $0 % 10 == 0)
        }
        let audio = (0..<100).map {
            IndexEntry(position: 1100 + 200 * Int64($0), size: 100, time: Double($0) / 10, isKeyframe: true)
        }
        return MediaIndex(
            streams: [StreamIndex(isVideo: false, entries: audio), StreamIndex(isVideo: true, entries: video)],
            header: [0..<1000], fragments: fragments, length: 21_000, duration: 10, isComplete: isComplete)
    }

    @Test func everythingPresentPlaysEverything() {
        #expect(interleaved().playableRanges(present: [0..<21_000]) == [0...10])
    }

    @Test func nothingPlaysWithoutTheHeader() {
        #expect(interleaved().playableRanges(present: [1000..<21_000]).isEmpty)
        #expect(interleaved().playableRanges(present: []).isEmpty)
    }

    @Test func aHolePlaysUpToItAndAgainFromTheNextKeyframe() {
        // The hole takes video packet 34 (3.4 s) at 1000 + 200·34 = 7800.
        let playable = interleaved().playableRanges(present: [0..<7850, 7900..<21_000])
        #expect(playable == [0...3.4, 4...10])
    }

    @Test func aMissingAudioPacketStopsPlaybackToo() {
        // Audio packet 55 (5.5 s) lies at 1100 + 200·55 = 12_100. The video around it is whole
        // from its keyframe at 5 s, so play resumes with the next audio packet.
        let playable = interleaved().playableRanges(present: [0..<12_150, 12_200..<21_000])
        #expect(playable == [0...5.5, 5.6...10])
    }

    @Test func presentTailWithoutAKeyframeIsNotPlayable() {
        // From 4.5 s on (video 45 at 10_000), with no keyframe until 5 s.
        #expect(interleaved().playableRanges(present: [0..<1000, 10_000..<21_000]) == [5...10])
    }

    @Test func anIncompleteIndexEndsAtItsLastEntry() {
        #expect(interleaved(isComplete: false).playableRanges(present: [0..<21_000]) == [0...9.9])
    }

    @Test func bytesToStartAreTheHeaderAndOneGOP() {
        let index = interleaved()
        // 3.5 s: the keyframe at 3 s is video 30 (7000); the GOP ends before video 40 (9000).
        #expect(index.bytesNeeded(toStartAt: 3.5) == [0..<1000, 7000..<9000])
        #expect(index.byteOffset(forTime: 3.5) == 7000)
        #expect(index.byteOffset(forTime: 3) == 7000)
        #expect(index.byteOffset(forTime: 2.99) == 5000)
        // Past the end: the last GOP, to the end of the data.
        #expect(index.bytesNeeded(toStartAt: 60) == [0..<1000, 19_000..<21_000])
        // Before the start: the first GOP.
        #expect(index.byteOffset(forTime: -1) == 1000)
    }

    @Test func fragmentsNeedTheirMoof() {
        // Pretend each second is a fragment: a moof just before the mdat holding its samples.
        let fragments = (0..<10).map { second in
            let start = 1000 + 2000 * Int64(second)
            return Fragment(moof: start - 20..<start - 8, mdat: start - 8..<start + 2000)
        }
        let index = interleaved(fragments: fragments)
        #expect(index.bytesNeeded(toStartAt: 3.5) == [0..<1000, 6980..<6992, 7000..<9000])
        // Without the moof of the fragment at 3 s, playback stops there.
        #expect(index.playableRanges(present: [0..<6980, 6992..<21_000]) == [0...2.9, 4...10])
    }

    /// Matroska cues: keyframe positions only; the bytes up to the next entry belong to each.
    @Test func positionsOnlyEntriesSpanToTheNextEntry() {
        let cues = (0..<5).map {
            IndexEntry(position: 100 + 1000 * Int64($0), size: 0, time: Double($0) * 2, isKeyframe: true)
        }
        let ignored = [IndexEntry(position: 100, size: 0, time: 0, isKeyframe: true)]
        let index = MediaIndex(
            streams: [StreamIndex(isVideo: true, entries: cues), StreamIndex(isVideo: false, entries: ignored)],
            header: [0..<100], length: 5100, duration: 10, isComplete: true)
        #expect(index.playableRanges(present: [0..<5100]) == [0...10])
        #expect(index.playableRanges(present: [0..<3000]) == [0...4])
        #expect(index.playableRanges(present: [0..<100, 2100..<5100]) == [4...10])
        #expect(index.bytesNeeded(toStartAt: 5) == [0..<100, 2100..<3100])
        #expect(index.bytesNeeded(toStartAt: 9) == [0..<100, 4100..<5100])
    }

    @Test func withoutAnIndexTheHeadPlaysInProportion() {
        let index = MediaIndex(streams: [], header: [], length: 1000, duration: 10, isComplete: false)
        #expect(index.playableRanges(present: [0..<250, 500..<700]) == [0...2.5])
        #expect(index.playableRanges(present: [0..<1000]) == [0...10])
        #expect(index.playableRanges(present: [500..<1000]).isEmpty)
        #expect(index.byteOffset(forTime: 5) == nil)
    }

    @Test func rangeArithmetic() {
        #expect(MediaIndex.intersection([0...3, 5...9], [1...6, 8...10]) == [1...3, 5...6, 8...9])
        #expect(MediaIndex.merged([4...6, 0...1, 1...2, 5...8]) == [0...2, 4...8])
    }
}
