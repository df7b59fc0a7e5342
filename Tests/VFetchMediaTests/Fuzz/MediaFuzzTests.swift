import Foundation
import Testing
import VFetchContainers
import VFetchCore

@testable import VFetchMedia

/// Damaged MP4, Matroska and WebM files, whole or with holes, given to the container parsers and
/// to libavformat's probe as `vfetch info` runs it: each ends in an answer or a `MediaError`, and
/// what it answers lies within the file.
@Suite struct MediaFuzzTests {
    /// Made from the ffmpeg fixtures.
    static let targets: [FuzzTarget] = [.mp4Boxes, .matroskaLayout, .mediaProbe, .info]

    @Test(.enabled(if: ffmpegIsInstalled, "ffmpeg makes the seed files, and it is not installed"), arguments: targets)
    func fuzz(_ target: FuzzTarget) async throws {
        try await target.run()
    }

    /// The index that maps time to bytes, fed entries as a damaged container could make libavformat give.
    @Test func fuzzMediaIndex() async throws {
        try await FuzzTarget.mediaIndex.run()
    }
}

/// The fixtures' bytes, as seeds.
private func fixtures(_ list: [Fixture]) -> @Sendable (inout SplitMix64) async throws -> [[UInt8]] {
    { _ in
        var seeds: [[UInt8]] = []
        for fixture in list { seeds.append(try bytes(of: try await fixture.path)) }
        return seeds
    }
}

extension Mutator {
    /// Box or element landmarks, whichever container the seed is.
    static let media = Mutator(landmarks: { bytes in
        bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) ? .ebml(bytes) : .mp4(bytes)
    })
}

extension FuzzTarget {
    static let mp4Boxes = FuzzTarget(
        name: "MP4Boxes", inputs: 5000,
        seeds: fixtures([.faststartMP4, .moovAtEndMP4, .fragmentedMP4, .audioM4A]), mutator: .media,
        check: { input in
            let file = FuzzedFile(input.bytes, random: &input.random)
            let read = file.read(at:count:)
            let walk = MP4Boxes.scan(length: file.length, read: read)
            var end: Int64 = 0
            for box in walk.boxes {
                #expect(box.range.lowerBound == end && box.range.count >= 8, "\(input): \(box)")
                end = box.range.upperBound
            }
            #expect(end <= file.length, "\(input)")
            if let stoppedAt = walk.stoppedAt { #expect(stoppedAt == end && stoppedAt < file.length, "\(input)") }
            _ = (MP4Boxes.isFaststart(walk.boxes), MP4Boxes.hasFragments(walk.boxes), MP4Boxes.looksLikeMP4(walk.boxes))
            if case .seconds(let seconds) = MP4Boxes.movieDuration(length: file.length, read: read) {
                #expect(seconds.isFinite && seconds >= 0, "\(input): \(seconds) s")
            }
            if let last = MP4Boxes.lastMovieFragment(length: file.length, read: read) {
                #expect(
                    last.type == "moof" && last.range.lowerBound >= 0 && last.range.upperBound <= file.length,
                    "\(input): \(last)")
            }
            if let moov = MP4Boxes.moov(in: walk.boxes), let movie = FragmentedMovie(moov: moov, read: read) {
                for moof in walk.boxes where moof.type == "moof" {
                    guard let seconds = movie.endSeconds(of: moof, read: read) else { continue }
                    #expect(seconds.isFinite && seconds >= 0, "\(input): \(seconds) s")
                }
            }
            let layout = MP4Layout(source: file)
            let ranges = layout.header + layout.fragments.flatMap { [$0.moof, $0.mdat] }
            #expect(ranges.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= file.length }, "\(input): \(ranges)")
            #expect(file.strayReads.isEmpty, "\(input): \(file.strayReads)")
        })

    static let matroskaLayout = FuzzTarget(
        name: "MatroskaLayout", inputs: 5000, seeds: fixtures([.matroska, .webm]), mutator: .media,
        check: { input in
            let file = FuzzedFile(input.bytes, random: &input.random)
            let layout = MatroskaLayout(source: file)
            if let cues = layout.cues {
                #expect(cues.lowerBound >= 0 && !cues.isEmpty && cues.upperBound <= file.length, "\(input): cues \(cues)")
            }
            var end: Int64 = 0
            for cluster in layout.clusters(source: file).clusters {
                #expect(cluster.range.lowerBound >= end && !cluster.range.isEmpty, "\(input): \(cluster)")
                #expect(cluster.seconds.isFinite && cluster.seconds >= 0, "\(input): \(cluster)")
                end = cluster.range.upperBound
            }
            #expect(end <= file.length, "\(input)")
            #expect(file.strayReads.isEmpty, "\(input): \(file.strayReads)")
        })

    /// libavformat in this process, on damaged files written to disk, with holes as a partial
    /// download has them. Each probe may read at most 64 MiB: one that reads more is looping.
    static let mediaProbe = FuzzTarget(
        name: "MediaProbe", inputs: 400, seeds: fixtures(Fixture.allCases), mutator: .media,
        check: { input in
            let path = try temporaryFile(input.bytes, name: "fuzz")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let holes = FuzzedFile(input.bytes, random: &input.random)
            let (length, present) = (holes.length, holes.present)
            let times = [0, 3.5, Double(input.random.below(20)), -1, 1e300]
            let outcome = try await onThread { () -> ProbeOutcome in
                let source: BudgetedFile
                do throws(MediaError) {
                    source = try BudgetedFile(PartialFile(path: path, length: length, present: present), budget: 64 << 20)
                } catch {
                    return ProbeOutcome(error: error)
                }
                do throws(MediaError) {
                    let probe = try MediaProbe(source: source)
                    return ProbeOutcome(
                        info: probe.info, playable: probe.playableRanges(present: present),
                        needed: times.flatMap(probe.bytesNeeded(toStartAt:)),
                        offsets: times.map(probe.byteOffset(forTime:)), overBudget: source.overBudget)
                } catch {
                    return ProbeOutcome(error: error, overBudget: source.overBudget)
                }
            }
            let context = "\(input), length \(length), present \(present)"
            #expect(!outcome.overBudget, "\(context): the probe read more than 64 MiB")
            switch outcome.error {
            case .needsBytes(let range)?:
                #expect(range.lowerBound >= 0 && range.upperBound <= length && !range.isEmpty, "\(context): needs \(range)")
            case .aborted?: #expect(outcome.overBudget, "\(context): a file source never aborts")
            case .invalidData?, nil: break
            case .cannotWrite?: Issue.record("\(context): a probe writes nothing")
            }
            outcome.expectInBounds(length: length, context)
        })

    /// `vfetch info` on a file: `MediaInspector.inspect(path:)`, on a finished file or on the
    /// `.part` of an unfinished download whose manifest says which blocks are present.
    static let info = FuzzTarget(
        name: "info", inputs: 150, seeds: fixtures(Fixture.allCases), mutator: .media,
        check: { input in
            let directory = NSTemporaryDirectory() + "vfetch-fuzz-info-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/movie"
            let length = Int64(input.bytes.count)
            if input.random.oneIn(2) {
                try Data(input.bytes).write(to: URL(fileURLWithPath: path))
            } else {
                try Data(input.bytes).write(to: URL(fileURLWithPath: path + ".part"))
                var blocks = BlockBitmap(length: length, blockSize: BlockBitmap.blockSize(forLength: length))
                let count = blocks.blockCount
                let (first, last) = (input.random.below(count + 1), input.random.below(count + 1))
                for block in 0..<count where block < first || block >= last || input.random.oneIn(8) {
                    blocks.markComplete(block: block)
                }
                // Bound to its part, as `vfetch get` writes it: the part's identity and a tag per complete block.
                var info = stat()
                stat(path + ".part", &info)
                var tags: [Int: UInt32] = [:]
                for block in 0..<count where blocks.isComplete(block: block) {
                    let sample = BlockTag.sampled(blocks.range(of: block)).flatMap { input.bytes[Int($0.lowerBound)..<Int($0.upperBound)] }
                    tags[block] = BlockTag.of(sample)
                }
                let manifest = Manifest(
                    url: "https://example.com/movie", finalURL: "https://example.com/movie", length: length, etag: nil,
                    lastModified: nil, contentType: nil, created: Date(timeIntervalSince1970: 1_795_234_800),
                    blocks: blocks, part: PartIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), tags: tags)
                try Data(manifest.encoded()).write(to: URL(fileURLWithPath: path + ".vfetch"))
            }
            guard let report = try? await MediaInspector.inspect(path: path) else { return }
            #expect(report.length == length, "\(input)")
            #expect((0...1).contains(report.downloaded), "\(input): downloaded \(report.downloaded)")
            if let needs = report.needs {
                #expect(needs.lowerBound >= 0 && needs.upperBound <= length && !needs.isEmpty, "\(input): needs \(needs)")
            }
            ProbeOutcome(info: report.info, playable: report.playable).expectInBounds(length: length, "\(input)")
        })

    /// Index entries from bytes: a few numbers about the file, then records of 22 bytes (see `IndexRecords`).
    static let mediaIndex = FuzzTarget(
        name: "MediaIndex", inputs: 1000,
        seeds: { random in (0..<8).map { _ in IndexRecords.random(&random) } },
        mutator: Mutator(landmarks: IndexRecords.landmarks),
        check: { input in
            let records = IndexRecords(input.bytes)
            let index = records.index
            let context = "\(input), \(records)"
            let present = FuzzedFile(
                [UInt8](repeating: 0, count: Int(min(records.length, 1 << 20))), random: &input.random
            ).present
            let times = [0, 3.5, Double(input.random.below(1000)) / 10, -1, 1e300, .infinity, -.infinity]
            ProbeOutcome(
                info: nil, playable: index.playableRanges(present: present),
                needed: times.flatMap(index.bytesNeeded(toStartAt:)), offsets: times.map(index.byteOffset(forTime:))
            ).expectInBounds(length: records.length, context, duration: index.duration)
        })
}

/// What one probe answered, brought back from its thread.
struct ProbeOutcome: Sendable {
    var info: MediaInfo?
    var playable: [ClosedRange<Double>] = []
    var needed: [Range<Int64>] = []
    var offsets: [Int64?] = []
    var error: MediaError?
    var overBudget = false

    init(
        info: MediaInfo?, playable: [ClosedRange<Double>], needed: [Range<Int64>] = [], offsets: [Int64?] = [],
        overBudget: Bool = false
    ) {
        (self.info, self.playable, self.needed) = (info, playable, needed)
        (self.offsets, self.overBudget) = (offsets, overBudget)
    }

    init(error: MediaError, overBudget: Bool = false) {
        (self.error, self.overBudget) = (error, overBudget)
    }

    /// Times are finite and not negative, within the duration when one is known; byte ranges and
    /// offsets lie within the file.
    func expectInBounds(length: Int64, _ context: String, duration: Double? = nil) {
        let duration = duration ?? info?.duration
        if let duration { #expect(duration.isFinite && duration >= 0, "\(context): duration \(duration)") }
        if let bitRate = info?.bitRate { #expect(bitRate > 0, "\(context): bit rate \(bitRate)") }
        #expect(
            playable.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= (duration ?? .greatestFiniteMagnitude) },
            "\(context): playable \(playable) of \(duration.map { "\($0) s" } ?? "unknown")")
        #expect(needed.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= length }, "\(context): needed \(needed)")
        #expect(offsets.allSatisfy { ($0 ?? 0) >= 0 && ($0 ?? 0) < max(1, length) }, "\(context): offsets \(offsets)")
    }
}

/// A file in memory with holes, as a partial download has them; notes any read a parser should
/// never make (a negative offset or count, or more than the 16 MiB `MP4Boxes` reads at most).
final class FuzzedFile: MediaByteSource {
    let bytes: [UInt8]
    let length: Int64
    /// Sorted and merged; the bytes past `bytes.count` are always missing.
    let missing: [Range<Int64>]
    private(set) var strayReads: [String] = []

    var present: [Range<Int64>] { ByteRangeSet(missing).gaps(in: 0..<length) }

    /// The file whole, cut short, with a hole, with only its head and tail, or longer than its
    /// bytes, as `random` chooses.
    init(_ bytes: [UInt8], random: inout SplitMix64) {
        let count = Int64(bytes.count)
        let cut = Int64(random.below(bytes.count + 1))
        let other = Int64(random.below(bytes.count + 1))
        var length = count
        var missing = ByteRangeSet()
        switch random.below(5) {
        case 0, 1: break
        case 2: missing.insert(cut..<count)
        case 3: missing.insert(min(cut, other)..<max(cut, other))
        default:
            length = count + Int64(1 + random.below(1 << 20))
            missing.insert(count..<length)
        }
        self.bytes = bytes
        self.length = length
        self.missing = missing.ranges
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        guard offset >= 0 else {
            strayReads.append("a read at \(offset)")
            return .aborted
        }
        guard offset < length else { return .endOfFile }
        if let hole = missing.first(where: { $0.contains(offset) }) { return .missing(offset..<hole.upperBound) }
        let next = missing.first { $0.lowerBound > offset }?.lowerBound ?? length
        let count = Int(min(Int64(buffer.count), next - offset))
        bytes.withUnsafeBytes { all in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[Int(offset)..<Int(offset) + count]))
        }
        return .bytes(count)
    }

    /// `read` as `MP4Boxes` takes it: exactly `count` bytes at `offset`, or nil.
    func read(at offset: Int64, count: Int) -> [UInt8]? {
        if offset < 0 || count < 0 || count > 16 << 20 + 16 { strayReads.append("\(count) bytes at \(offset)") }
        guard offset >= 0, count >= 0, offset <= length - Int64(count) else { return nil }
        let wanted = offset..<offset + Int64(count)
        guard !missing.contains(where: { $0.overlaps(wanted) }) else { return nil }
        return Array(bytes[Int(offset)..<Int(offset) + count])
    }
}

/// A file source that gives up after `budget` bytes or a million reads: for a file of a few
/// hundred KiB, a probe that reads more is going round in circles.
final class BudgetedFile: MediaByteSource {
    let file: PartialFile
    private var bytesLeft: Int64
    private var readsLeft = 1_000_000
    private(set) var overBudget = false

    init(_ file: PartialFile, budget: Int64) {
        self.file = file
        bytesLeft = budget
    }

    var length: Int64 { file.length }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        readsLeft -= 1
        guard bytesLeft > 0, readsLeft > 0 else {
            overBudget = true
            return .aborted
        }
        let answer = file.read(into: buffer, at: offset)
        if case .bytes(let count) = answer { bytesLeft -= Int64(count) }
        return answer
    }
}

/// A `MediaIndex` described by bytes, so that the mutator can damage it like a file: the file's
/// length (8 bytes), its duration in milliseconds (8, none when 0), whether the index is complete
/// (1); then per entry: position (8), size (4, as libavformat's `int`), time in milliseconds (8),
/// flags (1: keyframe 1, in a fragment's `mdat` 2), stream (1: 0 to 3, stream 0 video).
struct IndexRecords: CustomStringConvertible {
    static let headerSize = 17
    static let recordSize = 22

    var length: Int64
    var duration: Double?
    var isComplete: Bool
    var streams: [StreamIndex]
    var fragments: [Fragment]

    init(_ bytes: [UInt8]) {
        func number(_ offset: Int, _ width: Int) -> UInt64 {
            (offset..<offset + width).reduce(0) { $0 << 8 | UInt64($1 < bytes.count ? bytes[$1] : 0) }
        }
        length = Int64(bitPattern: number(0, 8)) & .max
        let milliseconds = Int64(bitPattern: number(8, 8))
        duration = milliseconds > 0 ? Double(milliseconds) / 1000 : nil
        isComplete = number(16, 1) & 1 != 0
        var entries: [[IndexEntry]] = [[], [], [], []]
        fragments = []
        for start in stride(from: Self.headerSize, to: bytes.count - Self.recordSize + 1, by: Self.recordSize) {
            let flags = number(start + 20, 1)
            // As `StreamDescription` keeps them: positions not negative, sizes not negative.
            let entry = IndexEntry(
                position: Int64(bitPattern: number(start, 8)) & .max,
                size: Int64(max(0, Int32(truncatingIfNeeded: number(start + 8, 4)))),
                time: Double(Int64(bitPattern: number(start + 12, 8))) / 1000, isKeyframe: flags & 1 != 0)
            entries[Int(number(start + 21, 1) % 4)].append(entry)
            if flags & 2 != 0, entry.position >= 64 {
                let (end, overflow) = entry.position.addingReportingOverflow(entry.size)
                if !overflow {
                    fragments.append(Fragment(moof: entry.position - 64..<entry.position, mdat: entry.position..<end))
                }
            }
        }
        streams = entries.enumerated().map { StreamIndex(isVideo: $0.offset == 0, entries: $0.element) }
    }

    /// As `MediaProbe` makes it: without a header from the container, all before the first entry.
    var index: MediaIndex {
        let first = streams.flatMap { $0.entries.map(\.position) }.min()
        return MediaIndex(
            streams: streams, header: first.map { [0..<$0] } ?? [], fragments: fragments, length: length,
            duration: duration, isComplete: isComplete)
    }

    var description: String {
        let duration = self.duration.map { "\($0) s" } ?? "none"
        return "index of \(streams.map(\.entries.count)) entries, length \(length), duration \(duration)"
    }

    /// A plausible index: 10 s of video with a keyframe a second and audio beside it, sized
    /// entries (MP4), positions only (Matroska cues) or fragments.
    static func random(_ random: inout SplitMix64) -> [UInt8] {
        func bytes(_ value: UInt64, _ width: Int) -> [UInt8] {
            (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
        }
        let sized = !random.oneIn(3)
        let fragmented = random.oneIn(3)
        var position: UInt64 = 4096
        var records: [UInt8] = []
        for frame in 0..<250 {
            for stream in sized ? [0, 1] : [0] where sized || frame % 25 == 0 {
                let size = UInt64(sized ? 200 + random.below(2000) : 0)
                let flags: UInt64 = (frame % 25 == 0 || stream == 1 ? 1 : 0) | (fragmented ? 2 : 0)
                records +=
                    bytes(position, 8) + bytes(size, 4) + bytes(UInt64(frame * 40), 8) + bytes(flags, 1)
                    + bytes(UInt64(stream), 1)
                position += sized ? size + (fragmented ? 64 : 0) : 20_000
            }
        }
        let header = bytes(position + 1000, 8) + bytes(random.oneIn(2) ? 10_000 : 0, 8) + bytes(1, 1)
        return header + records
    }

    static func landmarks(_ bytes: [UInt8]) -> Landmarks {
        var landmarks = Landmarks()
        landmarks.numbers = [(0, 8), (8, 8), (16, 1)]
        for start in stride(from: headerSize, to: bytes.count - recordSize + 1, by: recordSize) {
            landmarks.numbers += [(start, 8), (start + 8, 4), (start + 12, 8), (start + 20, 1), (start + 21, 1)]
        }
        return landmarks
    }
}
