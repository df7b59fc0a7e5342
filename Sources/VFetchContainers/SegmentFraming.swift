/// How a segmented stream's files are framed, so a file that is cut short or is not media at all
/// (an error page, bytes still encrypted) is caught before it is remuxed: demuxers skip such
/// bytes without a word (MPEG-TS resynchronizes on the next sync byte) and the output would have
/// a hole nobody reported.
package enum SegmentFraming: Sendable, Equatable {
    /// MPEG-TS: 188-byte packets, each starting with the sync byte 0x47.
    case transportStream
    /// ISO BMFF (MP4, fMP4 segments and initialization sections): top-level boxes, each a 32- or
    /// 64-bit size and a four-character type, the last one ending at the end of the file.
    case isoBoxes

    /// The MPEG-TS packet size and sync byte.
    static let packetSize = 188
    static let syncByte: UInt8 = 0x47

    /// The framing of a file that starts with `bytes`, or nil for one whose framing cannot be
    /// checked (packed audio, WebVTT) or that is too short to tell.
    package static func detect(firstBytes bytes: some Collection<UInt8>) -> SegmentFraming? {
        let head = Array(bytes.prefix(8))
        guard head.count == 8 else { return nil }
        if head[0] == syncByte { return .transportStream }
        let size = head[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // Real box types are letters, digits and spaces; text such as an HTML page has other characters.
        let isBoxType = head[4..<8].allSatisfy {
            $0 == 0x20 || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
        }
        if size == 0 || size == 1 || size >= 8, isBoxType { return .isoBoxes }
        return nil
    }

    /// Why a file's bytes do not have the framing expected.
    package struct Violation: Error, Equatable, Sendable, CustomStringConvertible {
        /// Where in the file the framing broke.
        package var offset: Int64
        package var reason: String

        package init(offset: Int64, reason: String) {
            self.offset = offset
            self.reason = reason
        }

        package var description: String { "\(reason) at byte \(offset)" }
    }

    /// A check of one whole file, fed its bytes in order.
    package struct Check: Sendable {
        package let framing: SegmentFraming
        /// Bytes fed so far.
        private(set) var position: Int64 = 0
        /// The first violation found; feeding stops mattering once there is one.
        private(set) var violation: Violation?
        private var boxes = BoxReader()

        package init(_ framing: SegmentFraming) {
            self.framing = framing
        }

        /// Checks the next bytes of the file.
        package mutating func feed(_ bytes: UnsafeRawBufferPointer) {
            guard violation == nil, !bytes.isEmpty else { return }
            switch framing {
            case .transportStream:
                // Every packet start within this run must hold the sync byte.
                let size = Int64(SegmentFraming.packetSize)
                var index = Int((size - position % size) % size)
                while index < bytes.count {
                    if bytes[index] != SegmentFraming.syncByte {
                        violation = Violation(offset: position + Int64(index), reason: "no MPEG-TS sync byte")
                        break
                    }
                    index += SegmentFraming.packetSize
                }
            case .isoBoxes:
                violation = boxes.feed(bytes, at: position)
            }
            position += Int64(bytes.count)
        }

        /// Checks the end of the file, after every byte was fed: it must end where a packet or box ends.
        package func finish() throws(Violation) {
            if let violation { throw violation }
            switch framing {
            case .transportStream:
                if position == 0 { throw Violation(offset: 0, reason: "empty file") }
                if position % Int64(SegmentFraming.packetSize) != 0 {
                    throw Violation(offset: position, reason: "MPEG-TS packet cut short")
                }
            case .isoBoxes:
                if let cut = boxes.cutShort(at: position) { throw cut }
            }
        }
    }
}

/// Walks top-level ISO BMFF box headers through the bytes fed to it, skipping box bodies.
private struct BoxReader: Sendable {
    /// Header bytes of the box being read, up to 16 (with a 64-bit size).
    private var header: [UInt8] = []
    /// Where the current box started.
    private var boxStart: Int64 = 0
    /// Body bytes of the current box still to skip; nil while reading a header.
    private var remaining: Int64?
    /// The last box runs to the end of the file (size 0).
    private var toEnd = false
    /// Boxes read so far.
    private var count = 0

    static func isTypeCharacter(_ byte: UInt8) -> Bool { (0x20...0x7E).contains(byte) }

    /// Reads `bytes`, which sit at `offset` in the file; answers the first violation.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> SegmentFraming.Violation? {
        var index = 0
        while index < bytes.count, !toEnd {
            if let left = remaining {
                let skip = Int(min(left, Int64(bytes.count - index)))
                index += skip
                remaining = left - Int64(skip) == 0 ? nil : left - Int64(skip)
                if remaining == nil { header = [] }
                continue
            }
            if header.isEmpty { boxStart = offset + Int64(index) }
            header.append(bytes[index])
            index += 1
            if let violation = readHeader() { return violation }
        }
        return nil
    }

    /// Looks at the header bytes so far; sets `remaining` once the header is whole.
    private mutating func readHeader() -> SegmentFraming.Violation? {
        if header.count == 8 {
            guard header[4..<8].allSatisfy(Self.isTypeCharacter) else {
                return .init(offset: boxStart + 4, reason: "not an MP4 box type")
            }
            let size = header[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch size {
            case 0:
                toEnd = true
                count += 1
            case 1: break  // a 64-bit size follows
            case 2..<8: return .init(offset: boxStart, reason: "MP4 box size \(size) is smaller than its header")
            default: begin(bodyBytes: Int64(size) - 8)
            }
        } else if header.count == 16 {
            let size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard size >= 16, size <= UInt64(Int64.max) else {
                return .init(offset: boxStart, reason: "MP4 box size \(size) is out of range")
            }
            begin(bodyBytes: Int64(size) - 16)
        }
        return nil
    }

    private mutating func begin(bodyBytes: Int64) {
        count += 1
        if bodyBytes == 0 {
            header = []
        } else {
            remaining = bodyBytes
        }
    }

    /// The violation when the file ends at `length` inside a box, or holds none.
    func cutShort(at length: Int64) -> SegmentFraming.Violation? {
        if toEnd { return nil }
        if remaining != nil || !header.isEmpty { return .init(offset: boxStart, reason: "MP4 box cut short") }
        if count == 0 { return .init(offset: 0, reason: "empty file") }
        return nil
    }
}
