import Foundation
import Testing

@testable import VFetchStreams

/// The `sidx` reader, on ffmpeg's own boxes and on hand-made ones.
@Suite struct SegmentIndexBoxTests {
    /// A big-endian integer of `count` bytes.
    static func bytes(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// A version 0 `sidx`: timescale 1000, first_offset 100, subsegments of 5000 bytes (2 s, starts
    /// with a SAP) and 4000 bytes (1.5 s).
    static func sidx(version: UInt8 = 0, referenceType: UInt64 = 0) -> [UInt8] {
        let wide = version == 1 ? 8 : 4
        var body: [UInt8] = [version, 0, 0, 0] + bytes(1, 4) + bytes(1000, 4)
        body += bytes(0, wide) + bytes(100, wide) + [0, 0] + bytes(2, 2)
        body += bytes(referenceType << 31 | 5000, 4) + bytes(2000, 4) + bytes(0x9000_0000, 4)
        body += bytes(4000, 4) + bytes(1500, 4) + bytes(0, 4)
        return bytes(UInt64(body.count + 8), 4) + Array("sidx".utf8) + body
    }

    /// A `styp` box, then the version 0 `sidx`: 16 + 56 bytes, as an index range may hold.
    static let versionZeroIndex = bytes(16, 4) + Array("stypmsdh".utf8) + bytes(0, 4) + sidx()

    @Test func versionZeroAndOneListSubsegmentsFromTheEndOfTheBox() throws {
        for version: UInt8 in [0, 1] {
            let index = Self.bytes(16, 4) + Array("stypmsdh".utf8) + Self.bytes(0, 4) + Self.sidx(version: version)
            let box = try SegmentIndexBox(index)
            #expect(box.timescale == 1000 && box.firstOffset == 100 && box.range == 16..<Int64(index.count))
            #expect(
                box.references.map(\.size) == [5000, 4000] && box.references.map(\.startsWithSAP) == [true, false])
            // Read from offset 1000 of the file: the anchor is where the box ends, then first_offset.
            let subsegments = try box.subsegments(at: 1000)
            let start = 1000 + Int64(index.count) + 100
            #expect(subsegments.map(\.range) == [start..<start + 5000, start + 5000..<start + 9000])
            #expect(subsegments.map(\.duration) == [2, 1.5])
        }
    }

    @Test func anIndexedSourceBecomesAListOfByteRanges() throws {
        let url = URL(string: "https://cdn.example.com/v/movie.mp4")!
        let source = SegmentSource.indexed(
            url: url, initialization: MediaResource(url: url, byteRange: 0..<1000), indexRange: 1000..<1072)
        let list = try source.segmentList(index: Self.versionZeroIndex, encryption: .unsupported("cenc"))
        #expect(list.isComplete && list.targetDuration == 2 && list.duration == 3.5)
        #expect(
            list.segments.map(\.resource) == [
                MediaResource(url: url, byteRange: 1172..<6172), MediaResource(url: url, byteRange: 6172..<10172),
            ])
        #expect(list.segments.map(\.sequence) == [1, 2])
        #expect(
            list.segments.allSatisfy {
                $0.initialization?.byteRange == 0..<1000 && $0.encryption == .unsupported("cenc")
            })
        #expect(throws: StreamParseError.self) {
            try SegmentSource.playlist(url).segmentList(index: Self.versionZeroIndex, encryption: .none)
        }
    }

    @Test func damagedOrUnsupportedIndexesAreErrors() {
        let index = Self.sidx()
        #expect(throws: StreamParseError("sidx: the index refers to further sidx boxes, which vfetch does not read")) {
            try SegmentIndexBox(Self.sidx(referenceType: 1)).subsegments(at: 0)
        }
        #expect(throws: StreamParseError("the index holds no sidx box")) {
            try SegmentIndexBox(Array(index.dropLast(5)))
        }
        #expect(throws: StreamParseError("the index holds no sidx box")) { try SegmentIndexBox([]) }
        #expect(throws: StreamParseError("sidx: version 2, not 0 or 1")) {
            try SegmentIndexBox(Array(index[0..<8]) + [2] + Array(index[9...]))
        }
        // A box that claims more references than it holds.
        var short = index
        short[31] = 9
        #expect(throws: StreamParseError("sidx: the box is cut short")) { try SegmentIndexBox(short) }
        var zero = index
        zero[16..<20] = [0, 0, 0, 0]
        #expect(throws: StreamParseError("sidx: timescale is 0")) { try SegmentIndexBox(zero) }
    }

    @Test(.enabled(if: ffmpegIsInstalled, "ffmpeg makes the fixture, and it is not installed"))
    func ffmpegsGlobalSidxListsEveryFragment() async throws {
        let path = try await DASHFixture.globalSidx.output
        let file = try [UInt8](Data(contentsOf: path))
        // The top-level boxes, walked by hand: ftyp, moov, sidx, then moof/mdat pairs, then mfra.
        var boxes: [(type: String, range: Range<Int64>)] = []
        var offset = 0
        while offset + 8 <= file.count {
            let size = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8 else { break }
            boxes.append(
                (String(decoding: file[offset + 4..<offset + 8], as: UTF8.self), Int64(offset)..<Int64(offset + size)))
            offset += size
        }
        let sidx = try #require(boxes.first { $0.type == "sidx" }?.range)
        let url = URL(string: "https://cdn.example.com/v/movie.mp4")!
        let source = SegmentSource.indexed(
            url: url, initialization: MediaResource(url: url, byteRange: 0..<sidx.lowerBound), indexRange: sidx)
        let list = try source.segmentList(
            index: Array(file[Int(sidx.lowerBound)..<Int(sidx.upperBound)]), encryption: .none)

        // 6 s at 25 fps in GOPs of 25 frames: six 1 s fragments, each a moof and its mdat.
        #expect(list.segments.map(\.duration) == [1, 1, 1, 1, 1, 1])
        let moofs = boxes.filter { $0.type == "moof" }.map(\.range.lowerBound)
        let ranges = list.segments.compactMap(\.resource.byteRange)
        #expect(ranges.map(\.lowerBound) == moofs)
        #expect(ranges.first?.lowerBound == sidx.upperBound)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        let end = boxes.first { $0.type == "mfra" }?.range.lowerBound ?? Int64(file.count)
        #expect(ranges.last?.upperBound == end)
        let box = try SegmentIndexBox(Array(file[Int(sidx.lowerBound)..<Int(sidx.upperBound)]))
        #expect(box.references.allSatisfy { !$0.isIndex && $0.startsWithSAP })
    }
}
