import Foundation
import Testing
import VFetchCore

@testable import VFetchMedia

/// Inputs the fuzz tests (Fuzz/) found crashing the probe, cut down to the change that mattered:
/// a fixture with one field damaged rather than the fuzzer's bytes, which another ffmpeg would
/// make differently.
@Suite struct FuzzFoundMediaTests {
    /// A `tfdt` of 2^63 in the audio track's first fragment: libavformat reads the decode time as
    /// Int64.min, and the gap from it to the stream's start time overflowed.
    @Test(.enabled(if: ffmpegIsInstalled, "ffmpeg makes the fixture, and it is not installed"))
    func fragmentDecodeTimeOfTwoToTheSixtyThree() async throws {
        var data = try bytes(of: try await Fixture.fragmentedMP4.path)
        let tfdt = Array("tfdt".utf8)
        let boxes = (0..<data.count - 4).lazy.filter { data[$0..<$0 + 4].elementsEqual(tfdt) }
        // The second track fragment of the first fragment; version 1, so a 64-bit time.
        let audio = try #require(boxes.dropFirst().first)
        try #require(data[audio + 4] == 1)
        data.replaceSubrange(audio + 8..<audio + 16, with: [0x80, 0, 0, 0, 0, 0, 0, 0])
        let path = try temporaryFile(data, name: "tfdt.mp4")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let length = Int64(data.count)
        for present in [[0..<length], [0..<length / 3]] {
            let answer = try? await withProbe(path: path, length: length, present: present) { probe in
                (probe.playableRanges(present: present), probe.bytesNeeded(toStartAt: 3))
            }
            for range in answer?.1 ?? [] { #expect(range.upperBound <= length) }
        }
    }

    /// A Matroska `Cues` element whose size says 2^55 bytes: its range ran past the end of the
    /// file, and the probe asked for bytes no server has.
    @Test(.enabled(if: ffmpegIsInstalled, "ffmpeg makes the fixture, and it is not installed"))
    func cuesPastTheEnd() async throws {
        var data = try bytes(of: try await Fixture.matroska.path)
        let cuesID: [UInt8] = [0x1C, 0x53, 0xBB, 0x6B]
        let cues = try #require((0..<data.count - 4).last { data[$0..<$0 + 4].elementsEqual(cuesID) })
        let sizeLength = data[cues + 4].leadingZeroBitCount + 1
        data.replaceSubrange(cues + 4..<cues + 4 + sizeLength, with: [0x01, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        let path = try temporaryFile(data, name: "cues.mkv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let length = Int64(data.count)
        let layout = MatroskaLayout(source: try PartialFile(path: path))
        #expect(layout.cues == Int64(cues)..<length)
        let needed = try await withProbe(path: path, length: length, present: [0..<length / 2]) { probe in
            probe.bytesNeeded(toStartAt: 0)
        }
        #expect(needed.allSatisfy { $0.upperBound <= length })
    }

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
