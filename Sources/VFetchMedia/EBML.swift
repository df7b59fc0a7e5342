/// Reads EBML (Matroska, WebM) element headers from a byte array.
///
/// Element IDs and sizes are variable-length integers: the number of leading zero bits of the
/// first byte gives the length in bytes; IDs keep that marker bit, sizes drop it, and a size of
/// all one bits means "unknown" (an element that runs to the end of its parent).
struct EBMLReader {
    let bytes: [UInt8]
    var offset: Int

    init(bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    static let ebmlHeader: UInt32 = 0x1A45_DFA3
    static let docType: UInt32 = 0x4282
    static let segment: UInt32 = 0x1853_8067
    static let seekHead: UInt32 = 0x114D_9B74
    static let seek: UInt32 = 0x4DBB
    static let seekID: UInt32 = 0x53AB
    static let seekPosition: UInt32 = 0x53AC
    static let cues: UInt32 = 0x1C53_BB6B
    static let cluster: UInt32 = 0x1F43_B675
    static let info: UInt32 = 0x1549_A966
    static let timestampScale: UInt32 = 0x2A_D7B1
    static let timestamp: UInt32 = 0xE7
    static let simpleBlock: UInt32 = 0xA3
    static let blockGroup: UInt32 = 0xA0
    static let block: UInt32 = 0xA1
    static let referenceBlock: UInt32 = 0xFB
    static let tracks: UInt32 = 0x1654_AE6B
    static let trackEntry: UInt32 = 0xAE
    static let trackNumber: UInt32 = 0xD7
    static let trackType: UInt32 = 0x83

    /// An element's ID and size (nil for "unknown"), leaving `offset` at its data.
    mutating func header() -> (id: UInt32, size: Int?)? {
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
    mutating func number() -> UInt64? {
        variableInteger()?.0
    }

    /// An unsigned integer element's value from its `size` data bytes.
    mutating func unsigned(size: Int) -> UInt64? {
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
