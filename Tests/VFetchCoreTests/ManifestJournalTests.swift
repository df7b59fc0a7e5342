import Foundation
import Testing

@testable import VFetchCore

/// The manifest file as checkpoints write it: a snapshot, then updates chained to it.
@Suite struct ManifestJournalTests {
    static let blockSize: Int64 = 64 << 10

    /// An empty bound manifest of `blocks` blocks.
    static func manifest(blocks: Int = 64) -> Manifest {
        let length = Int64(blocks) * blockSize
        return Manifest(
            url: "http://h/a", finalURL: "http://h/a", length: length, etag: "\"v1\"", lastModified: nil,
            contentType: nil, created: Date(timeIntervalSince1970: 1_795_234_800),
            blocks: BlockBitmap(length: length, blockSize: blockSize), part: PartIdentity(device: 1, inode: 2))
    }

    /// What a checkpoint records after block `block` is done and block `block + 1` is `fill` bytes in.
    static func update(completing block: Int, fill: Int64) -> Manifest.Update {
        let next = Int64(block + 1) * blockSize
        return Manifest.Update(
            completedBlocks: [block: UInt32(0xA0 + block)],
            partialBlocks: [PartialBlock(range: next..<(next + fill), tag: UInt32(fill))])
    }

    /// The file a journal leaves after `writes`.
    static func file(after writes: [ManifestJournal.Write]) -> [UInt8] {
        writes.reduce(into: []) { file, write in
            switch write {
            case .replace(let bytes): file = bytes
            case .append(let bytes): file += bytes
            }
        }
    }

    @Test func updatesAreAppendedAndReadBackAsTheManifest() throws {
        var journal = ManifestJournal(Self.manifest())
        #expect(journal.hasUpdates, "nothing written yet")
        var writes = [ManifestJournal.Write.replace(journal.snapshot())]
        #expect(!journal.hasUpdates)
        for block in 0..<10 {
            let write = journal.record(Self.update(completing: block, fill: 1000 + Int64(block)))
            guard case .append(let bytes) = write else {
                Issue.record("update \(block) is not appended")
                return
            }
            #expect(bytes.count < 250, "an update is small: \(bytes.count) bytes")
            writes.append(write)
            #expect(try Manifest(decoding: Self.file(after: writes)) == journal.manifest)
        }
        #expect(journal.hasUpdates)
        #expect(journal.manifest.blocks.completeBlocks == Array(0..<10))
        #expect(journal.manifest.partialBlocks == [PartialBlock(range: 10 * Self.blockSize..<(10 * Self.blockSize + 1009), tag: 1009)])
        // A snapshot folds them in.
        writes.append(.replace(journal.snapshot()))
        #expect(!journal.hasUpdates)
        #expect(try Manifest(decoding: Self.file(after: writes)) == journal.manifest)
        #expect(Self.file(after: writes) == journal.manifest.encoded())
    }

    @Test func updatesThatOutgrowTheSnapshotAreFoldedIntoANewOne() throws {
        var journal = ManifestJournal(Self.manifest(blocks: 16384))
        var file = journal.snapshot()
        var replaced = 0
        for block in 0..<2000 {
            switch journal.record(Self.update(completing: block, fill: 4096)) {
            case .replace(let bytes):
                replaced += 1
                file = bytes
            case .append(let bytes):
                file += bytes
            }
            #expect(file.count <= 2 * ManifestJournal.minimumUpdateBytes + journal.manifest.encoded().count + 1024)
        }
        #expect(replaced > 0 && replaced < 20, "\(replaced) snapshots for 2000 updates")
        #expect(try Manifest(decoding: file) == journal.manifest)
    }

    @Test func afterAFailedWriteTheNextIsASnapshot() throws {
        var journal = ManifestJournal(Self.manifest())
        _ = journal.snapshot()
        journal.writeFailed()
        #expect(journal.hasUpdates)
        let write = journal.record(Self.update(completing: 0, fill: 10))
        guard case .replace(let bytes) = write else {
            Issue.record("not a snapshot: \(write)")
            return
        }
        #expect(try Manifest(decoding: bytes) == journal.manifest)
        #expect(journal.manifest.blocks.completeBlocks == [0], "the update is kept: its bytes were synced")
    }

    /// What a normalized journal cannot take is left out of the update it writes, not written for
    /// the reader to refuse.
    @Test func anUpdateIsWrittenAsTheManifestTakesIt() throws {
        var journal = ManifestJournal(Self.manifest(blocks: 4))
        var file = journal.snapshot()
        let odd = Manifest.Update(
            completedBlocks: [0: 1, 9: 2, -1: 3],
            partialBlocks: [PartialBlock(range: 100..<200, tag: 4), PartialBlock(range: 70000..<80000, tag: 5)])
        guard case .append(let bytes) = journal.record(odd) else {
            Issue.record("not appended")
            return
        }
        file += bytes
        let read = try Manifest(decoding: file)
        #expect(read == journal.manifest)
        #expect(read.blocks.completeBlocks == [0] && read.partialBlocks.map(\.tag) == [5])
    }

    /// The update line is put together by hand; it is what JSONEncoder with sorted keys would write.
    @Test func anUpdateLineIsSortedCompactJSON() throws {
        struct Line: Encodable {
            var new_block_tags: String
            var new_blocks: [Int]
            var partial_blocks: [[Int64]]
        }
        let update = Manifest.Update(
            completedBlocks: [7: 0xDEAD_BEEF, 2: 1, 40: .max],
            partialBlocks: [PartialBlock(range: 0..<10, tag: 0), PartialBlock(range: 200_000..<262_143, tag: .max)])
        let record = update.encodedRecord(after: Array(repeating: UInt8(ascii: "0"), count: 64)).bytes
        let line = Array(record.prefix { $0 != 0x0A })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = try encoder.encode(
            Line(
                new_block_tags: Data([1, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE, 0xFF, 0xFF, 0xFF, 0xFF]).base64EncodedString(),
                new_blocks: [2, 7, 40], partial_blocks: [[0, 10, 0], [200_000, 262_143, 4_294_967_295]]))
        #expect(line == Array(expected), "\(String(decoding: line, as: UTF8.self))")
        #expect(
            Manifest.Update(completedBlocks: [:]).encodedRecord(after: []).bytes.starts(
                with: Array(#"{"new_block_tags":"","new_blocks":[],"partial_blocks":[]}"#.utf8)))
    }

    // MARK: - Damage

    /// The snapshot and three updates, and the manifest after each record.
    static func journalFile() -> (bytes: [UInt8], ends: [Int], states: [Manifest]) {
        var journal = ManifestJournal(Self.manifest())
        var bytes = journal.snapshot()
        var ends = [bytes.count]
        var states = [journal.manifest]
        for block in 0..<3 {
            guard case .append(let record) = journal.record(Self.update(completing: block, fill: 500)) else {
                preconditionFailure("appended")
            }
            bytes += record
            ends.append(bytes.count)
            states.append(journal.manifest)
        }
        return (bytes, ends, states)
    }

    /// A file cut anywhere in an update is the manifest as of the record before: an append that
    /// never completed claims nothing. Cut in the snapshot, it is refused.
    @Test func aCutShortUpdateIsIgnoredAndACutShortSnapshotRefused() throws {
        let (bytes, ends, states) = Self.journalFile()
        for count in 0..<bytes.count {
            let cut = Array(bytes[..<count])
            guard count >= ends[0] else {
                #expect(throws: ManifestError.self) { try Manifest(decoding: cut) }
                continue
            }
            let whole = ends.lastIndex { $0 <= count }!
            #expect(try Manifest(decoding: cut) == states[whole], "cut at \(count)")
        }
    }

    @Test func aFlippedByteInAnUpdateIsACorruptManifest() throws {
        let (bytes, ends, _) = Self.journalFile()
        // Each byte of the second update's JSON line.
        let line = bytes[ends[1]..<ends[2]].prefix { $0 != 0x0A }
        for index in line.indices {
            var damaged = bytes
            damaged[index] ^= 0x01
            #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: damaged) }
        }
    }

    @Test func updatesOutOfOrderOrMissingBreakTheChain() throws {
        let (bytes, ends, _) = Self.journalFile()
        let snapshot = bytes[..<ends[0]]
        let first = bytes[ends[0]..<ends[1]]
        let second = bytes[ends[1]..<ends[2]]
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: Array(snapshot + second)) }
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: Array(snapshot + second + first)) }
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: Array(snapshot + first + first)) }
        // Another manifest's snapshot before the same updates.
        var other = Self.manifest()
        other.created = other.created.addingTimeInterval(1)
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: other.encoded() + Array(first)) }
    }

    @Test func whatIsNeitherAnUpdateNorTheStartOfOneIsRefused() throws {
        let (bytes, ends, _) = Self.journalFile()
        var badTrailer = bytes
        badTrailer[ends[3] - 2] = UInt8(ascii: "G")
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: badTrailer) }
        badTrailer = bytes
        badTrailer[ends[2] - 2] = UInt8(ascii: "G")  // then the next record's trailer seals both lines
        #expect(throws: ManifestError.checksumMismatch) { try Manifest(decoding: badTrailer) }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: bytes + [0x0A]) }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: bytes + Array("garbage".utf8)) }
        #expect(throws: ManifestError.truncated) { try Manifest(decoding: bytes + Array("{\"a\":1}\nsha256 xyz".utf8)) }
    }

    @Test(
        arguments: [
            (#"{"new_block_tags":"","new_blocks":[],"partial_blocks":[]}"#, nil),
            (#"{"new_block_tags":"oAAAAA==","new_blocks":[5],"partial_blocks":[[393216,400000,1]],"later":true}"#, nil),
            (#"{"new_block_tags":"","new_blocks":[]}"#, "update: missing partial_blocks"),
            (#"{"new_block_tags":"oAAAAA==","new_blocks":[],"partial_blocks":[]}"#, "new_block_tags has 4 bytes for 0 blocks"),
            (
                #"{"new_block_tags":"oAAAAKAAAAA=","new_blocks":[6,5],"partial_blocks":[]}"#,
                "update: new_blocks are not in order, each a block not complete before"
            ),
            (
                #"{"new_block_tags":"oAAAAA==","new_blocks":[64],"partial_blocks":[]}"#,
                "update: new_blocks are not in order, each a block not complete before"
            ),
            (
                #"{"new_block_tags":"oAAAAA==","new_blocks":[-1],"partial_blocks":[]}"#,
                "update: new_blocks are not in order, each a block not complete before"
            ),
            (
                #"{"new_block_tags":"oAAAAA==","new_blocks":[5],"partial_blocks":[[327680,330000,1]]}"#,
                "partial_blocks are not in order, each within one block not complete"
            ),
            (#"[]"#, "update: not a JSON object"),
        ] as [(String, String?)])
    func judgesEachUpdate(json: String, error: String?) throws {
        var journal = ManifestJournal(Self.manifest())
        let snapshot = journal.snapshot()
        let digest = Array(snapshot.suffix(65).prefix(64))
        let record = Manifest.sealed(Array(json.utf8), after: digest).bytes
        if let error {
            #expect(throws: ManifestError.malformed(error)) { try Manifest(decoding: snapshot + record) }
        } else {
            #expect(throws: Never.self) { try Manifest(decoding: snapshot + record) }
        }
        // A block completed twice is refused in the next update.
        if error == nil, json.contains("[5]") {
            let again = Manifest.sealed(Array(json.utf8), after: Array(record.suffix(65).prefix(64))).bytes
            #expect(throws: ManifestError.self) { try Manifest(decoding: snapshot + record + again) }
        }
    }
}
