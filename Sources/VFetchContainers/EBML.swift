/// Reads EBML (Matroska, WebM) element headers from a byte array.
///
/// Element IDs and sizes are variable-length integers: the number of leading zero bits of the
/// first byte gives the length in bytes; IDs keep that marker bit, sizes drop it, and a size of
/// all one bits means "unknown" (an element that runs to the end of its parent).
package struct EBMLReader {
    package let bytes: [UInt8]
    package var offset: Int

    package init(bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    package static let ebmlHeader: UInt32 = 0x1A45_DFA3
    package static let docType: UInt32 = 0x4282
    package static let segment: UInt32 = 0x1853_8067
    package static let seekHead: UInt32 = 0x114D_9B74
    package static let seek: UInt32 = 0x4DBB
    package static let seekID: UInt32 = 0x53AB
    package static let seekPosition: UInt32 = 0x53AC
    package static let cues: UInt32 = 0x1C53_BB6B
    package static let cluster: UInt32 = 0x1F43_B675
    package static let info: UInt32 = 0x1549_A966
    package static let timestampScale: UInt32 = 0x2A_D7B1
    package static let timestamp: UInt32 = 0xE7
    package static let simpleBlock: UInt32 = 0xA3
    package static let blockGroup: UInt32 = 0xA0
    package static let block: UInt32 = 0xA1
    package static let referenceBlock: UInt32 = 0xFB
    package static let tracks: UInt32 = 0x1654_AE6B
    package static let trackEntry: UInt32 = 0xAE
    package static let trackNumber: UInt32 = 0xD7
    package static let trackType: UInt32 = 0x83

    /// An element's ID and size (nil for "unknown"), leaving `offset` at its data.
    package mutating func header() -> (id: UInt32, size: Int?)? {
        let start = offset
        guard let (rawID, idLength) = variableInteger(), idLength <= 4,
            let (size, sizeLength) = variableInteger()
        else {
            offset = start
            return nil
        }
        let id = UInt32(rawID | 1 << (7 * UInt64(idLength)))
        let unknown = size == 1 << (7 * UInt64(sizeLength)) - 1
        guard unknown || size < UInt64(Int.max >> 1) else {
            offset = start
            return nil
        }
        return (id, unknown ? nil : Int(size))
    }

    /// A variable-length number without its marker bit, such as a block's track number.
    package mutating func number() -> UInt64? {
        variableInteger()?.0
    }

    /// An unsigned integer element's value from its `size` data bytes.
    package mutating func unsigned(size: Int) -> UInt64? {
        guard size <= 8, offset + size <= bytes.count else { return nil }
        defer { offset += size }
        return bytes[offset..<offset + size].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private mutating func variableInteger() -> (UInt64, Int)? {
        guard offset < bytes.count, bytes[offset] != 0 else { return nil }
        let length = bytes[offset].leadingZeroBitCount + 1
        guard offset + length <= bytes.count else { return nil }
        var value = UInt64(bytes[offset] & (0xFF >> length))
        for byte in bytes[offset + 1..<offset + length] { value = value << 8 | UInt64(byte) }
        offset += length
        return (value, length)
    }
}

extension EBMLReader {
    /// The `SeekPosition` of the `Seek` entry whose `SeekID` is `Cues`, from a `SeekHead`'s data:
    /// where the index starts, counted from the start of the segment's data.
    package static func cuesPosition(inSeekHead data: [UInt8]) -> Int64? {
        var reader = EBMLReader(bytes: data)
        while let seek = reader.header(), let seekSize = seek.size {
            let seekEnd = reader.offset + seekSize
            if seek.id == EBMLReader.seek {
                var id: UInt64?
                var position: UInt64?
                while reader.offset < seekEnd, let child = reader.header(), let childSize = child.size {
                    switch child.id {
                    case EBMLReader.seekID: id = reader.unsigned(size: childSize)
                    case EBMLReader.seekPosition: position = reader.unsigned(size: childSize)
                    default: reader.offset += childSize
                    }
                }
                if id == UInt64(EBMLReader.cues), let position, position < UInt64(Int64.max >> 1) {
                    return Int64(position)
                }
            }
            reader.offset = seekEnd
        }
        return nil
    }
}
