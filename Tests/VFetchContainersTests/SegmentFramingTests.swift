import Testing
import VFetchContainers
import VFetchCore

/// The framing check that catches a segment cut short or replaced before it is remuxed.
@Suite struct SegmentFramingTests {
    /// `count` MPEG-TS packets: sync byte, then bytes that are never the sync byte at a packet start.
    static func packets(_ count: Int) -> [UInt8] {
        (0..<count * 188).map { $0 % 188 == 0 ? 0x47 : UInt8(truncatingIfNeeded: $0 * 7 + 1) }
    }

    /// A box of `type` with `body` bytes, its size in 32 bits.
    static func box(_ type: String, body: Int) -> [UInt8] {
        let size = UInt32(8 + body)
        return (0..<4).map { UInt8(truncatingIfNeeded: size >> (24 - 8 * UInt32($0))) } + Array(type.utf8)
            + [UInt8](repeating: 0xAB, count: body)
    }

    /// Feeds `bytes` in runs of `chunk` and answers the violation, if any.
    static func check(_ bytes: [UInt8], as framing: SegmentFraming, chunk: Int) -> SegmentFraming.Violation? {
        var check = SegmentFraming.Check(framing)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            bytes[offset..<end].withUnsafeBytes { check.feed($0) }
            offset = end
        }
        do {
            try check.finish()
            return nil
        } catch {
            return error
        }
    }

    @Test func detectsTheFramingFromTheFirstBytes() {
        #expect(SegmentFraming.detect(firstBytes: Self.packets(1)) == .transportStream)
        #expect(SegmentFraming.detect(firstBytes: Self.box("ftyp", body: 16)) == .isoBoxes)
        #expect(SegmentFraming.detect(firstBytes: Self.box("styp", body: 0)) == .isoBoxes)
        #expect(SegmentFraming.detect(firstBytes: Array("<html><body>".utf8)) == nil)
        #expect(SegmentFraming.detect(firstBytes: Array("ID3\u{4}\0\0\0\0\0\u{10}".utf8)) == nil)  // packed audio
        #expect(SegmentFraming.detect(firstBytes: Array("WEBVTT\n\n".utf8)) == nil)
        #expect(SegmentFraming.detect(firstBytes: [0x47, 0x40]) == nil)  // too short to tell
    }

    @Test(arguments: [1, 7, 188, 200, 1 << 16])
    func wholeFilesPass(chunk: Int) {
        #expect(Self.check(Self.packets(30), as: .transportStream, chunk: chunk) == nil)
        let mp4 = Self.box("ftyp", body: 16) + Self.box("moov", body: 300) + Self.box("free", body: 0) + Self.box("mdat", body: 1000)
        #expect(Self.check(mp4, as: .isoBoxes, chunk: chunk) == nil)
        // A 64-bit size, and a last box that runs to the end (size 0).
        let large: [UInt8] = [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0, 0, 0, 0, 0, 0, 20] + [1, 2, 3, 4]
        #expect(Self.check(Self.box("moof", body: 8) + large, as: .isoBoxes, chunk: chunk) == nil)
        let toEnd: [UInt8] = [0, 0, 0, 0] + Array("mdat".utf8) + [UInt8](repeating: 9, count: 500)
        #expect(Self.check(Self.box("moof", body: 8) + toEnd, as: .isoBoxes, chunk: chunk) == nil)
    }

    @Test(arguments: [1, 100, 1 << 16])
    func damageIsFoundWhereItIs(chunk: Int) {
        var packets = Self.packets(10)
        #expect(Self.check(Array(packets.dropLast(1)), as: .transportStream, chunk: chunk)?.offset == 1879)
        packets[376] = 0x48
        #expect(Self.check(packets, as: .transportStream, chunk: chunk) == .init(offset: 376, reason: "no MPEG-TS sync byte"))
        #expect(Self.check([], as: .transportStream, chunk: chunk)?.reason == "empty file")

        let mp4 = Self.box("moof", body: 100) + Self.box("mdat", body: 1000)
        #expect(Self.check(Array(mp4.dropLast(1)), as: .isoBoxes, chunk: chunk) == .init(offset: 108, reason: "MP4 box cut short"))
        #expect(Self.check(Array(mp4.prefix(112)), as: .isoBoxes, chunk: chunk)?.reason == "MP4 box cut short")
        #expect(Self.check(Self.box("moof", body: 8) + [0, 0, 0, 4] + Array("mdat".utf8), as: .isoBoxes, chunk: chunk)?.offset == 16)
        #expect(Self.check(Self.box("mo\u{0}f", body: 8), as: .isoBoxes, chunk: chunk)?.reason == "not an MP4 box type")
        let huge: [UInt8] = [0, 0, 0, 1] + Array("mdat".utf8) + [0xFF, 0, 0, 0, 0, 0, 0, 0]
        #expect(Self.check(huge, as: .isoBoxes, chunk: chunk)?.reason.contains("out of range") == true)
        #expect(Self.check(Array("<html>502 Bad Gateway</html>".utf8), as: .isoBoxes, chunk: chunk) != nil)
        #expect(Self.check([], as: .isoBoxes, chunk: chunk)?.reason == "empty file")
    }
}
