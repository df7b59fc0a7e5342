import VFetchContainers
import VFetchCore

/// The top-level layout of an MP4 file, as far as its box headers are present.
struct MP4Layout {
    var boxes: [MP4Box]
    /// Where the walk stopped at a header that is not present.
    var stoppedAt: Int64?
    var moov: MP4Box? { MP4Boxes.moov(in: boxes) }
    /// `ftyp` and `moov`: what any playback reads first.
    var header: [Range<Int64>] { boxes.filter { $0.type == "ftyp" || $0.type == "moov" }.map(\.range) }
    var faststart: Bool? { MP4Boxes.isFaststart(boxes) }
    /// Movie fragments: `moof` boxes at the top level, or `mvex` (movie extends) inside `moov`.
    let fragmented: Bool
    /// Each `moof` with the `mdat` that follows it.
    var fragments: [Fragment] {
        zip(boxes, boxes.dropFirst()).compactMap { box, next in
            box.type == "moof" && next.type == "mdat" ? Fragment(moof: box.range, mdat: next.range) : nil
        }
    }

    init(source: any MediaByteSource) {
        let read: (Int64, Int) -> [UInt8]? = { source.bytes(at: $0, count: $1) }
        (boxes, stoppedAt) = MP4Boxes.scan(length: source.length, read: read)
        var fragmented = MP4Boxes.hasFragments(boxes)
        if !fragmented, let moov = MP4Boxes.moov(in: boxes), let size = read(moov.range.lowerBound, 4) {
            let headerSize: Int64 = size == [0, 0, 0, 1] ? 16 : 8
            let children = MP4Boxes.scan(in: moov.range.lowerBound + headerSize..<moov.range.upperBound, read: read)
            fragmented = children.boxes.contains { $0.type == "mvex" }
        }
        self.fragmented = fragmented
    }

    var looksLikeMP4: Bool { MP4Boxes.looksLikeMP4(boxes) }
}
