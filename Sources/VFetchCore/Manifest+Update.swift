import Foundation

extension Manifest {
    /// What one checkpoint adds to a manifest: the blocks completed since the record before, with
    /// their tags, and the partial blocks as they now stand (they replace the ones before).
    ///
    /// Appended to the file as one record (docs/MANIFEST.md), so a checkpoint writes a few hundred
    /// bytes however large the manifest has grown.
    package struct Update: Equatable, Sendable {
        /// The tag of each block completed, by index.
        package var completedBlocks: [Int: UInt32]
        package var partialBlocks: [PartialBlock]

        package init(completedBlocks: [Int: UInt32] = [:], partialBlocks: [PartialBlock] = []) {
            self.completedBlocks = completedBlocks
            self.partialBlocks = partialBlocks
        }
    }

    /// `update` less what this manifest cannot take: blocks out of range or complete already, and
    /// partial blocks that `normalized` would not keep once its blocks are complete.
    package func normalized(_ update: Update) -> Update {
        var after = blocks
        var kept = Update()
        for (block, tag) in update.completedBlocks
        where block >= 0 && block < blocks.blockCount && !blocks.isComplete(block: block) {
            kept.completedBlocks[block] = tag
            after.markComplete(block: block)
        }
        kept.partialBlocks = Self.normalized(update.partialBlocks, in: after)
        return kept
    }

    /// Applies `update`, which must be `normalized`.
    package mutating func apply(_ update: Update) {
        precondition(normalized(update) == update, "an update is applied as normalized")
        var after = blocks
        for (block, tag) in update.completedBlocks {
            after.markComplete(block: block)
            tags[block] = tag
        }
        blocks = after
        partialBlocks = update.partialBlocks
    }

    /// Decodes an update's JSON line (its trailer checked already) and applies it; throws if it is
    /// malformed or does not fit this manifest.
    mutating func apply(decodingUpdate json: [UInt8]) throws(ManifestError) {
        let line: UpdateLine
        do {
            line = try JSONDecoder().decode(UpdateLine.self, from: Data(json))
        } catch {
            throw .malformed("update: \(Self.reason(error))")
        }
        var previous = -1
        for block in line.new_blocks {
            guard block > previous, block < blocks.blockCount, !blocks.isComplete(block: block) else {
                throw .malformed("update: new_blocks are not in order, each a block not complete before")
            }
            previous = block
        }
        var update = Update()
        update.completedBlocks = try Self.tags(line.new_block_tags, for: line.new_blocks, key: "new_block_tags")
        var after = blocks
        for block in line.new_blocks { after.markComplete(block: block) }
        update.partialBlocks = try Self.partialBlocks(line.partial_blocks, in: after)
        apply(update)
    }
}

extension Manifest.Update {
    /// The update's record, chained to `digest` (the record before it), and the record's own digest.
    ///
    /// The line is put together here rather than by JSONEncoder, which took most of a checkpoint's
    /// time: it holds only integers and base64, which need no escaping, and its keys are in order.
    func encodedRecord(after digest: [UInt8]) -> (bytes: [UInt8], digest: [UInt8]) {
        let blocks = completedBlocks.keys.sorted()
        var tagBytes: [UInt8] = []
        tagBytes.reserveCapacity(4 * blocks.count)
        for block in blocks {
            withUnsafeBytes(of: completedBlocks[block]!.littleEndian) { tagBytes += $0 }
        }
        let newBlocks = blocks.map(String.init).joined(separator: ",")
        let partial = partialBlocks.map { "[\($0.range.lowerBound),\($0.range.upperBound),\($0.tag)]" }
            .joined(separator: ",")
        let line =
            #"{"new_block_tags":""# + Data(tagBytes).base64EncodedString() + #"","new_blocks":["# + newBlocks
            + #"],"partial_blocks":["# + partial + "]}"
        return Manifest.sealed(Array(line.utf8), after: digest)
    }
}

/// An update's JSON line, field for field; every key is required.
private struct UpdateLine: Decodable {
    /// Ascending.
    var new_blocks: [Int]
    /// 4 bytes per new block, little-endian, in the same order.
    var new_block_tags: String
    /// `[start, end, tag]` of every partial block now.
    var partial_blocks: [[Int64]]
}
