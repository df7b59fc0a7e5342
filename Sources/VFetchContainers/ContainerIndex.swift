/// Where a container keeps the index a player reads before its first frame, found from whatever
/// bytes of the file are present: an MP4's `moov` (first, or after `mdat`), a fragmented MP4's
/// `sidx` or `mfra`, a Matroska or WebM file's `Cues` (where its `SeekHead` points).
///
/// Playback fetches that range first, exactly (`vfetch get --playback-order`, `vfetch serve`): the head
/// says where it is, so one small request gets it, wherever it lies.
package enum ContainerIndex {
    package enum Location: Equatable, Sendable {
        /// The index is exactly these bytes.
        case range(Range<Int64>)
        /// The header at this offset (a box or element after the head) says where the index is.
        case headerAt(Int64)
        /// Nothing to fetch first: the index comes in file order, or the file is not a container
        /// this knows (MPEG-TS, WebM without `Cues`).
        case none
        /// The head is not here yet.
        case unknown
        /// The container points outside the file or at something that is not its index.
        case damaged(String)
    }

    /// `read(offset, count)` returns exactly `count` bytes, or nil when they are not all present.
    package static func locate(length: Int64, read: (Int64, Int) -> [UInt8]?) -> Location {
        guard length >= 16, let head = read(0, 8) else { return length < 16 ? .none : .unknown }
        if head[0..<4] == [0x1A, 0x45, 0xDF, 0xA3] { return matroskaCues(length: length, read: read) }
        let walk = MP4Boxes.scan(length: length, read: read)
        guard MP4Boxes.looksLikeMP4(walk.boxes) else { return walk.boxes.isEmpty && walk.stoppedAt != nil ? .unknown : .none }
        if MP4Boxes.hasFragments(walk.boxes) || walk.boxes.contains(where: { $0.type == "sidx" }) {
            return fragmentIndex(walk.boxes, length: length, read: read)
        }
        if let moov = MP4Boxes.moov(in: walk.boxes) { return .range(moov.range) }
        if let next = walk.stoppedAt { return .headerAt(next) }
        return .damaged("no moov box among the MP4's top-level boxes")
    }

    /// A fragmented MP4 plays from its `moov` and fragments in file order; its seek index is the
    /// `sidx` before the first fragment, or the `mfra` that its last 16 bytes (`mfro`), if they are
    /// one, measure.
    private static func fragmentIndex(_ boxes: [MP4Box], length: Int64, read: (Int64, Int) -> [UInt8]?) -> Location {
        if let sidx = boxes.first(where: { $0.type == "sidx" }) { return .range(sidx.range) }
        guard let mfro = read(length - 16, 16) else { return .headerAt(length - 16) }
        guard MP4Boxes.fourCharacterCode(mfro[4..<8]) == "mfro" else { return .none }
        let size = Int64(clamping: MP4Boxes.bigEndian(mfro[12..<16]))
        guard size >= 24, size <= length else { return .damaged("its mfro measures \(size) bytes, outside the file") }
        return .range(length - size..<length)
    }

    /// Follows the level-1 elements of a Matroska segment to its `Cues`, or to where its `SeekHead`
    /// says they are.
    private static func matroskaCues(length: Int64, read: (Int64, Int) -> [UInt8]?) -> Location {
        var ebml: EBMLElement
        switch EBMLElement.at(0, length: length, read: read) {
        case .found(let element): ebml = element
        case .missing: return .unknown
        case .invalid: return .damaged("its EBML header cannot be read")
        }
        guard ebml.id == EBMLReader.ebmlHeader, let ebmlSize = ebml.size else { return .none }
        var segment: EBMLElement
        switch EBMLElement.at(ebml.dataStart + ebmlSize, length: length, read: read) {
        case .found(let element): segment = element
        case .missing(let offset): return .headerAt(offset)
        case .invalid(let reason): return .damaged(reason)
        }
        guard segment.id == EBMLReader.segment else { return .none }
        var offset = segment.dataStart
        for _ in 0..<64 {
            let element: EBMLElement
            switch EBMLElement.at(offset, length: length, read: read) {
            case .found(let found): element = found
            case .missing(let offset): return .headerAt(offset)
            case .invalid(let reason): return .damaged(reason)
            }
            switch element.id {
            case EBMLReader.cues:
                return element.exactRange(length: length)
            case EBMLReader.seekHead:
                guard let size = element.size, let data = read(element.dataStart, Int(min(size, 64 << 10, length - element.dataStart)))
                else { return .headerAt(element.dataStart) }
                guard let position = EBMLReader.cuesPosition(inSeekHead: data) else { break }
                switch EBMLElement.at(segment.dataStart + position, length: length, read: read) {
                case .found(let cues) where cues.id == EBMLReader.cues: return cues.exactRange(length: length)
                case .found(let other): return .damaged("its SeekHead points at byte \(other.start), which is not the Cues")
                case .missing(let offset): return .headerAt(offset)
                case .invalid(let reason): return .damaged("its SeekHead points at the Cues: \(reason)")
                }
            case EBMLReader.cluster:
                return .none  // the clusters started and no SeekHead named the Cues
            default:
                break
            }
            guard let size = element.size else { break }
            offset = element.dataStart + size
        }
        return .none
    }
}

/// One EBML element header in a file.
private struct EBMLElement {
    enum Lookup {
        case found(EBMLElement)
        /// Its bytes at this offset are not present yet.
        case missing(Int64)
        case invalid(String)
    }

    var start: Int64
    var id: UInt32
    /// Nil: unknown, the element runs to the end of its parent.
    var size: Int64?
    var dataStart: Int64

    static func at(_ offset: Int64, length: Int64, read: (Int64, Int) -> [UInt8]?) -> Lookup {
        guard offset >= 0, offset < length else { return .invalid("an element at byte \(offset), outside the file") }
        // An ID takes at most 4 bytes and a size at most 8; near the end of the file, fewer are there.
        guard let bytes = read(offset, Int(min(12, length - offset))) else { return .missing(offset) }
        var reader = EBMLReader(bytes: bytes)
        guard let header = reader.header() else { return .invalid("no EBML element at byte \(offset)") }
        return .found(
            EBMLElement(start: offset, id: header.id, size: header.size.map(Int64.init), dataStart: offset + Int64(reader.offset)))
    }

    /// The whole element, header included, if it fits in the file.
    func exactRange(length: Int64) -> ContainerIndex.Location {
        guard let size, dataStart + size <= length else { return .damaged("its Cues at byte \(start) run past the end of the file") }
        return .range(start..<dataStart + size)
    }
}
