import Foundation
import Testing
import VFetchContainers
import VFetchCore
import VFetchMedia

/// Big Buck Bunny, encoded by someone else: moov at the end, H.264 High + AAC 5.1.
@Suite(.enabled(if: hasBigBuckBunny, "\(bigBuckBunny) is absent: the real-world sample tests are skipped"))
struct RealWorldMediaTests {
    @Test func describesBigBuckBunny() async throws {
        let info = try await withProbe(path: bigBuckBunny) { $0.info }
        #expect(info.container == "mp4")
        #expect(abs((info.duration ?? 0) - 30) <= 0.1, "\(String(describing: info.duration))")
        #expect(info.faststart == false)
        #expect(info.fragmented == false)
        let video = try #require(info.streams.first { $0.kind == "video" })
        #expect(video.codec == "h264")
        #expect(video.width == 854)
        #expect(video.height == 480)
        let audio = try #require(info.streams.first { $0.kind == "audio" })
        #expect(audio.codec == "aac")
        #expect(audio.channels == 6)
    }

    @Test func headAloneNeedsTheMoovBoxAtTheEnd() async throws {
        let data = try bytes(of: bigBuckBunny)
        let length = Int64(data.count)
        #expect(length == 4_139_823)
        let byHand = try #require(topLevelBoxes(data).first { $0.type == "moov" }?.range)
        #expect(byHand.upperBound == length)
        let scanned = MP4Boxes.scan(length: length) { offset, count in Array(data[Int(offset)..<Int(offset) + count]) }
        #expect(MP4Boxes.moov(in: scanned.boxes)?.range == byHand)
        #expect(MP4Boxes.isFaststart(scanned.boxes) == false)

        await #expect(throws: MediaError.needsBytes(byHand)) {
            try await withProbe(path: bigBuckBunny, length: length, present: [0..<length * 3 / 10]) { _ in () }
        }
    }

    /// What a downloader does at t=0: fetch the head and the tail in parallel, walk the box
    /// headers to find moov exactly, then probe.
    @Test func headAndTailFindTheMoovBoxAndPlay() async throws {
        let data = try bytes(of: bigBuckBunny)
        let length = Int64(data.count)
        let head: Range<Int64> = 0..<64 << 10
        let tail: Range<Int64> = length - (256 << 10)..<length
        let present = ByteRangeSet([head, tail])
        let walk = MP4Boxes.scan(length: length) { offset, count in
            present.gaps(in: offset..<offset + Int64(count)).isEmpty
                ? Array(data[Int(offset)..<Int(offset) + count]) : nil
        }
        let moov = try #require(MP4Boxes.moov(in: walk.boxes))
        #expect(moov.range == topLevelBoxes(data).first { $0.type == "moov" }?.range)

        let playable = try await withProbe(path: bigBuckBunny, length: length, present: [head, tail]) {
            $0.playableRanges(present: [head, tail])
        }
        let expectedEnd =
            try await ffprobePackets(bigBuckBunny)
            .filter { !($0.position >= head.lowerBound && $0.range.upperBound <= head.upperBound) }.map(\.pts).min()
            ?? 0
        #expect(playable.count == 1, "\(playable)")
        #expect(abs((playable.first?.upperBound ?? -10) - expectedEnd) <= 1.0, "\(playable) vs \(expectedEnd)")
    }

    @Test func wholeFilePlaysAndSeeksToKeyframes() async throws {
        let length = try fileLength(bigBuckBunny)
        let keyframes = try await ffprobePackets(bigBuckBunny).filter { $0.kind == "video" && $0.isKeyframe }
        let (playable, offset) = try await withProbe(path: bigBuckBunny) {
            ($0.playableRanges(present: [0..<length]), $0.byteOffset(forTime: 12))
        }
        #expect(playable.count == 1)
        #expect(abs((playable.first?.upperBound ?? 0) - 30) <= 0.1)
        // The keyframe at or before 12 s; audio interleaved just before it may come first.
        let keyframe = try #require(keyframes.last { $0.pts <= 12 })
        let before = try #require(keyframes.last { $0.pts < keyframe.pts })
        let start = try #require(offset)
        #expect(
            start <= keyframe.position && start >= before.range.upperBound,
            "\(start) vs keyframe at \(keyframe.position)")
    }
}
