import Testing

@testable import VFetchMedia

/// Inputs the fuzz tests (Fuzz/) found crashing the probe, cut down to the change that mattered:
/// a fixture with one field damaged rather than the fuzzer's bytes, which another ffmpeg would
/// make differently.
@Suite struct FuzzFoundMediaTests {
    /// Index entries past the end of the file, as a damaged MP4 chunk offset or Matroska cue
    /// position gives them: one at Int64.max overflowed `position + size`.
    @Test func indexEntriesPastTheEnd() {
        let entries = [
            IndexEntry(position: 100, size: 100, time: 0, isKeyframe: true),
            IndexEntry(position: Int64.max, size: 10, time: 1, isKeyframe: true),
            IndexEntry(position: 900, size: 500, time: 2, isKeyframe: true),
            IndexEntry(position: 5000, size: 0, time: 3, isKeyframe: true),
        ]
        let index = MediaIndex(
            streams: [StreamIndex(isVideo: true, entries: entries)], header: [0..<Int64.max], length: 1000,
            duration: 4, isComplete: true)
        #expect(index.playableRanges(present: [0..<1000]) == [0...4])
        #expect(index.bytesNeeded(toStartAt: 1) == [0..<1000])
        #expect(index.byteOffset(forTime: 3) == 900)
    }
}
