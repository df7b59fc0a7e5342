import Foundation
import Testing

@testable import VFetchCore

@Suite struct ManifestTests {
    static let kib: Int64 = 1 << 10
    static let mib: Int64 = 1 << 20
    static let gib: Int64 = 1 << 30

    /// 2026-11-21T04:20:00Z
    static let created = Date(timeIntervalSince1970: 1_795_234_800)

    static let part = PartIdentity(device: 2049, inode: 131_075)

    /// A bound manifest: the part named, block i tagged 0xA0 + i.
    static func manifest(
        url: String = "https://example.com/v/film.mp4", etag: String? = "\"v1\"", lastModified: String? = nil,
        contentType: String? = nil, blocks: BlockBitmap? = nil
    ) -> Manifest {
        let blocks = blocks ?? BlockBitmap(length: 1000, blockSize: 64 * kib)
        return Manifest(
            url: url, finalURL: url, length: blocks.length, etag: etag, lastModified: lastModified,
            contentType: contentType, created: created, blocks: blocks, part: part, tags: tags(for: blocks))
    }

    static func tags(for blocks: BlockBitmap) -> [Int: UInt32] {
        Dictionary(uniqueKeysWithValues: blocks.completeBlocks.map { ($0, 0xA0 + UInt32($0)) })
    }

    /// A JSON line with a correct trailer, as another writer would produce it.
    static func sealed(_ json: String) -> [UInt8] {
        Array(json.utf8) + Array("\nsha256 \(SHA256.hex(Array(json.utf8)))\n".utf8)
    }

    /// A valid version 3 line for a 3-block file (blocks 0 and 2 tagged 0xA0 and 0xA2, no partial
    /// blocks), with `fields` replacing or adding keys.
    static func line(_ fields: [String: String] = [:]) -> String {
        version2Line(["version": "3", "partial_blocks": "[]"].merging(fields) { $1 })
    }

    /// The same in version 2, which had no partial blocks.
    static func version2Line(_ fields: [String: String] = [:]) -> String {
        version1Line(
            ["version": "2", "part_device": "2049", "part_inode": "131075", "block_tags": "\"oAAAAKIAAAA=\""]
                .merging(fields) { $1 })
    }

    /// The same in version 1, which had no part and no tags.
    static func version1Line(_ fields: [String: String] = [:]) -> String {
        var all = [
            "format": "\"vfetch-manifest\"", "version": "1", "url": "\"http://h/a\"", "final_url": "\"http://h/a\"",
            "length": "150000", "block_size": "65536", "etag": "null", "last_modified": "null",
            "content_type": "null", "created": "\"2026-11-21T04:20:00Z\"", "blocks": "\"BQ==\"", "blocks_done": "2",
        ]
        all.merge(fields) { $1 }
        return "{" + all.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static func isMalformed(_ error: ManifestError?) -> Bool {
        guard case .malformed = error else { return false }
        return true
    }

    // MARK: - The file format

    @Test func roundTripsEveryField() throws {
        var blocks = BlockBitmap(length: 3 * 64 * Self.kib + 100, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        blocks.markComplete(block: 3)
        let full = Manifest(
            url: "https://例え.jp/映画/\"quoted\" name\\back\u{1}slash/é.mp4?a=1&b=\u{2028}",
            finalURL: "https://cdn.example.com/x/y.mp4?sig=a%2Fb+c", length: blocks.length,
            etag: "W/\"weak-1\"", lastModified: "Sat, 21 Nov 2026 04:20:00 GMT", contentType: "video/mp4",
            created: Self.created, blocks: blocks, part: PartIdentity(device: .max, inode: .max),
            tags: [0: 0, 3: .max, 1: 7])  // block 1 is not complete: its tag is dropped
        let sparse = Self.manifest(etag: nil, lastModified: nil, contentType: nil)
        for manifest in [full, sparse] {
            let decoded = try Manifest(decoding: manifest.encoded())
            #expect(decoded == manifest)
        }
        let text = try #require(String(bytes: full.encoded(), encoding: .utf8))
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 3)  // line, trailer, ""
    }

    @Test func encodesTheDocumentedLine() throws {
        var blocks = BlockBitmap(length: 150_000, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        blocks.markComplete(block: 2)
        let manifest = Self.manifest(url: "http://h/a", etag: nil, blocks: blocks)
        let expected = Self.line()
        #expect(manifest.encoded() == Self.sealed(expected))
        let text = try #require(String(bytes: manifest.encoded(), encoding: .utf8))
        #expect(text.hasPrefix("{\"block_size\":65536,\"block_tags\":\"oAAAAKIAAAA=\",\"blocks\":\"BQ==\",\"blocks_done\":2,"))
    }

    @Test func encodingIsDeterministic() {
        let first = Self.manifest(lastModified: "Sat, 21 Nov 2026 04:20:00 GMT", contentType: "video/mp4")
        let second = Self.manifest(lastModified: "Sat, 21 Nov 2026 04:20:00 GMT", contentType: "video/mp4")
        #expect(first.encoded() == second.encoded())
        #expect(first.encoded() == first.encoded())
        #expect(first.encoded() != Self.manifest(contentType: "video/webm").encoded())
    }

    @Test func keepsCreatedToWholeSeconds() throws {
        var manifest = Self.manifest()
        manifest.created = Self.created.addingTimeInterval(0.75)
        #expect(manifest.created == Self.created)
        let decoded = try Manifest(decoding: manifest.encoded())
        #expect(decoded.created == Self.created)
        let text = try #require(String(bytes: manifest.encoded(), encoding: .utf8))
        #expect(text.contains("\"created\":\"2026-11-21T04:20:00Z\""))
    }

    @Test func aFlippedByteInTheJSONIsACorruptManifest() {
        let bytes = Self.manifest(url: "https://例え.jp/a").encoded()
        let lineEnd = bytes.firstIndex(of: 0x0A)!
        for index in 0..<lineEnd {
            var damaged = bytes
            damaged[index] ^= 0x01
            #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: damaged) }
        }
    }

    @Test func everyTruncationIsRefused() {
        let bytes = Self.manifest().encoded()
        for count in 0..<bytes.count {
            #expect(throws: ManifestError.self) { try Manifest(decoding: Array(bytes[..<count])) }
        }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: []) }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: Array(bytes.dropLast())) }
    }

    @Test func aDamagedTrailerIsTruncation() {
        let bytes = Self.manifest().encoded()
        var uppercase = bytes
        uppercase[bytes.count - 2] = UInt8(ascii: "G")
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: uppercase) }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: bytes + [0x0A]) }
    }

    @Test func refusesANewerVersion() {
        let bytes = Self.sealed(Self.line(["version": "4", "blocks": "42"]))
        #expect(throws: ManifestError.unsupportedVersion(4)) { try Manifest(decoding: bytes) }
    }

    // MARK: - Binding to the part

    @Test func readsAVersion1ManifestUnboundAndWritesItBackAsVersion3() throws {
        var old = try Manifest(decoding: Self.sealed(Self.version1Line()))
        #expect(old.part == nil && !old.isBound)
        #expect(old.tags.isEmpty)
        #expect(old.blocks.completeBlocks == [0, 2])
        var read: [Range<Int64>] = []
        old.tagCompleteBlocks { range in
            read.append(range)
            return 0xA0 + UInt32(range.lowerBound / 65536)
        }
        #expect(read == [0..<65536, 131_072..<150_000], "every complete block is read once, the last one short")
        old.part = Self.part
        #expect(old.isBound)
        #expect(old.encoded() == Self.sealed(Self.line()))
        // Tagged blocks are not read again.
        old.tagCompleteBlocks { _ in
            Issue.record("read again")
            return 0
        }
    }

    /// A version 2 manifest is a version 3 snapshot without partial blocks: read as one, bound as it was.
    @Test func readsAVersion2ManifestAsItWas() throws {
        let old = try Manifest(decoding: Self.sealed(Self.version2Line()))
        #expect(old.isBound && old.partialBlocks.isEmpty)
        #expect(old.tags == [0: 0xA0, 2: 0xA2])
        #expect(old.encoded() == Self.sealed(Self.line()))
        // Version 2 had no updates after its line.
        let update = Manifest.Update(partialBlocks: [PartialBlock(range: 65536..<70000, tag: 1)])
        let record = update.encodedRecord(after: Array(SHA256.hex(Array(Self.version2Line().utf8)).utf8)).bytes
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: Self.sealed(Self.version2Line()) + record) }
    }

    @Test(arguments: [
        ["block_tags": "\"oAAAAA==\""],  // one tag for two complete blocks
        ["block_tags": "\"oAAAAKIAAACkAAAA\""],  // three
        ["block_tags": "\"\""],
        ["block_tags": "\"o?AAAKIAAAA=\""],  // not base64
        ["block_tags": "null"],
        ["part_device": "null"],
        ["part_inode": "-1"],
        ["part_inode": "18446744073709551616"],  // 2^64
        ["part_inode": "\"131075\""],
    ])
    func refusesMalformedBindings(_ fields: [String: String]) {
        let error = #expect(throws: ManifestError.self) { try Manifest(decoding: Self.sealed(Self.line(fields))) }
        #expect(Self.isMalformed(error), "\(String(describing: error))")
    }

    @Test(arguments: ["part_device", "part_inode", "block_tags", "partial_blocks"])
    func aVersion3ManifestNeedsItsBinding(key: String) {
        let line = Self.line().replacingOccurrences(
            of: #","?\#(key)":[^,}]*"#, with: "", options: .regularExpression)
        #expect(!line.contains(key))
        #expect(throws: ManifestError.malformed("missing \(key)")) { try Manifest(decoding: Self.sealed(line)) }
    }

    @Test func aFlippedByteInATagIsACorruptManifest() throws {
        var blocks = BlockBitmap(length: 150_000, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        let bytes = Self.manifest(blocks: blocks).encoded()
        let text = try #require(String(bytes: bytes, encoding: .utf8))
        let tags = try #require(text.range(of: "\"block_tags\":\""))
        var damaged = bytes
        damaged[text.utf8.distance(from: text.startIndex, to: tags.upperBound)] ^= 0x01
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: damaged) }
    }

    @Test func forgettingABlockUnmarksItAndDropsItsTag() throws {
        var blocks = BlockBitmap(length: 150_000, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        blocks.markComplete(block: 2)
        var manifest = Self.manifest(blocks: blocks)
        manifest.forget(block: 2)
        #expect(manifest.blocks.completeBlocks == [0])
        #expect(manifest.tags == [0: 0xA0])
        #expect(try Manifest(decoding: manifest.encoded()) == manifest)
    }

    @Test func checksEveryBlockOfASmallFileAndASampleOfALargeOne() {
        var generator = SystemRandomNumberGenerator()
        var few = BlockBitmap(length: 100 * 65536, blockSize: 65536)
        for block in stride(from: 0, to: 100, by: 2) { few.markComplete(block: block) }
        #expect(Self.manifest(blocks: few).blocksToCheck(using: &generator) == few.completeBlocks)
        var many = BlockBitmap(length: Self.gib, blockSize: 64 * Self.kib)
        for block in 0..<10_000 { many.markComplete(block: block) }
        let sample = Self.manifest(blocks: many).blocksToCheck(using: &generator)
        #expect(sample.count == Manifest.blocksSampled + 1)
        #expect(Set(sample).count == sample.count)
        #expect(sample.last == 9_999, "the last complete block is always checked")
        #expect(sample.allSatisfy { many.isComplete(block: $0) })
        #expect(Self.manifest(blocks: BlockBitmap(length: 0, blockSize: 65536)).blocksToCheck(using: &generator).isEmpty)
    }

    @Test func aBlockWithoutATagMatchesNothing() {
        var blocks = BlockBitmap(length: 150_000, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        let manifest = Self.manifest(blocks: blocks)
        #expect(manifest.matches(block: 0, tag: 0xA0))
        #expect(!manifest.matches(block: 0, tag: 0xA1))
        #expect(!manifest.matches(block: 0, tag: nil), "an unreadable block")
        #expect(!manifest.matches(block: 1, tag: 0xA1), "a block never recorded")
    }

    /// The values docs/MANIFEST.md gives for its Python version, and its example manifest.
    @Test func aTagIsTheDocumentedFunction() throws {
        #expect(BlockTag.of((0..<100).map { UInt8($0) }) == 0x200e_22fc)
        #expect(BlockTag.of([]) == 0x20fe_406a)
        #expect(BlockTag.of([UInt8](repeating: 0, count: 65536)) == 0x5ff1_6333)
        let example = #"""
            {"block_size":65536,"block_tags":"xJEqPxLgdws=","blocks":"BQ==","blocks_done":2,"content_type":"video/mp4","created":"2026-11-21T04:20:00Z","etag":"\"5f2a-24a70\"","final_url":"https://cdn.example.net/v/night.mp4?sig=abc","format":"vfetch-manifest","last_modified":"Sat, 21 Nov 2026 04:00:00 GMT","length":150000,"part_device":2049,"part_inode":1835271,"partial_blocks":[[65536,100000,1562147330]],"url":"https://example.com/films/night.mp4","version":3}
            sha256 f757780c198b32f4a7ca9ccf51e4aab3332ef47679721516e2054238edd95365

            """#
        let manifest = try Manifest(decoding: Array(example.utf8))
        #expect(manifest.part == PartIdentity(device: 2049, inode: 1_835_271))
        #expect(manifest.tags == [0: 0x3f2a_91c4, 2: 0x0b77_e012])
        #expect(manifest.partialBlocks == [PartialBlock(range: 65536..<100_000, tag: 0x5d1c_7a02)])
        #expect(manifest.encoded() == Array(example.utf8))
        let update = #"""
            {"new_block_tags":"senEdw==","new_blocks":[1],"partial_blocks":[]}
            sha256 1492f3085c0801305ef12d8670435823eed84db86899e7bcc8cd794032a7078e

            """#
        let updated = try Manifest(decoding: Array((example + update).utf8))
        #expect(updated.blocks.isComplete && updated.partialBlocks.isEmpty)
        #expect(updated.tags == [0: 0x3f2a_91c4, 1: 0x77c4_e9b1, 2: 0x0b77_e012])
        let record = Manifest.Update(completedBlocks: [1: 0x77c4_e9b1]).encodedRecord(
            after: Array("f757780c198b32f4a7ca9ccf51e4aab3332ef47679721516e2054238edd95365".utf8))
        #expect(record.bytes == Array(update.utf8))
    }

    @Test func aTagSeesEveryChangedByteZerosAndLength() {
        let block = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let tag = BlockTag.of(block)
        #expect(BlockTag.of(block) == tag)
        for index in [0, 1, 7, 8, 31, 32, 4095, 4096, 65534, 65535] {
            var changed = block
            changed[index] ^= 0x80
            #expect(BlockTag.of(changed) != tag, "byte \(index)")
        }
        #expect(BlockTag.of([UInt8](repeating: 0, count: 65536)) != tag)
        #expect(BlockTag.of([UInt8](repeating: 0, count: 65536)) != BlockTag.of([UInt8](repeating: 0, count: 65535)))
        #expect(BlockTag.of(Array(block[..<100])) != BlockTag.of(Array(block[..<101])))
    }

    @Test(arguments: [
        ["blocks": "\"BQA=\""],  // two bytes for three blocks
        ["blocks": "\"\""],  // none
        ["blocks": "\"DQ==\""],  // bit 3 set: past the last block
        ["blocks": "\"B?==\""],  // not base64
        ["blocks_done": "3"],  // disagrees with the bits
        ["block_size": "0"],
        ["length": "-1"],
        ["length": "1.5"],
        ["created": "\"21 Nov 2026\""],
    ])
    func refusesMalformedFields(_ fields: [String: String]) throws {
        _ = try Manifest(decoding: Self.sealed(Self.line()))  // the unmodified line is valid
        let error = #expect(throws: ManifestError.self) { try Manifest(decoding: Self.sealed(Self.line(fields))) }
        #expect(Self.isMalformed(error), "\(String(describing: error))")
    }

    @Test(arguments: [
        ("not json", "invalid JSON"),
        ("[1,2]", "not a JSON object"),
        ("{}", "format is not \"vfetch-manifest\""),
        (line(["format": "\"other\""]), "format is not \"vfetch-manifest\""),
        (line(["version": "\"1\""]), "wrong type for version"),
        (line(["url": "null"]), "null url"),
        (line().replacingOccurrences(of: "\"etag\":null,", with: ""), "missing etag"),
        (line().replacingOccurrences(of: ",", with: ",\n"), "the JSON spans more than one line"),
    ])
    func namesWhatIsWrong(json: String, reason: String) {
        #expect(throws: ManifestError.malformed(reason)) { try Manifest(decoding: Self.sealed(json)) }
    }

    @Test func describesErrorsShortly() {
        #expect(ManifestError.checksumMismatch.description == "checksum mismatch (corrupt manifest)")
        #expect(ManifestError.unsupportedVersion(2).description == "unsupported manifest version 2")
        #expect(ManifestError.malformed("no version").description == "malformed manifest: no version")
    }

    @Test func onlyAStrongETagProvesIdentity() {
        #expect(Self.manifest(etag: "\"abc\"").hasStrongETag)
        #expect(!Self.manifest(etag: "W/\"abc\"").hasStrongETag)
        #expect(!Self.manifest(etag: nil).hasStrongETag)
        #expect(!Self.manifest(etag: "").hasStrongETag)
    }

    // MARK: - Partial blocks

    @Test func roundTripsPartialBlocks() throws {
        var blocks = BlockBitmap(length: 4 * 64 * Self.kib + 100, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 1)
        let partial = [
            PartialBlock(range: 10..<5000, tag: 7), PartialBlock(range: 5000..<6000, tag: 8),
            PartialBlock(range: 3 * 64 * Self.kib..<(3 * 64 * Self.kib + 1), tag: .max),
            PartialBlock(range: (4 * 64 * Self.kib + 99)..<(4 * 64 * Self.kib + 100), tag: 0),
        ]
        let manifest = Manifest(
            url: "http://h/a", finalURL: "http://h/a", length: blocks.length, etag: "\"v1\"", lastModified: nil,
            contentType: nil, created: Self.created, blocks: blocks, part: Self.part, tags: Self.tags(for: blocks),
            partialBlocks: partial.reversed())
        #expect(manifest.partialBlocks == partial, "kept in order")
        #expect(try Manifest(decoding: manifest.encoded()) == manifest)
        #expect(
            manifest.savedRanges.ranges == [
                10..<6000, 64 * Self.kib..<(128 * Self.kib), 3 * 64 * Self.kib..<(3 * 64 * Self.kib + 1),
                (4 * 64 * Self.kib + 99)..<(4 * 64 * Self.kib + 100),
            ])
    }

    @Test func keepsOnlyPartialBlocksThatFit() {
        var blocks = BlockBitmap(length: 150_000, blockSize: 64 * Self.kib)
        blocks.markComplete(block: 0)
        let offered = [
            PartialBlock(range: 100..<200, tag: 1),  // in a complete block
            PartialBlock(range: 65000..<66000, tag: 2),  // across two blocks
            PartialBlock(range: 70000..<70000, tag: 3),  // empty
            PartialBlock(range: 149_000..<150_001, tag: 4),  // past the end
            PartialBlock(range: 70000..<80000, tag: 5),
            PartialBlock(range: 79999..<90000, tag: 6),  // overlaps the one before
            PartialBlock(range: 140_000..<150_000, tag: 7),
        ]
        #expect(Manifest.normalized(offered, in: blocks) == [offered[4], offered[6]])
        var manifest = Self.manifest(blocks: blocks)
        var update = Manifest.Update(completedBlocks: [2: 9], partialBlocks: [offered[4], offered[6]])
        update = manifest.normalized(update)
        #expect(update.partialBlocks == [offered[4]], "block 2 completes: its partial block goes")
        manifest.apply(update)
        #expect(manifest.blocks.completeBlocks == [0, 2] && manifest.tags[2] == 9)
        let many = (0..<2000).map { PartialBlock(range: Int64(70000 + $0)..<Int64(70001 + $0), tag: 0) }
        #expect(Manifest.normalized(many, in: blocks).count == Manifest.partialBlockLimit)
    }

    @Test(arguments: [
        "[[65536,100000]]",  // no tag
        "[[65536,100000,1,2]]",
        "[[65536,100000,4294967296]]",  // tag past 32 bits
        "[[65536,100000,-1]]",
        "[[100000,65536,1]]",  // backwards
        "[[65536,65536,1]]",  // empty
        "[[100,200,1]]",  // in complete block 0
        "[[65000,66000,1]]",  // across two blocks
        "[[140000,150001,1]]",  // past the end
        "[[70000,80000,1],[66000,67000,2]]",  // out of order
        "[[70000,80000,1],[79999,90000,2]]",  // overlapping
        "[[65536,1e3,1]]",
        "{}",
        "null",
    ])
    func refusesMalformedPartialBlocks(_ value: String) {
        let error = #expect(throws: ManifestError.self) { try Manifest(decoding: Self.sealed(Self.line(["partial_blocks": value]))) }
        #expect(Self.isMalformed(error), "\(String(describing: error))")
    }

    @Test func aFlippedByteInAPartialBlockIsACorruptManifest() throws {
        let manifest = Manifest(
            url: "http://h/a", finalURL: "http://h/a", length: 150_000, etag: nil, lastModified: nil, contentType: nil,
            created: Self.created, blocks: BlockBitmap(length: 150_000, blockSize: 64 * Self.kib), part: Self.part,
            partialBlocks: [PartialBlock(range: 65536..<100_000, tag: 12345)])
        var bytes = manifest.encoded()
        let text = try #require(String(bytes: bytes, encoding: .utf8))
        let value = try #require(text.range(of: "12345"))
        bytes[text.utf8.distance(from: text.startIndex, to: value.lowerBound)] ^= 0x01
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: bytes) }
    }

    // MARK: - The block bitmap

    @Test func choosesBlockSizes() {
        let cases: [(length: Int64, size: Int64)] = [
            (0, 64 * Self.kib), (1, 64 * Self.kib), (Self.mib, 64 * Self.kib), (Self.gib, 64 * Self.kib),
            (Self.gib + 1, 128 * Self.kib), (4 * Self.gib, 256 * Self.kib), (8 * Self.gib, 512 * Self.kib),
            (8 * Self.gib + 1, Self.mib), (16 * Self.gib, Self.mib),
            (64 * Self.gib, Self.mib),
        ]
        for (length, size) in cases {
            #expect(BlockBitmap.blockSize(forLength: length) == size, "length \(length)")
            let blocks = BlockBitmap(length: length, blockSize: size)
            #expect(length > 16 * Self.gib || blocks.blockCount <= 16384)
            #expect(length > 16 * Self.gib || blocks.bytes.count <= 2048)
        }
        #expect(BlockBitmap(length: 0, blockSize: 64 * Self.kib).blockCount == 0)
        #expect(BlockBitmap(length: 64 * Self.gib, blockSize: Self.mib).blockCount == 65536)
    }

    @Test func storesBitsLeastSignificantFirst() throws {
        var blocks = BlockBitmap(length: 10 * 100 + 1, blockSize: 100)  // 11 blocks, 2 bytes
        #expect(blocks.bytes == [0, 0])
        blocks.markComplete(block: 0)
        blocks.markComplete(block: 9)
        blocks.markComplete(block: 10)
        #expect(blocks.bytes == [0b0000_0001, 0b0000_0110])
        #expect(blocks.completedCount == 3)
        let copy = try #require(BlockBitmap(length: 1001, blockSize: 100, bytes: blocks.bytes))
        #expect(copy == blocks)
        #expect(BlockBitmap(length: 1001, blockSize: 100, bytes: [0]) == nil)
        #expect(BlockBitmap(length: 1001, blockSize: 100, bytes: [0, 0, 0]) == nil)
        #expect(BlockBitmap(length: 1001, blockSize: 100, bytes: [0, 0b0000_1000]) == nil)
        #expect(BlockBitmap(length: 1000, blockSize: 0, bytes: []) == nil)
        #expect(BlockBitmap(length: 0, blockSize: 100, bytes: []) != nil)
    }

    @Test func marksOnlyFullyCoveredBlocks() {
        let size = 64 * Self.kib
        let length = 3 * size + 100
        var blocks = BlockBitmap(length: length, blockSize: size)
        blocks.mark(coveredBy: ByteRangeSet([1..<(2 * size - 1)]))
        #expect(blocks.completedCount == 0)  // block 0 misses byte 0, block 1 its last byte
        blocks.mark(coveredBy: ByteRangeSet([size..<(2 * size)]))
        #expect((0..<4).map(blocks.isComplete(block:)) == [false, true, false, false])
        blocks.mark(coveredBy: ByteRangeSet([(3 * size)..<(length - 1)]))
        #expect(!blocks.isComplete(block: 3))
        blocks.mark(coveredBy: ByteRangeSet([(3 * size)..<length]))
        #expect((0..<4).map(blocks.isComplete(block:)) == [false, true, false, true])
        // Never unmarks; ignores bytes past the end.
        blocks.mark(coveredBy: ByteRangeSet([0..<size, (length + 5)..<(length + 10)]))
        #expect((0..<4).map(blocks.isComplete(block:)) == [true, true, false, true])
        #expect(!blocks.isComplete)
        blocks.mark(coveredBy: ByteRangeSet([0..<(length + 1000)]))
        #expect(blocks.isComplete)
        #expect(blocks.completedCount == 4)
    }

    @Test func namesTheBlocksCompletedSinceAnEarlierBitmap() {
        var earlier = BlockBitmap(length: 20 * 100, blockSize: 100)
        for block in [0, 3, 9] { earlier.markComplete(block: block) }
        var later = earlier
        #expect(later.blocksCompleted(since: earlier).isEmpty)
        for block in [1, 3, 8, 15, 19] { later.markComplete(block: block) }
        #expect(later.blocksCompleted(since: earlier) == [1, 8, 15, 19])
        #expect(earlier.blocksCompleted(since: later).isEmpty, "never the blocks it lacks")
    }

    @Test func findsThePartsOfRangesInBlocksNotComplete() {
        var blocks = BlockBitmap(length: 1050, blockSize: 100)  // 11 blocks, the last 50 bytes
        let done = ByteRangeSet([0..<100, 150..<420, 500..<550, 560..<570, 990..<1100])
        blocks.mark(coveredBy: done)
        #expect(blocks.completeBlocks == [0, 2, 3, 10])
        #expect(blocks.incompleteParts(of: done) == [150..<200, 400..<420, 500..<550, 560..<570, 990..<1000])
        #expect(BlockBitmap(length: 0, blockSize: 100).incompleteParts(of: ByteRangeSet([0..<10])).isEmpty)
    }

    /// The last block of a length near Int64.max ends at the length: its start plus the block size
    /// does not fit in 64 bits.
    @Test func theLastBlockOfAHugeFileEndsAtItsLength() {
        let blocks = BlockBitmap(length: .max, blockSize: 1 << 62)
        #expect(blocks.blockCount == 2)
        #expect(blocks.range(of: 1) == (1 << 62)..<Int64.max)
        #expect(blocks.incompleteParts(of: ByteRangeSet([(Int64.max - 10)..<Int64.max])) == [(Int64.max - 10)..<Int64.max])
    }

    @Test func completedRangesRoundTripWithMark() {
        let size: Int64 = 100
        var blocks = BlockBitmap(length: 1050, blockSize: size)  // 11 blocks, the last 50 bytes
        for block in [0, 1, 4, 7, 8, 9, 10] { blocks.markComplete(block: block) }
        let ranges = blocks.completedRanges
        #expect(ranges.ranges == [0..<200, 400..<500, 700..<1050])
        var again = BlockBitmap(length: 1050, blockSize: size)
        again.mark(coveredBy: ranges)
        #expect(again == blocks)
        #expect(BlockBitmap(length: 1050, blockSize: size).completedRanges.isEmpty)
        #expect(BlockBitmap(length: 0, blockSize: size).isComplete)
    }

    @Test func drawsAMap() {
        var blocks = BlockBitmap(length: 16 * 10, blockSize: 10)  // 16 blocks, 4 per character at width 4
        for block in [0, 1, 2, 3, 4, 5, 8] { blocks.markComplete(block: block) }
        #expect(blocks.map(width: 4) == "█▓░·")
        #expect(blocks.map(width: 1) == "░")
        #expect(blocks.map(width: 0) == "")
        var small = BlockBitmap(length: 20, blockSize: 10)  // more characters than blocks
        small.markComplete(block: 1)
        #expect(small.map(width: 4) == "··██")
        #expect(BlockBitmap(length: 0, blockSize: 10).map(width: 3) == "███")
    }

    /// The resume rules, one row each: which earlier bytes may be reused for which remote answer.
    @Test(
        arguments: [
            // (saved ETag, saved Last-Modified, remote ETag, remote Last-Modified, trust length, reusable)
            ("\"v1\"", nil, "\"v1\"", nil, false, true),
            ("\"v1\"", nil, "\"v2\"", nil, false, false),
            ("\"v1\"", "Mon", "\"v2\"", "Mon", false, false),
            ("W/\"v1\"", "Mon", "W/\"v1\"", "Mon", false, true),
            ("W/\"v1\"", "Mon", "W/\"v2\"", "Mon", false, false),
            ("W/\"v1\"", "Mon", "W/\"v1\"", "Tue", false, false),
            ("W/\"v1\"", nil, "W/\"v1\"", nil, false, false),
            ("W/\"v1\"", nil, "W/\"v1\"", nil, true, true),
            (nil, "Mon", nil, "Mon", false, true),
            (nil, "Mon", nil, "Tue", false, false),
            (nil, "Mon", nil, nil, true, false),
            (nil, nil, nil, nil, false, false),
            (nil, nil, nil, nil, true, true),
        ] as [(String?, String?, String?, String?, Bool, Bool)])
    func resumeRules(
        savedETag: String?, savedDate: String?, remoteETag: String?, remoteDate: String?, trust: Bool, reusable: Bool
    ) {
        let saved = Self.manifest(url: "http://h/a", etag: savedETag, lastModified: savedDate)
        let remote = RemoteFile(length: saved.length, acceptsRanges: true, etag: remoteETag, lastModified: remoteDate)
        #expect((saved.reasonToDiscard(for: remote, url: "http://h/a", trustLength: trust) == nil) == reusable)
    }

    @Test func resumeNeedsTheSameURLLengthAndRanges() {
        let saved = Self.manifest(url: "http://h/a")
        let same = RemoteFile(length: saved.length, acceptsRanges: true, etag: saved.etag)
        #expect(saved.reasonToDiscard(for: same, url: "http://h/a", trustLength: false) == nil)
        #expect(saved.reasonToDiscard(for: same, url: "http://h/b", trustLength: true)?.contains("another URL") == true)
        var longer = same
        longer.length = saved.length + 1
        #expect(saved.reasonToDiscard(for: longer, url: "http://h/a", trustLength: true)?.contains("length") == true)
        var noRanges = same
        noRanges.acceptsRanges = false
        #expect(saved.reasonToDiscard(for: noRanges, url: "http://h/a", trustLength: true)?.contains("ranges") == true)
    }

    // MARK: - Which part a manifest speaks for

    @Test func speaksOnlyForThePartItWasWrittenFor() {
        let saved = Self.manifest()
        #expect(saved.reasonNotToTrust(part: Self.part, size: saved.length) == nil)
        let copy = PartIdentity(device: Self.part.device, inode: Self.part.inode + 1)
        #expect(saved.reasonNotToTrust(part: copy, size: saved.length)?.contains("another file") == true)
        let moved = PartIdentity(device: Self.part.device + 1, inode: Self.part.inode)
        #expect(saved.reasonNotToTrust(part: moved, size: saved.length)?.contains("another file") == true)
        #expect(
            saved.reasonNotToTrust(part: Self.part, size: saved.length - 1)
                == "the part is \(saved.length - 1) bytes and the manifest says \(saved.length)")
    }

    @Test func aVersion1ManifestNamesNoPartAndIsBelieved() throws {
        let old = try Manifest(decoding: Self.sealed(Self.version1Line()))
        #expect(old.part == nil)
        #expect(old.reasonNotToTrust(part: Self.part, size: old.length) == nil)
        #expect(old.reasonNotToTrust(part: Self.part, size: 0) != nil)
    }
}
