import Testing

@testable import VFetchContainers
@testable import VFetchCore

/// Where the index is, from the bytes a download has so far: MP4 with `moov` first or last,
/// fragmented MP4, Matroska with its `Cues` where the `SeekHead` points, and files that lie.
@Suite struct ContainerIndexTests {
    /// A file of which only `present` bytes have arrived.
    struct PartialFile {
        var bytes: [UInt8]
        var present: [Range<Int64>]

        func locate() -> ContainerIndex.Location {
            ContainerIndex.locate(length: Int64(bytes.count)) { offset, count in
                let wanted = offset..<offset + Int64(count)
                guard present.contains(where: { $0.lowerBound <= wanted.lowerBound && wanted.upperBound <= $0.upperBound }) else {
                    return nil
                }
                return Array(bytes[Int(offset)..<Int(offset) + count])
            }
        }
    }

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + body.count)
        return withUnsafeBytes(of: size.bigEndian, Array.init) + Array(type.utf8) + body
    }

    static func filler(_ count: Int) -> [UInt8] { [UInt8](repeating: 0x55, count: count) }

    @Test func aTrailingMoovIsFoundFromTheHeadThenExactly() {
        let head = Self.box("ftyp", Array("isom".utf8) + [0, 0, 2, 0]) + Self.box("free", [])
        let mdat = Self.box("mdat", Self.filler(100_000))
        let moov = Self.box("moov", Self.filler(3000))
        let bytes = head + mdat + moov
        let moovStart = Int64(head.count + mdat.count)
        // The head alone says where the box after mdat starts...
        var file = PartialFile(bytes: bytes, present: [0..<4096])
        #expect(file.locate() == .headerAt(moovStart))
        // ...and its header says how long it is.
        file.present.append(moovStart..<moovStart + 8)
        #expect(file.locate() == .range(moovStart..<Int64(bytes.count)))
        // Nothing yet: wait for the head.
        #expect(PartialFile(bytes: bytes, present: []).locate() == .unknown)
    }

    @Test func aFaststartMoovIsTheIndexInTheHead() {
        let ftyp = Self.box("ftyp", Array("isom".utf8))
        let moov = Self.box("moov", Self.filler(500))
        let bytes = ftyp + moov + Self.box("mdat", Self.filler(10_000))
        let start = Int64(ftyp.count)
        #expect(PartialFile(bytes: bytes, present: [0..<600]).locate() == .range(start..<start + Int64(moov.count)))
    }

    @Test func aFragmentedMP4sIndexIsItsSidxOrTheMfraItsLastBoxMeasures() {
        let front = Self.box("ftyp", Array("iso6".utf8)) + Self.box("moov", Self.filler(200))
        let sidx = Self.box("sidx", Self.filler(40))
        let fragment = Self.box("moof", Self.filler(100)) + Self.box("mdat", Self.filler(5000))
        let withSidx = front + sidx + fragment + fragment
        #expect(PartialFile(bytes: withSidx, present: [0..<400]).locate() == .range(Int64(front.count)..<Int64(front.count + sidx.count)))

        let mfra = Self.box("mfra", Self.box("tfra", Self.filler(20)) + Self.box("mfro", [0, 0, 0, 0, 0, 0, 0, 52]))
        let withMfra = front + fragment + fragment + mfra
        let length = Int64(withMfra.count)
        #expect(PartialFile(bytes: withMfra, present: [0..<400, length - 64..<length]).locate() == .range(length - 52..<length))
        // Without its tail: the last 16 bytes say whether there is an mfra; without one, the fragments
        // play in file order and nothing comes first.
        #expect(PartialFile(bytes: withMfra, present: [0..<400]).locate() == .headerAt(length - 16))
        #expect(PartialFile(bytes: front + fragment, present: [0..<Int64(front.count + fragment.count)]).locate() == .none)
        // An mfro that measures more than the file is not followed.
        var lying = withMfra
        lying[lying.count - 1] = 0xFF
        lying[lying.count - 2] = 0xFF
        guard case .damaged = PartialFile(bytes: lying, present: [0..<400, length - 64..<length]).locate() else {
            Issue.record("an mfra larger than the file was trusted")
            return
        }
    }

    // MARK: Matroska

    /// An EBML element: its ID's bytes, an 8-byte size, the data.
    static func element(_ id: [UInt8], _ data: [UInt8]) -> [UInt8] {
        id + [0x01] + withUnsafeBytes(of: UInt64(data.count).bigEndian) { Array($0.dropFirst()) } + data
    }

    static func unsigned(_ id: [UInt8], _ value: UInt64) -> [UInt8] {
        id + [0x88] + withUnsafeBytes(of: value.bigEndian, Array.init)
    }

    /// EBML header, Segment { SeekHead → Cues at `cuesPosition`, Info, Cluster, Cues }.
    static func matroska(cuesPosition: UInt64? = nil) -> (bytes: [UInt8], cues: Range<Int64>) {
        let ebml = element([0x1A, 0x45, 0xDF, 0xA3], element([0x42, 0x82], Array("webm".utf8)))
        let info = element([0x15, 0x49, 0xA9, 0x66], unsigned([0x2A, 0xD7, 0xB1], 1_000_000))
        let cluster = element([0x1F, 0x43, 0xB6, 0x75], unsigned([0xE7], 0) + filler(20_000))
        let cuesElement = element([0x1C, 0x53, 0xBB, 0x6B], filler(300))
        func seekHead(_ position: UInt64) -> [UInt8] {
            let seek = element([0x53, 0xAB], [0x1C, 0x53, 0xBB, 0x6B]) + unsigned([0x53, 0xAC], position)
            return element([0x11, 0x4D, 0x9B, 0x74], element([0x4D, 0xBB], seek))
        }
        let before = seekHead(0).count + info.count + cluster.count
        let body = seekHead(cuesPosition ?? UInt64(before)) + info + cluster + cuesElement
        let segment = element([0x18, 0x53, 0x80, 0x67], body)
        let cuesStart = Int64(ebml.count + segment.count - body.count + before)
        return (ebml + segment, cuesStart..<cuesStart + Int64(cuesElement.count))
    }

    @Test func matroskaCuesAreWhereTheSeekHeadPoints() {
        let (bytes, cues) = Self.matroska()
        var file = PartialFile(bytes: bytes, present: [0..<2048])
        #expect(file.locate() == .headerAt(cues.lowerBound))
        file.present.append(cues.lowerBound..<cues.lowerBound + 12)
        #expect(file.locate() == .range(cues))
    }

    @Test func aSeekHeadThatPointsOutsideTheFileOrAtSomethingElseIsDamaged() {
        for position: UInt64 in [1 << 40, 10] {
            let (bytes, _) = Self.matroska(cuesPosition: position)
            let whole = PartialFile(bytes: bytes, present: [0..<Int64(bytes.count)])
            guard case .damaged = whole.locate() else {
                Issue.record("a SeekHead pointing at \(position) was followed")
                continue
            }
        }
    }

    @Test func otherFilesHaveNoIndexToFetchFirst() {
        let transportStream = [UInt8](repeating: 0x47, count: 188 * 10)
        #expect(PartialFile(bytes: transportStream, present: [0..<1880]).locate() == .none)
        let text = Array("<html><body>not a video</body></html>".utf8)
        #expect(PartialFile(bytes: text, present: [0..<Int64(text.count)]).locate() == .none)
    }
}
