import Foundation

/// The state of one unfinished download, as stored beside its `.part` file.
///
/// The file is one line of JSON and a trailer with the line's SHA-256, so a torn or damaged
/// write is detected rather than trusted. docs/MANIFEST.md describes the format.
///
/// Since version 2 a manifest is also bound to the part file it describes, so that bytes changed
/// behind its back are fetched again rather than trusted:
///
/// - `part` names the file the bytes were written to (device and inode, taken from the open
///   descriptor, which a download keeps for its whole run). Its size needs no field: the part is
///   set to `length` before the first byte is written, and a part of another size is refused.
/// - `tags` holds a `BlockTag` of every complete block, read back from the part after the data is
///   synced and before the manifest that marks the block is written. So a manifest that claims a
///   block also states what the block holds: a bitmap edited by hand, a part zeroed in place, or an
///   older copy put in its place disagrees with it.
///
/// A resume reads a bounded sample of the tagged blocks (`blocksToCheck`), not the whole file. A
/// part that is not the one named (copied, replaced), or a sample that disagrees, is checked block
/// by block and what differs is fetched again; a sample that mostly disagrees throws the bytes away.
/// This guards against accidents, not an adversary: whoever can write the manifest can recompute
/// every tag, and `--checksum` remains the only proof of the whole file.
///
/// Since version 3 it also records partial blocks (`PartialBlock`): the synced bytes of blocks not
/// complete yet, so a kill does not lose the block each connection was in the middle of. And the file
/// may go on after its snapshot with updates (`Manifest.Update`, written by `ManifestJournal`), so a
/// checkpoint writes what changed rather than the whole manifest.
///
/// A version 1 manifest (no `part`, no tags) is still read: it was written by an earlier vfetch that
/// followed the same durability rules, and throwing its blocks away would cost a user who upgrades
/// mid-download the whole file again. Its blocks are taken on trust once, tagged by reading them, and
/// the manifest is rewritten in the current version. A damaged manifest cannot pass for version 1:
/// the trailer covers the version too. A version 2 manifest is a version 3 snapshot without partial
/// blocks and is read as one.
package struct Manifest: Equatable, Sendable {
    package static let formatVersion = 3
    /// The versions `init(decoding:)` reads.
    package static let readableVersions = 1...3
    /// The most partial blocks a manifest holds; a writer records the first ones by offset. (32
    /// connections leave about 64.) Reading one is 8 KiB at most, so checking them all stays quick.
    package static let partialBlockLimit = 1024

    /// The URL the user asked for: the identity of the download.
    package var url: String
    /// Where redirects led.
    package var finalURL: String
    package var length: Int64
    /// As the server sent it, weak (`W/"..."`) or strong.
    package var etag: String?
    package var lastModified: String?
    package var contentType: String?
    /// When the download started, kept across resumes; whole seconds, as the file stores it.
    package var created: Date {
        didSet { created = created.wholeSeconds }
    }
    package var blocks: BlockBitmap {
        didSet {
            precondition(blocks.length == length && blocks.blockSize == oldValue.blockSize, "same file, same blocks")
            // A block just completed holds its partial blocks.
            partialBlocks = Self.normalized(partialBlocks, in: blocks)
        }
    }
    /// The part file the blocks were written to; nil in a version 1 manifest.
    package var part: PartIdentity?
    /// The `BlockTag` of each tagged block (by index), of its bytes when it was recorded. A complete
    /// block read from a version 1 manifest has none until `tagCompleteBlocks`. A dictionary, so its
    /// size follows the tags a file holds, not the block count a hostile length could claim.
    package internal(set) var tags: [Int: UInt32]
    /// The saved bytes of blocks not complete, in order (see `normalized`); none before version 3.
    package internal(set) var partialBlocks: [PartialBlock]

    package init(
        url: String, finalURL: String, length: Int64, etag: String?, lastModified: String?, contentType: String?,
        created: Date, blocks: BlockBitmap, part: PartIdentity? = nil, tags: [Int: UInt32] = [:],
        partialBlocks: [PartialBlock] = []
    ) {
        precondition(blocks.length == length, "the bitmap must describe the manifest's length")
        self.url = url
        self.finalURL = finalURL
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        // Rounded here too (didSet does not run in init), so a decoded copy compares equal.
        self.created = created.wholeSeconds
        self.blocks = blocks
        self.part = part
        // Only complete blocks keep a tag, so equal manifests compare equal.
        self.tags = tags.filter { $0.key >= 0 && $0.key < blocks.blockCount && blocks.isComplete(block: $0.key) }
        self.partialBlocks = Self.normalized(partialBlocks, in: blocks)
    }

    /// True when the ETag is strong (not `W/`): only a strong ETag proves the bytes are identical.
    package var hasStrongETag: Bool {
        guard let etag, !etag.isEmpty else { return false }
        return !etag.hasPrefix("W/")
    }

    /// True when every complete block has a tag and the part is named: what version 2 requires.
    package var isBound: Bool {
        part != nil && (0..<blocks.blockCount).allSatisfy { !blocks.isComplete(block: $0) || tags[$0] != nil }
    }

    /// Tags every complete block that has none, with `tag(range)` of its bytes.
    package mutating func tagCompleteBlocks<E: Error>(_ tag: (Range<Int64>) throws(E) -> UInt32) throws(E) {
        for block in 0..<blocks.blockCount where blocks.isComplete(block: block) && tags[block] == nil {
            tags[block] = try tag(blocks.range(of: block))
        }
    }

    /// Un-marks `block` and forgets its tag: its bytes will be fetched again.
    package mutating func forget(block: Int) {
        blocks.markMissing(block: block)
        tags[block] = nil
    }

    /// Forgets the partial blocks `shouldForget` picks: their bytes will be fetched again.
    package mutating func forgetPartialBlocks(where shouldForget: (PartialBlock) -> Bool) {
        partialBlocks.removeAll(where: shouldForget)
    }

    /// The bytes this manifest vouches for: its complete blocks and its partial blocks.
    package var savedRanges: ByteRangeSet {
        var saved = blocks.completedRanges
        for partial in partialBlocks { saved.insert(partial.range) }
        return saved
    }

    /// `partialBlocks` as a manifest holds them: each non-empty, within the file and within one block
    /// that `blocks` does not have complete; in order, none overlapping the one before; at most
    /// `partialBlockLimit`. A decoded manifest must hold them so already.
    package static func normalized(_ partialBlocks: [PartialBlock], in blocks: BlockBitmap) -> [PartialBlock] {
        var kept: [PartialBlock] = []
        for partial in partialBlocks.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            let range = partial.range
            guard kept.count < partialBlockLimit, !range.isEmpty, range.lowerBound >= 0, range.upperBound <= blocks.length
            else { continue }
            let block = blocks.block(at: range.lowerBound)
            guard block == blocks.block(at: range.upperBound - 1), !blocks.isComplete(block: block),
                range.lowerBound >= kept.last?.range.upperBound ?? 0
            else { continue }
            kept.append(partial)
        }
        return kept
    }
}

/// Which file a manifest's blocks were written to: its device and inode (`st_dev`, `st_ino`).
package struct PartIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// Why a manifest file cannot be used.
package enum ManifestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Empty or cut short: no valid trailer line at the end.
    case truncated
    /// The trailer is present but the SHA-256 of the JSON line does not match it.
    case checksumMismatch
    case unsupportedVersion(Int)
    /// Not the format, missing or invalid fields, or a bitmap of the wrong size.
    case malformed(String)

    package var description: String {
        switch self {
        case .truncated: "truncated manifest"
        case .checksumMismatch: "checksum mismatch (corrupt manifest)"
        case .unsupportedVersion(let version): "unsupported manifest version \(version)"
        case .malformed(let reason): "malformed manifest: \(reason)"
        }
    }
}

extension Manifest {
    private static let formatName = "vfetch-manifest"
    private static let trailerPrefix = Array("sha256 ".utf8)
    /// `sha256 ` + 64 hex digits + newline.
    private static let trailerCount = trailerPrefix.count + 64 + 1

    /// Read first, so a manifest of another kind or version is named as such before its fields are judged.
    private struct Header: Decodable {
        var format: String?
        var version: Int?
    }

    /// The file's bytes as a snapshot (no updates): deterministic for equal manifests.
    ///
    /// Always the current version, so the manifest must be bound: its part named and every complete block tagged.
    package func encoded() -> [UInt8] { encodedSnapshot().bytes }

    /// The snapshot's bytes, and its digest (64 hex digits), which the trailer of the first update covers.
    func encodedSnapshot() -> (bytes: [UInt8], digest: [UInt8]) {
        precondition(blocks.length == length, "the bitmap must describe the manifest's length")
        guard let part, isBound else { preconditionFailure("a manifest is written only bound to its part") }
        var tagBytes: [UInt8] = []
        tagBytes.reserveCapacity(4 * blocks.completedCount)
        for block in 0..<blocks.blockCount where blocks.isComplete(block: block) {
            withUnsafeBytes(of: tags[block]!.littleEndian) { tagBytes += $0 }
        }
        let line = ManifestLine(
            format: Self.formatName, version: Self.formatVersion, url: url, final_url: finalURL, length: length,
            block_size: blocks.blockSize, etag: etag, last_modified: lastModified, content_type: contentType,
            created: created.formatted(Self.dateStyle), blocks: Data(blocks.bytes).base64EncodedString(),
            blocks_done: blocks.completedCount, part_device: part.device, part_inode: part.inode,
            block_tags: Data(tagBytes).base64EncodedString(), partial_blocks: Self.triples(partialBlocks))
        return Self.sealed(Self.json(line), after: [])
    }

    /// `json` as one line of JSON with sorted keys.
    static func json(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        // Sorted keys make the bytes deterministic; JSON escapes every control character, so the line has no newline.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            // Only non-finite floats make JSONEncoder throw, and the lines have none.
            preconditionFailure("encoding a manifest cannot fail: \(error)")
        }
    }

    /// A record: `json`, a newline and the trailer, which holds the SHA-256 of `chain` (the digest of
    /// the record before; nothing for a snapshot) followed by `json`. Returns the record and its digest.
    static func sealed(_ json: [UInt8], after chain: [UInt8]) -> (bytes: [UInt8], digest: [UInt8]) {
        var hasher = SHA256()
        hasher.update(chain)
        hasher.update(json)
        let digest = Array(hasher.finalize().utf8)
        return (json + [0x0A] + trailerPrefix + digest + [0x0A], digest)
    }

    /// `partialBlocks` as the file writes them: `[start, end, tag]` each.
    static func triples(_ partialBlocks: [PartialBlock]) -> [[Int64]] {
        partialBlocks.map { [$0.range.lowerBound, $0.range.upperBound, Int64($0.tag)] }
    }

    /// Parses and verifies the snapshot and every update after it; throws for truncated, corrupt
    /// (checksum), unknown version or malformed input. A last update cut short is ignored: it is an
    /// append that never completed, and the records before it were durable before it began.
    package init(decoding bytes: [UInt8]) throws(ManifestError) {
        var rest = bytes[...]
        guard let snapshot = Self.takeRecord(from: &rest) else { throw .truncated }
        guard Self.sealed(Array(snapshot.json), after: []).digest[...] == snapshot.digest else { throw .checksumMismatch }
        guard !snapshot.json.contains(0x0A) else { throw .malformed("the JSON spans more than one line") }
        let decoded = try Self.decodeSnapshot(Array(snapshot.json))
        self = decoded.manifest
        let version = decoded.version
        var chain = Array(snapshot.digest)
        while !rest.isEmpty {
            guard version >= 3 else { throw .truncated }
            if Self.isTorn(rest) { break }
            guard let update = Self.takeRecord(from: &rest) else { throw .truncated }
            let json = Array(update.json)
            let sealed = Self.sealed(json, after: chain)
            guard sealed.digest[...] == update.digest else { throw .checksumMismatch }
            guard !json.contains(0x0A) else { throw .malformed("an update spans more than one line") }
            try apply(decodingUpdate: json)
            chain = sealed.digest
        }
    }

    /// One JSON line and its trailer's digest.
    private struct Record {
        var json: ArraySlice<UInt8>
        var digest: ArraySlice<UInt8>
    }

    /// Takes the record at the start of `bytes`: all up to the first newline followed by a valid trailer,
    /// and that trailer. Nil (and `bytes` unchanged) when there is none.
    private static func takeRecord(from bytes: inout ArraySlice<UInt8>) -> Record? {
        var searchFrom = bytes.startIndex
        while let newline = bytes[searchFrom...].firstIndex(of: 0x0A) {
            let trailer = bytes[(newline + 1)...].prefix(trailerCount)
            if trailer.count == trailerCount, trailer.last == 0x0A, isTrailerStart(trailer.dropLast()) {
                let record = Record(json: bytes[..<newline], digest: trailer.dropFirst(trailerPrefix.count).dropLast())
                bytes = bytes[trailer.endIndex...]
                return record
            }
            searchFrom = newline + 1
        }
        return nil
    }

    /// Whether `bytes` is the start of a record and no more: a JSON object's first bytes with no
    /// newline, or its whole line and the start of its trailer. That is what an append cut short leaves.
    private static func isTorn(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.first == UInt8(ascii: "{") else { return false }
        guard let newline = bytes.firstIndex(of: 0x0A) else { return true }
        let trailer = bytes[(newline + 1)...]
        return trailer.count < trailerCount && isTrailerStart(trailer)
    }

    /// Whether `bytes` begin a trailer: `sha256 ` then lowercase hex digits, up to its final newline.
    private static func isTrailerStart(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count < trailerCount else { return false }
        for (offset, byte) in bytes.enumerated() {
            let expected = offset < trailerPrefix.count ? byte == trailerPrefix[offset] : isLowercaseHex(byte)
            if !expected { return false }
        }
        return true
    }

    /// The manifest a snapshot's JSON line describes, and its version.
    private static func decodeSnapshot(_ json: [UInt8]) throws(ManifestError) -> (manifest: Manifest, version: Int) {
        let decoder = JSONDecoder()
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(json))
        } catch {
            throw .malformed(Self.reason(error))
        }
        guard header.format == Self.formatName else { throw .malformed("format is not \"\(Self.formatName)\"") }
        guard let version = header.version else { throw .malformed("no version") }
        guard Self.readableVersions.contains(version) else { throw .unsupportedVersion(version) }

        let line: ManifestLine
        do {
            line = try decoder.decode(ManifestLine.self, from: Data(json))
        } catch {
            throw .malformed(Self.reason(error))
        }
        guard line.length >= 0 else { throw .malformed("negative length") }
        guard line.block_size > 0 else { throw .malformed("block_size is not positive") }
        guard let created = try? Date(line.created, strategy: Self.dateStyle) else {
            throw .malformed("created is not an ISO 8601 UTC time")
        }
        guard let bits = Data(base64Encoded: line.blocks) else { throw .malformed("blocks is not base64") }
        guard let blocks = BlockBitmap(length: line.length, blockSize: line.block_size, bytes: Array(bits)) else {
            throw .malformed("blocks does not fit length and block_size")
        }
        guard line.blocks_done == blocks.completedCount else {
            throw .malformed("blocks_done is \(line.blocks_done) but \(blocks.completedCount) blocks are set")
        }
        var part: PartIdentity?
        var tags: [Int: UInt32] = [:]
        if version >= 2 {
            // ManifestLine requires these keys from version 2 on.
            guard let device = line.part_device, let inode = line.part_inode, let encodedTags = line.block_tags else {
                throw .malformed("missing part_device, part_inode or block_tags")
            }
            tags = try Self.tags(encodedTags, for: blocks.completeBlocks, key: "block_tags")
            part = PartIdentity(device: device, inode: inode)
        }
        var partialBlocks: [PartialBlock] = []
        if version >= 3 {
            // ManifestLine requires the key from version 3 on.
            guard let triples = line.partial_blocks else { throw .malformed("missing partial_blocks") }
            partialBlocks = try Self.partialBlocks(triples, in: blocks)
        }
        let manifest = Manifest(
            url: line.url, finalURL: line.final_url, length: line.length, etag: line.etag,
            lastModified: line.last_modified, contentType: line.content_type, created: created, blocks: blocks,
            part: part, tags: tags, partialBlocks: partialBlocks)
        return (manifest, version)
    }

    /// The tags `encoded` (base64, 4 bytes little-endian each) gives `blocks`, in order.
    static func tags(_ encoded: String, for blocks: [Int], key: String) throws(ManifestError) -> [Int: UInt32] {
        guard let bytes = Data(base64Encoded: encoded) else { throw .malformed("\(key) is not base64") }
        guard bytes.count == 4 * blocks.count else {
            throw .malformed("\(key) has \(bytes.count) bytes for \(blocks.count) blocks")
        }
        var tags: [Int: UInt32] = [:]
        tags.reserveCapacity(blocks.count)
        var next = bytes.startIndex
        for block in blocks {
            tags[block] = bytes[next..<(next + 4)].reversed().reduce(0) { $0 << 8 | UInt32($1) }
            next += 4
        }
        return tags
    }

    /// The partial blocks `triples` name, which must be as `normalized` keeps them in `blocks`.
    static func partialBlocks(_ triples: [[Int64]], in blocks: BlockBitmap) throws(ManifestError) -> [PartialBlock] {
        guard triples.count <= partialBlockLimit else {
            throw .malformed("more than \(partialBlockLimit) partial_blocks")
        }
        var partialBlocks: [PartialBlock] = []
        for triple in triples {
            guard triple.count == 3, triple[0] < triple[1], triple[2] >= 0, triple[2] <= Int64(UInt32.max) else {
                throw .malformed("partial_blocks holds \(triple), not [start, end, tag]")
            }
            partialBlocks.append(PartialBlock(range: triple[0]..<triple[1], tag: UInt32(triple[2])))
        }
        guard normalized(partialBlocks, in: blocks) == partialBlocks else {
            throw .malformed("partial_blocks are not in order, each within one block not complete")
        }
        return partialBlocks
    }

    /// `2026-11-21T04:20:00Z`: UTC, whole seconds.
    private static let dateStyle = Date.ISO8601FormatStyle()

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// A short phrase naming the field a decoding error is about.
    static func reason(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String { keys.map(\.stringValue).joined(separator: ".") }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?: return "missing \(path(context.codingPath + [key]))"
        case .valueNotFound(_, let context)?: return "null \(path(context.codingPath))"
        case .typeMismatch(_, let context)? where context.codingPath.isEmpty: return "not a JSON object"
        case .typeMismatch(_, let context)?: return "wrong type for \(path(context.codingPath))"
        // JSONDecoder reports a number that does not fit its field as invalid JSON, with no path.
        case .dataCorrupted(let context)? where !context.codingPath.isEmpty:
            return "invalid \(path(context.codingPath))"
        default: return "invalid JSON"
        }
    }
}

/// The JSON line, field for field; names are the file's keys.
private struct ManifestLine: Codable {
    var format: String
    var version: Int
    var url: String
    var final_url: String
    var length: Int64
    var block_size: Int64
    var etag: String?
    var last_modified: String?
    var content_type: String?
    var created: String
    var blocks: String
    var blocks_done: Int
    /// Version 2 on; nil only in a version 1 line.
    var part_device: UInt64?
    var part_inode: UInt64?
    /// 4 bytes per complete block, little-endian, in block order.
    var block_tags: String?
    /// Version 3 on: `[start, end, tag]` of each partial block.
    var partial_blocks: [[Int64]]?

    enum CodingKeys: String, CodingKey {
        case format, version, url, final_url, length, block_size, etag, last_modified, content_type, created, blocks
        case blocks_done, part_device, part_inode, block_tags, partial_blocks
    }
}

extension ManifestLine {
    // Every key is required, optionals included: a missing key means a foreign or broken writer.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(String.self, forKey: .format)
        version = try container.decode(Int.self, forKey: .version)
        url = try container.decode(String.self, forKey: .url)
        final_url = try container.decode(String.self, forKey: .final_url)
        length = try container.decode(Int64.self, forKey: .length)
        block_size = try container.decode(Int64.self, forKey: .block_size)
        etag = try container.decode(String?.self, forKey: .etag)
        last_modified = try container.decode(String?.self, forKey: .last_modified)
        content_type = try container.decode(String?.self, forKey: .content_type)
        created = try container.decode(String.self, forKey: .created)
        blocks = try container.decode(String.self, forKey: .blocks)
        blocks_done = try container.decode(Int.self, forKey: .blocks_done)
        if version >= 2 {
            part_device = try container.decode(UInt64.self, forKey: .part_device)
            part_inode = try container.decode(UInt64.self, forKey: .part_inode)
            block_tags = try container.decode(String.self, forKey: .block_tags)
        }
        if version >= 3 {
            partial_blocks = try container.decode([[Int64]].self, forKey: .partial_blocks)
        }
    }

    // Optionals are written as null, not left out, for the same reason.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
        try container.encode(version, forKey: .version)
        try container.encode(url, forKey: .url)
        try container.encode(final_url, forKey: .final_url)
        try container.encode(length, forKey: .length)
        try container.encode(block_size, forKey: .block_size)
        try container.encode(etag, forKey: .etag)
        try container.encode(last_modified, forKey: .last_modified)
        try container.encode(content_type, forKey: .content_type)
        try container.encode(created, forKey: .created)
        try container.encode(blocks, forKey: .blocks)
        try container.encode(blocks_done, forKey: .blocks_done)
        try container.encodeIfPresent(part_device, forKey: .part_device)
        try container.encodeIfPresent(part_inode, forKey: .part_inode)
        try container.encodeIfPresent(block_tags, forKey: .block_tags)
        try container.encodeIfPresent(partial_blocks, forKey: .partial_blocks)
    }
}

extension Date {
    /// The date without its fraction of a second, as the manifest stores it.
    fileprivate var wholeSeconds: Date {
        Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down))
    }
}
