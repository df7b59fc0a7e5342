/// One ISO BMFF (MP4, MOV, M4A) box: its four-character type and the bytes it spans, header included.
package struct MP4Box: Equatable, Sendable {
    package var type: String
    package var range: Range<Int64>

    package init(type: String, range: Range<Int64>) {
        self.type = type
        self.range = range
    }
}

/// Walks ISO BMFF box headers over whatever bytes of a file are present.
///
/// A box starts with a 32-bit big-endian size and a four-character type; size 1 means a 64-bit
/// size follows the type, size 0 means the box runs to the end of its parent (the file, at the top
/// level). Knowing only the head of a file (`ftyp`, `free`, the `mdat` header) the walk knows where
/// `mdat` ends, which is where a trailing `moov` starts; with the tail present it finds `moov` exactly.
package enum MP4Boxes {
    /// Walks top-level boxes from offset 0 while their 8- or 16-byte headers are readable.
    ///
    /// `read(offset, count)` returns exactly `count` bytes, or nil when they are not all present.
    /// Returns the boxes found and, if the walk stopped at a header that is not present, the offset
    /// where that header starts. A header that cannot be a box (a size smaller than its header, a
    /// box running past `length`, a type that is not four printable ASCII characters) ends the
    /// walk with `stoppedAt == nil`: the bytes there are not ISO BMFF.
    package static func scan(length: Int64, read: (Int64, Int) -> [UInt8]?) -> (boxes: [MP4Box], stoppedAt: Int64?) {
        scan(in: 0..<max(0, length), read: read)
    }

    /// Walks the boxes laid end to end in `span`, such as the children of a container box
    /// (pass its range without the header). Same rules as ``scan(length:read:)``.
    package static func scan(in span: Range<Int64>, read: (Int64, Int) -> [UInt8]?) -> (
        boxes: [MP4Box], stoppedAt: Int64?
    ) {
        var boxes: [MP4Box] = []
        var offset = span.lowerBound
        while span.upperBound - offset >= 8 {
            let remaining = span.upperBound - offset
            guard let header = read(offset, 8), header.count == 8 else { return (boxes, offset) }
            guard let type = fourCharacterCode(header[4..<8]) else { break }
            let size32 = bigEndian(header[0..<4])
            let end: Int64
            switch size32 {
            case 0:
                end = span.upperBound
            case 1:
                guard remaining >= 16 else { return (boxes, nil) }
                guard let large = read(offset + 8, 8), large.count == 8 else { return (boxes, offset) }
                let size64 = bigEndian(large[0..<8])
                guard size64 >= 16, size64 <= UInt64(remaining) else { return (boxes, nil) }
                end = offset + Int64(size64)
            default:
                guard size32 >= 8, size32 <= UInt64(remaining) else { return (boxes, nil) }
                end = offset + Int64(size32)
            }
            boxes.append(MP4Box(type: type, range: offset..<end))
            offset = end
        }
        return (boxes, nil)
    }

    /// The first `moov` box among `boxes`, if the walk reached it.
    package static func moov(in boxes: [MP4Box]) -> MP4Box? {
        boxes.first { $0.type == "moov" }
    }

    /// Whether `moov` comes before the first `mdat` ("faststart"): nil when the boxes hold neither.
    ///
    /// A walk that saw `mdat` but no `moov` answers false: wherever `moov` is, it is not first.
    package static func isFaststart(_ boxes: [MP4Box]) -> Bool? {
        let moov = boxes.firstIndex { $0.type == "moov" }
        let mdat = boxes.firstIndex { $0.type == "mdat" }
        switch (moov, mdat) {
        case (let moov?, let mdat?): return moov < mdat
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return nil
        }
    }

    /// Whether the boxes include movie fragments (`moof`).
    package static func hasFragments(_ boxes: [MP4Box]) -> Bool {
        boxes.contains { $0.type == "moof" }
    }

    /// Whether a walk's boxes look like an ISO BMFF file: the first box is one that starts such files.
    package static func looksLikeMP4(_ boxes: [MP4Box]) -> Bool {
        guard let first = boxes.first else { return false }
        return ["ftyp", "styp", "moov", "mdat", "free", "skip", "wide", "pdin"].contains(first.type)
    }

    static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func fourCharacterCode(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
