import Testing

@testable import VFetchCore

@Suite struct MP4BoxesTests {
    /// A box header: 32-bit size (or 1 and a 64-bit size after the type) and a type.
    private func box(_ type: String, size: UInt64, large: Bool = false) -> [UInt8] {
        let type = Array(type.utf8)
        if large {
            return [0, 0, 0, 1] + type + (0..<8).reversed().map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
        }
        return (0..<4).reversed().map { UInt8(truncatingIfNeeded: size >> (8 * $0)) } + type
    }

    /// A whole box of `size` bytes whose payload is filler.
    private func filled(_ type: String, size: Int) -> [UInt8] {
        box(type, size: UInt64(size)) + [UInt8](repeating: 0xAB, count: size - 8)
    }

    /// Reads from `bytes`, except where `missing` says the bytes are not present.
    private func reader(_ bytes: [UInt8], missing: [Range<Int64>] = []) -> (Int64, Int) -> [UInt8]? {
        { offset, count in
            let wanted = offset..<offset + Int64(count)
            guard wanted.upperBound <= Int64(bytes.count), !missing.contains(where: { $0.overlaps(wanted) }) else {
                return nil
            }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
    }

    @Test func walksThirtyTwoBitBoxes() {
        let file = filled("ftyp", size: 24) + filled("moov", size: 100) + filled("mdat", size: 1000)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(
            walk.boxes == [
                MP4Box(type: "ftyp", range: 0..<24), MP4Box(type: "moov", range: 24..<124),
                MP4Box(type: "mdat", range: 124..<1124),
            ])
        #expect(walk.stoppedAt == nil)
        #expect(MP4Boxes.moov(in: walk.boxes)?.range == 24..<124)
        #expect(MP4Boxes.isFaststart(walk.boxes) == true)
        #expect(!MP4Boxes.hasFragments(walk.boxes))
        #expect(MP4Boxes.looksLikeMP4(walk.boxes))
    }

    @Test func readsSixtyFourBitLargeSizes() {
        // An mdat over 4 GiB, told by its 16-byte header; only the headers are ever read.
        let mdatSize: UInt64 = 5 << 30
        let length = 24 + Int64(mdatSize) + 100
        var headers: [Int64: [UInt8]] = [0: filled("ftyp", size: 24), 24: box("mdat", size: mdatSize, large: true)]
        headers[24 + Int64(mdatSize)] = box("moov", size: 100)
        let walk = MP4Boxes.scan(length: length) { offset, count in
            for (start, bytes) in headers where offset >= start && offset + Int64(count) <= start + Int64(bytes.count) {
                return Array(bytes[Int(offset - start)..<Int(offset - start) + count])
            }
            return nil
        }
        #expect(walk.boxes.map(\.type) == ["ftyp", "mdat", "moov"])
        #expect(walk.boxes[1].range == 24..<24 + Int64(mdatSize))
        #expect(MP4Boxes.moov(in: walk.boxes)?.range == 24 + Int64(mdatSize)..<length)
        #expect(MP4Boxes.isFaststart(walk.boxes) == false)
        #expect(walk.stoppedAt == nil)
    }

    @Test func sizeZeroRunsToTheEndOfTheFile() {
        let file = filled("ftyp", size: 16) + box("mdat", size: 0) + [UInt8](repeating: 1, count: 500)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(walk.boxes == [MP4Box(type: "ftyp", range: 0..<16), MP4Box(type: "mdat", range: 16..<524)])
        #expect(walk.stoppedAt == nil)
    }

    @Test func stopsAtAMissingHeaderAndSaysWhere() {
        // Head present (ftyp, free, mdat header), mdat's body and the moov header missing.
        let file =
            filled("ftyp", size: 32) + filled("free", size: 8) + filled("mdat", size: 4000) + filled("moov", size: 300)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [48..<4340]))
        #expect(walk.boxes.map(\.type) == ["ftyp", "free", "mdat"])
        #expect(walk.stoppedAt == 4040)
        #expect(MP4Boxes.moov(in: walk.boxes) == nil)
        #expect(MP4Boxes.isFaststart(walk.boxes) == false)

        // With the tail present as well, the walk finds moov exactly, though mdat's body is missing.
        let headAndTail = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [48..<4040]))
        #expect(MP4Boxes.moov(in: headAndTail.boxes)?.range == 4040..<4340)
        #expect(headAndTail.stoppedAt == nil)
    }

    @Test func stopsAtAMissingLargeSize() {
        let file = filled("ftyp", size: 16) + box("mdat", size: 40, large: true) + [UInt8](repeating: 0, count: 24)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [24..<32]))
        #expect(walk.boxes.map(\.type) == ["ftyp"])
        #expect(walk.stoppedAt == 16)
    }

    @Test func truncatedOrImpossibleHeadersEndTheWalk() {
        let ftyp = filled("ftyp", size: 16)
        // A box claiming more bytes than the file has.
        let tooLong = ftyp + box("moov", size: 1000) + [UInt8](repeating: 0, count: 100)
        let long = MP4Boxes.scan(length: Int64(tooLong.count), read: reader(tooLong))
        #expect(long.boxes.map(\.type) == ["ftyp"])
        #expect(long.stoppedAt == nil)
        // A size smaller than its header.
        let tiny = ftyp + box("free", size: 4) + [0, 0, 0, 0]
        #expect(MP4Boxes.scan(length: Int64(tiny.count), read: reader(tiny)).boxes.map(\.type) == ["ftyp"])
        // A 64-bit size smaller than its 16-byte header.
        let small = ftyp + box("mdat", size: 8, large: true)
        #expect(MP4Boxes.scan(length: Int64(small.count), read: reader(small)).boxes.map(\.type) == ["ftyp"])
        // Fewer than 8 bytes left: no header fits.
        let stub = ftyp + [0, 0, 0]
        let walk = MP4Boxes.scan(length: Int64(stub.count), read: reader(stub))
        #expect(walk.boxes.map(\.type) == ["ftyp"])
        #expect(walk.stoppedAt == nil)
        // A type that is not four printable characters: not ISO BMFF.
        let garbage: [UInt8] = [0, 0, 0, 16, 0x01, 0xFF, 0x80, 0x00] + [UInt8](repeating: 0, count: 8)
        let notMP4 = MP4Boxes.scan(length: 16, read: reader(garbage))
        #expect(notMP4.boxes.isEmpty)
        #expect(!MP4Boxes.looksLikeMP4(notMP4.boxes))
        #expect(MP4Boxes.isFaststart(notMP4.boxes) == nil)
    }

    @Test func fragmentedFilesHaveMoofBoxes() {
        let file =
            filled("ftyp", size: 24) + filled("moov", size: 64) + filled("moof", size: 40) + filled("mdat", size: 200)
            + filled("moof", size: 40) + filled("mdat", size: 200) + filled("mfra", size: 16)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(walk.boxes.map(\.type) == ["ftyp", "moov", "moof", "mdat", "moof", "mdat", "mfra"])
        #expect(MP4Boxes.hasFragments(walk.boxes))
        #expect(MP4Boxes.isFaststart(walk.boxes) == true)
    }

    @Test func walksChildrenOfABox() {
        let moov = box("moov", size: 8 + 16 + 24) + filled("mvhd", size: 16) + filled("mvex", size: 24)
        let walk = MP4Boxes.scan(in: 8..<Int64(moov.count), read: reader(moov))
        #expect(walk.boxes == [MP4Box(type: "mvhd", range: 8..<24), MP4Box(type: "mvex", range: 24..<48)])
    }

    @Test func emptyFileHasNoBoxes() {
        let walk = MP4Boxes.scan(length: 0, read: reader([]))
        #expect(walk.boxes.isEmpty)
        #expect(walk.stoppedAt == nil)
        let missing = MP4Boxes.scan(length: 100) { _, _ in nil }
        #expect(missing.boxes.isEmpty)
        #expect(missing.stoppedAt == 0)
    }
}
