import Foundation
import Testing
import VFetchMedia

/// The duration of a fragmented MP4 of which only some fragments are present: libavformat knows
/// only the fragments it walked, the probe knows where the last one ends (or says it does not).
@Suite struct FragmentedDurationTests {
    /// ffprobe's duration of the whole file.
    private func ffprobeDuration(_ path: String) async throws -> Double {
        let result = try await runTool(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path])
        let text = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Double(text), "ffprobe said \(text) \(result.standardError)")
    }

    @Test func headAndTailGiveTheWholeDuration() async throws {
        let path = try await Fixture.fragmentedMP4.path
        let length = try fileLength(path)
        let expected = try await ffprobeDuration(path)
        // The first and last fragments, moov and mfra: not the fragments between.
        let present = [0..<length * 3 / 10, length * 7 / 10..<length]
        let (info, playable) = try await withProbe(path: path, length: length, present: present) {
            ($0.info, $0.playableRanges(present: present))
        }
        #expect(info.fragmented == true)
        let duration = try #require(info.duration)
        #expect(abs(duration - expected) < 0.1, "duration \(duration), ffprobe says \(expected)")
        let bitRate = try #require(info.bitRate)
        #expect(abs(Double(bitRate) - Double(length) * 8 / expected) < 1000, "bit rate \(bitRate)")
        // What plays is still what the fragments libavformat walked say.
        #expect(playable.first?.lowerBound == 0)
        #expect((playable.first?.upperBound ?? 0) > 2 && (playable.first?.upperBound ?? 99) < 4.5, "\(playable)")
    }

    @Test func withoutTheLastFragmentTheDurationIsUnknown() async throws {
        let path = try await Fixture.fragmentedMP4.path
        let length = try fileLength(path)
        // The head alone, then the head and the last few bytes: mfra, but not the fragment it leads to.
        for present in [[0..<length * 3 / 10], [0..<length * 3 / 10, length - 2000..<length]] {
            let (info, playable) = try await withProbe(path: path, length: length, present: present) {
                ($0.info, $0.playableRanges(present: present))
            }
            #expect(info.duration == nil, "present \(present)")
            #expect(info.bitRate == nil, "present \(present)")
            #expect(info.streams.count == 2)
            #expect((playable.first?.upperBound ?? 0) > 2, "\(playable)")
        }
    }

    @Test func theWholeFileAgreesWithFFprobe() async throws {
        let path = try await Fixture.fragmentedMP4.path
        let expected = try await ffprobeDuration(path)
        let info = try await withProbe(path: path) { $0.info }
        #expect(abs((info.duration ?? 0) - expected) < 0.05, "duration \(String(describing: info.duration))")
    }
}
