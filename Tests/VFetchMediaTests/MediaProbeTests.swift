import Foundation
import TestOrigin
import Testing
import VFetchContainers
import VFetchCore
import VFetchMedia

/// What each fixture must be, from the ffmpeg command that made it.
private struct Expected {
    var container: String
    var video: String?
    var audio: String
    var sampleRate: Int
    var faststart: Bool?
    var fragmented: Bool?

    init(_ fixture: Fixture) {
        switch fixture {
        case .faststartMP4:
            self = .init(
                container: "mp4", video: "h264", audio: "aac", sampleRate: 48000, faststart: true, fragmented: false)
        case .moovAtEndMP4:
            self = .init(
                container: "mp4", video: "h264", audio: "aac", sampleRate: 48000, faststart: false, fragmented: false)
        case .fragmentedMP4:
            self = .init(
                container: "mp4", video: "h264", audio: "aac", sampleRate: 48000, faststart: true, fragmented: true)
        case .matroska:
            self = .init(
                container: "matroska", video: "h264", audio: "aac", sampleRate: 48000, faststart: nil, fragmented: nil)
        case .webm:
            self = .init(
                container: "webm", video: "vp9", audio: "opus", sampleRate: 48000, faststart: nil, fragmented: nil)
        case .audioM4A:
            self = .init(
                container: "mp4", video: nil, audio: "aac", sampleRate: 44100, faststart: false, fragmented: false)
        }
    }

    private init(container: String, video: String?, audio: String, sampleRate: Int, faststart: Bool?, fragmented: Bool?) {
        self.container = container
        self.video = video
        self.audio = audio
        self.sampleRate = sampleRate
        self.faststart = faststart
        self.fragmented = fragmented
    }
}

/// The earliest presentation time that cannot be played from `present`: the smallest pts of a
/// packet not wholly present, from ffprobe's packet list.
private func firstUnplayableTime(_ packets: [ProbedPacket], present: Range<Int64>) -> Double {
    packets.filter { !(present.contains($0.position) && $0.range.upperBound <= present.upperBound) }.map(\.pts).min()
        ?? .infinity
}

@Suite struct MediaProbeTests {
    @Test(arguments: Fixture.allCases)
    func describesTheWholeFile(_ fixture: Fixture) async throws {
        let expected = Expected(fixture)
        let info = try await withProbe(path: try await fixture.path) { $0.info }
        #expect(info.container == expected.container)
        #expect(abs((info.duration ?? 0) - 10) <= 0.1, "duration \(String(describing: info.duration))")
        #expect((info.bitRate ?? 0) > 0)
        #expect(info.faststart == expected.faststart)
        #expect(info.fragmented == expected.fragmented)
        let video = info.streams.filter { $0.kind == "video" }
        let audio = info.streams.filter { $0.kind == "audio" }
        #expect(info.streams.count == (expected.video == nil ? 1 : 2))
        if let codec = expected.video {
            #expect(video.count == 1)
            #expect(video.first?.codec == codec)
            #expect(video.first?.width == 320)
            #expect(video.first?.height == 240)
            #expect(abs((video.first?.frameRate ?? 0) - 25) < 0.01)
        } else {
            #expect(video.isEmpty)
        }
        #expect(audio.count == 1)
        #expect(audio.first?.codec == expected.audio)
        #expect(audio.first?.channels == 2)
        #expect(audio.first?.sampleRate == expected.sampleRate)
    }

    @Test(arguments: Fixture.allCases)
    func wholeFileIsPlayableFromStartToEnd(_ fixture: Fixture) async throws {
        let path = try await fixture.path
        let length = try fileLength(path)
        let (duration, playable) = try await withProbe(path: path) {
            ($0.info.duration ?? 0, $0.playableRanges(present: [0..<length]))
        }
        #expect(playable.count == 1)
        #expect(playable.first?.lowerBound == 0)
        #expect(abs((playable.first?.upperBound ?? 0) - duration) <= 0.1, "\(playable) of \(duration) s")
        // And nothing at all without the bytes.
        let nothing = try await withProbe(path: path) { $0.playableRanges(present: []) }
        #expect(nothing.isEmpty)
    }

    /// The first 30% of the bytes play up to about the time ffprobe places at 30%, within one GOP
    /// (1 s): both when the probe saw the whole file, and when it was opened on the partial file
    /// (Matroska then has no Cues; a fragmented MP4 has only its first fragments).
    @Test(arguments: [Fixture.faststartMP4, .fragmentedMP4, .matroska, .webm], [true, false])
    func firstThirtyPercentPlaysToAboutThirtyPercentOfTheTime(_ fixture: Fixture, openedWhole: Bool) async throws {
        let path = try await fixture.path
        let length = try fileLength(path)
        let present = 0..<length * 3 / 10
        let expectedEnd = firstUnplayableTime(try await ffprobePackets(path), present: present)
        let playable = try await withProbe(path: path, length: length, present: openedWhole ? [0..<length] : [present]) {
            $0.playableRanges(present: [present])
        }
        #expect(playable.count == 1, "\(playable)")
        #expect(playable.first?.lowerBound == 0)
        let end = playable.first?.upperBound ?? -10
        #expect(abs(end - expectedEnd) <= 1.0, "playable to \(end) s, ffprobe says \(expectedEnd) s")
        #expect(expectedEnd > 2 && expectedEnd < 4.5, "the fixture is not what the test assumes")
    }

    /// With the moov box at the end and only the head present, nothing can be said until the
    /// moov box is there: the error names exactly its bytes.
    @Test(arguments: [Fixture.moovAtEndMP4, .audioM4A])
    func moovAtTheEndIsNeededFirst(_ fixture: Fixture) async throws {
        let path = try await fixture.path
        let data = try bytes(of: path)
        let length = Int64(data.count)
        let byHand = try #require(topLevelBoxes(data).first { $0.type == "moov" }?.range)
        let scanned = MP4Boxes.moov(
            in: MP4Boxes.scan(length: length) { offset, count in
                Array(data[Int(offset)..<Int(offset) + count])
            }.boxes)?.range
        #expect(scanned == byHand)
        #expect(byHand.lowerBound > length * 3 / 10, "the fixture is not what the test assumes")

        await #expect(throws: MediaError.needsBytes(byHand)) {
            try await withProbe(path: path, length: length, present: [0..<length * 3 / 10]) { _ in () }
        }
        // With moov's header present but not its body, the whole box is still what is needed.
        let moovHeader = byHand.lowerBound..<byHand.lowerBound + 16
        await #expect(throws: MediaError.needsBytes(byHand)) {
            try await withProbe(path: path, length: length, present: [0..<length * 3 / 10, moovHeader]) { _ in () }
        }
        // Head and the moov box: the probe opens and the head plays.
        let head = 0..<length * 3 / 10
        let playable = try await withProbe(path: path, length: length, present: [head, byHand]) {
            $0.playableRanges(present: [head, byHand])
        }
        let expectedEnd = firstUnplayableTime(try await ffprobePackets(path), present: head)
        #expect(abs((playable.first?.upperBound ?? -10) - expectedEnd) <= 1.0, "\(playable) vs \(expectedEnd)")
        // Without the moov box the probe that saw the whole file says nothing is playable.
        let withoutHeader = try await withProbe(path: path) { $0.playableRanges(present: [head]) }
        #expect(withoutHeader.isEmpty)
    }

    /// To start at 5 s: the keyframe packet at or before 5 s and the rest of its GOP, nothing
    /// past the next keyframe's packet, nothing from the GOP before; checked against ffprobe.
    @Test(arguments: [Fixture.faststartMP4, .moovAtEndMP4, .fragmentedMP4, .matroska, .webm])
    func bytesToStartAtFiveSecondsAreOneGOP(_ fixture: Fixture) async throws {
        let path = try await fixture.path
        let keyframes = try await ffprobePackets(path).filter { $0.kind == "video" && $0.isKeyframe }
            .sorted { $0.pts < $1.pts }
        let atFive = try #require(keyframes.last { $0.pts <= 5 })
        let next = try #require(keyframes.first { $0.pts > atFive.pts })
        let previous = try #require(keyframes.last { $0.pts < atFive.pts })
        let (needed, offset) = try await withProbe(path: path) {
            ($0.bytesNeeded(toStartAt: 5), $0.byteOffset(forTime: 5))
        }

        #expect(ByteRangeSet(needed).gaps(in: atFive.range).isEmpty, "\(needed) misses the keyframe \(atFive.range)")
        #expect(
            needed.allSatisfy {
                $0.upperBound <= next.range.upperBound
                    || $0.lowerBound >= next.range.upperBound && isHeader($0, fixture, path)
            },
            "\(needed) reaches past the next keyframe \(next.range)")
        let data = needed.filter { !isHeader($0, fixture, path) }
        let start = try #require(data.map(\.lowerBound).min())
        let offsetValue = try #require(offset)
        #expect(offsetValue == start)
        #expect(start <= atFive.position)
        #expect(start >= previous.range.upperBound, "\(needed) reaches back into the GOP at \(previous.pts) s")
    }

    @Test func bytesNeededIncludeTheMoovBox() async throws {
        let path = try await Fixture.moovAtEndMP4.path
        let data = try bytes(of: path)
        let moov = try #require(topLevelBoxes(data).first { $0.type == "moov" }?.range)
        let ftyp = try #require(topLevelBoxes(data).first { $0.type == "ftyp" }?.range)
        let needed = try await withProbe(path: path) { $0.bytesNeeded(toStartAt: 0) }
        #expect(ByteRangeSet(needed).gaps(in: moov).isEmpty)
        #expect(ByteRangeSet(needed).gaps(in: ftyp).isEmpty)
    }

    @Test func matroskaWithoutCuesNeedsThemToSeek() async throws {
        let path = try await Fixture.matroska.path
        let length = try fileLength(path)
        let head = 0..<length * 3 / 10
        let needed = try await withProbe(path: path, length: length, present: [head]) { $0.bytesNeeded(toStartAt: 5) }
        // ffmpeg writes Cues at the end, after the last cluster.
        #expect(needed.last?.upperBound == length, "\(needed)")
    }

    @Test(arguments: BrokenFile.allCases)
    func brokenFilesAreInvalidData(_ broken: BrokenFile) async throws {
        let path = try temporaryFile(try await broken.contents(), name: broken.rawValue)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let info = try await withProbe(path: path) { $0.info }
            Issue.record("\(broken) probed as \(info)")
        } catch {
            guard case .invalidData(let message) = error else {
                Issue.record("\(broken): \(error), expected .invalidData")
                return
            }
            #expect(!message.isEmpty)
        }
    }

    @Test func convenienceProbesOnItsOwnThread() async throws {
        let path = try await Fixture.faststartMP4.path
        let length = try fileLength(path)
        let result = try await probeMedia(path: path, length: length, present: [0..<length])
        #expect(result.info.container == "mp4")
        #expect(result.playable.count == 1)
        let moovAtEnd = try await Fixture.moovAtEndMP4.path
        await #expect(throws: MediaError.self) {
            try await probeMedia(path: moovAtEnd, length: try fileLength(moovAtEnd), present: [0..<1000])
        }
        await #expect(throws: MediaError.self) {
            try await probeMedia(path: "/nonexistent/vfetch.mp4", length: 10, present: [0..<10])
        }
    }

    @Test func abortingSourceAbortsTheProbe() async throws {
        let path = try await Fixture.faststartMP4.path
        await #expect(throws: MediaError.aborted) {
            try await onThread { () throws(MediaError) in
                _ = try MediaProbe(source: AbortingSource(file: try PartialFile(path: path), readsBeforeAbort: 1))
            }
        }
    }

    private func isHeader(_ range: Range<Int64>, _ fixture: Fixture, _ path: String) -> Bool {
        guard let data = try? bytes(of: path) else { return false }
        switch fixture {
        case .matroska, .webm:
            // Everything before the first cluster: EBML header, SeekHead, Info, Tracks.
            return range.lowerBound == 0 && range.upperBound < 4096
        default:
            return topLevelBoxes(data).contains { ($0.type == "moov" || $0.type == "ftyp") && $0.range == range }
                || (range.lowerBound == 0
                    && topLevelBoxes(data).prefix(2).map(\.range.upperBound).contains(range.upperBound))
        }
    }
}

/// Files libavformat must refuse with a clear message, never a crash.
enum BrokenFile: String, CaseIterable, Sendable {
    case random = "random.bin"
    case empty = "empty.mp4"
    case mp4CutInsideMoov = "cut-in-moov.mp4"
    case mp4CutAfterHundredBytes = "cut-100.mp4"
    case moovAtEndCutBeforeMoov = "cut-before-moov.mp4"
    case matroskaCutInHeader = "cut-header.mkv"
    case ftypThenGarbage = "ftyp-garbage.mp4"

    func contents() async throws -> [UInt8] {
        switch self {
        case .random: return randomBytes(300_000, seed: 7)
        case .empty: return []
        case .mp4CutInsideMoov: return Array(try bytes(of: try await Fixture.faststartMP4.path).prefix(5000))
        case .mp4CutAfterHundredBytes: return Array(try bytes(of: try await Fixture.faststartMP4.path).prefix(100))
        case .moovAtEndCutBeforeMoov:
            let data = try bytes(of: try await Fixture.moovAtEndMP4.path)
            return Array(data.prefix(data.count * 7 / 10))
        case .matroskaCutInHeader: return Array(try bytes(of: try await Fixture.matroska.path).prefix(600))
        case .ftypThenGarbage:
            let ftyp: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)
            return ftyp + randomBytes(100_000, seed: 11)
        }
    }
}

/// A source that serves a file for a few reads, then gives up.
final class AbortingSource: MediaByteSource {
    let file: PartialFile
    var remaining: Int
    var length: Int64 { file.length }

    init(file: PartialFile, readsBeforeAbort: Int) {
        self.file = file
        self.remaining = readsBeforeAbort
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        guard remaining > 0 else { return .aborted }
        remaining -= 1
        return file.read(into: buffer, at: offset)
    }
}
