import Foundation
import VFetchContainers
import VFetchCore

/// A segment index box (`sidx`, ISO/IEC 14496-12 8.16.3): where each subsegment (fragment) of a
/// fragmented MP4 lies and how long it plays. A DASH SegmentBase (`.indexed`) points at one.
package struct SegmentIndexBox: Sendable, Equatable {
    package struct Reference: Sendable, Equatable {
        /// The reference is to another `sidx` (reference_type 1), not to media.
        package var isIndex: Bool
        /// `referenced_size`, in bytes.
        package var size: Int64
        /// `subsegment_duration`, in `timescale` units.
        package var duration: Int64
        package var startsWithSAP: Bool
    }

    package var timescale: Int64
    package var earliestPresentationTime: UInt64
    /// Bytes from the end of the box (its anchor) to the first referenced byte.
    package var firstOffset: Int64
    package var references: [Reference]
    /// Where the box lies in the bytes it was read from.
    package var range: Range<Int64>

    /// Reads the first `sidx` among the boxes `bytes` start with (an index range may begin with
    /// `styp`); an error when there is none or it is cut short or damaged.
    package init(_ bytes: [UInt8]) throws(StreamParseError) {
        let walk = MP4Boxes.scan(length: Int64(bytes.count)) { offset, count in
            guard offset >= 0, count >= 0, offset <= Int64(bytes.count) - Int64(count) else { return nil }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
        guard let box = walk.boxes.first(where: { $0.type == "sidx" }) else {
            throw StreamParseError("the index holds no sidx box")
        }
        range = box.range
        var reader = ByteReader(bytes: bytes[Int(box.range.lowerBound)..<Int(box.range.upperBound)])
        // Header: size, "sidx" (a 64-bit size follows size 1), then version and flags.
        let size = try reader.integer(4)
        try reader.skip(size == 1 ? 12 : 4)
        let version = try reader.integer(1)
        guard version <= 1 else { throw StreamParseError("sidx: version \(version), not 0 or 1") }
        try reader.skip(3 + 4)  // flags, reference_ID
        timescale = Int64(try reader.integer(4))
        guard timescale > 0 else { throw StreamParseError("sidx: timescale is 0") }
        earliestPresentationTime = try reader.integer(version == 0 ? 4 : 8)
        let offset = try reader.integer(version == 0 ? 4 : 8)
        guard let firstOffset = Int64(exactly: offset) else { throw StreamParseError("sidx: first_offset past 2^63") }
        self.firstOffset = firstOffset
        try reader.skip(2)
        let count = Int(try reader.integer(2))
        var references: [Reference] = []
        references.reserveCapacity(count)
        for _ in 0..<count {
            let sizeField = try reader.integer(4)
            let duration = try reader.integer(4)
            let sap = try reader.integer(4)
            references.append(
                Reference(
                    isIndex: sizeField & 0x8000_0000 != 0, size: Int64(sizeField & 0x7FFF_FFFF),
                    duration: Int64(duration), startsWithSAP: sap & 0x8000_0000 != 0))
        }
        self.references = references
    }

    /// Each referenced subsegment's bytes in the file and its seconds, when the box was read from
    /// bytes that start at `offset` in the file. Only media references: an index that points at
    /// further `sidx` boxes (reference_type 1) is refused.
    package func subsegments(at offset: Int64) throws(StreamParseError) -> [(range: Range<Int64>, duration: Double)] {
        var result: [(range: Range<Int64>, duration: Double)] = []
        let (anchor, anchorOverflow) = offset.addingReportingOverflow(range.upperBound)
        var (start, startOverflow) = anchor.addingReportingOverflow(firstOffset)
        guard !anchorOverflow, !startOverflow else { throw StreamParseError("sidx: offsets past 2^63") }
        for reference in references {
            guard !reference.isIndex else {
                throw StreamParseError("sidx: the index refers to further sidx boxes, which vfetch does not read")
            }
            let (end, overflow) = start.addingReportingOverflow(reference.size)
            guard !overflow else { throw StreamParseError("sidx: offsets past 2^63") }
            result.append((start..<end, Double(reference.duration) / Double(timescale)))
            start = end
        }
        return result
    }
}

extension SegmentSource {
    /// The segments of a SegmentBase track (`.indexed`), from `index`: the bytes of its `indexRange`,
    /// which hold its `sidx`. Each segment is a byte range of the track's URL, numbered from 1, and
    /// carries `encryption` (the track's own: ``StreamTrack/encryption``).
    package func segmentList(index: [UInt8], encryption: SegmentEncryption) throws(StreamParseError) -> SegmentList {
        guard case .indexed(let url, let initialization, let indexRange) = self else {
            throw StreamParseError("only a SegmentBase track's segments come from an index")
        }
        let box = try SegmentIndexBox(index)
        let subsegments = try box.subsegments(at: indexRange.lowerBound)
        var segments: [MediaSegment] = []
        segments.reserveCapacity(subsegments.count)
        for (number, subsegment) in subsegments.enumerated() {
            segments.append(
                MediaSegment(
                    resource: MediaResource(url: url, byteRange: subsegment.range), duration: subsegment.duration,
                    sequence: number + 1, initialization: initialization, encryption: encryption))
        }
        return SegmentList(segments: segments, isComplete: true, targetDuration: segments.map(\.duration).max())
    }
}

/// Reads big-endian integers from bytes, each read checked against the end.
private struct ByteReader {
    var bytes: ArraySlice<UInt8>

    mutating func integer(_ count: Int) throws(StreamParseError) -> UInt64 {
        guard bytes.count >= count else { throw StreamParseError("sidx: the box is cut short") }
        defer { bytes = bytes.dropFirst(count) }
        return bytes.prefix(count).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func skip(_ count: Int) throws(StreamParseError) {
        guard bytes.count >= count else { throw StreamParseError("sidx: the box is cut short") }
        bytes = bytes.dropFirst(count)
    }
}
