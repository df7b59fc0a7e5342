/// Which fixed-size blocks of a file are complete and durable.
///
/// The manifest stores this rather than byte ranges: its size is fixed by the file's length, so
/// rewriting it after every flush costs the same however scattered the finished bytes are.
package struct BlockBitmap: Equatable, Sendable {
    /// The file length in bytes.
    package let length: Int64
    package let blockSize: Int64
    private var bits: [UInt8]

    /// A bitmap of a `length`-byte file in which every block is missing.
    package init(length: Int64, blockSize: Int64) {
        precondition(length >= 0 && blockSize > 0, "BlockBitmap needs length >= 0 and blockSize > 0")
        self.length = length
        self.blockSize = blockSize
        let blocks = Self.blockCount(length: length, blockSize: blockSize)
        bits = [UInt8](repeating: 0, count: Self.byteCount(blocks: blocks))
    }

    /// A bitmap from its raw bits, as `bytes` returns them.
    ///
    /// Nil when `bytes` has the wrong size for length/blockSize, or has bits set past the last block.
    package init?(length: Int64, blockSize: Int64, bytes: [UInt8]) {
        // These come from a file on disk, so a bad value is an answer, not a crash.
        guard length >= 0, blockSize > 0 else { return nil }
        let blocks = Self.blockCount(length: length, blockSize: blockSize)
        guard bytes.count == Self.byteCount(blocks: blocks) else { return nil }
        if blocks % 8 != 0, let last = bytes.last, last >> (blocks % 8) != 0 { return nil }
        self.length = length
        self.blockSize = blockSize
        bits = bytes
    }

    /// The block size for a file of `length` bytes: the smallest power of two from 64 KiB to 1 MiB
    /// that needs at most 16384 blocks, so the bitmap stays within 2 KiB.
    ///
    /// 64 KiB up to 1 GiB; past 16 GiB even 1 MiB blocks are more than 16384, and the bitmap grows.
    package static func blockSize(forLength length: Int64) -> Int64 {
        var size: Int64 = 64 << 10
        while size < 1 << 20, blockCount(length: length, blockSize: size) > 16384 { size *= 2 }
        return size
    }

    /// The number of blocks, the last one possibly short; 0 for an empty file.
    package var blockCount: Int { Self.blockCount(length: length, blockSize: blockSize) }

    package var completedCount: Int { bits.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// True when every block is complete (so always for an empty file).
    package var isComplete: Bool { completedCount == blockCount }

    package func isComplete(block: Int) -> Bool {
        precondition(block >= 0 && block < blockCount, "block \(block) out of 0..<\(blockCount)")
        return bits[block / 8] & (1 << (block % 8)) != 0
    }

    package mutating func markComplete(block: Int) {
        precondition(block >= 0 && block < blockCount, "block \(block) out of 0..<\(blockCount)")
        bits[block / 8] |= 1 << (block % 8)
    }

    /// Un-marks a block whose bytes can no longer be trusted, so it is fetched again.
    package mutating func markMissing(block: Int) {
        precondition(block >= 0 && block < blockCount, "block \(block) out of 0..<\(blockCount)")
        bits[block / 8] &= ~(1 << (block % 8))
    }

    /// The bytes of `block`: `blockSize` of them, fewer for the last block.
    package func range(of block: Int) -> Range<Int64> {
        precondition(block >= 0 && block < blockCount, "block \(block) out of 0..<\(blockCount)")
        let start = Int64(block) * blockSize
        // `start + blockSize` can pass Int64.max for the last block of a length near it.
        return start..<(length - start <= blockSize ? length : start + blockSize)
    }

    /// The block that holds byte `offset` (which must be within the file).
    package func block(at offset: Int64) -> Int {
        precondition(offset >= 0 && offset < length, "byte \(offset) out of 0..<\(length)")
        return Int(offset / blockSize)
    }

    /// The indices of the complete blocks, in order.
    package var completeBlocks: [Int] { (0..<blockCount).filter { isComplete(block: $0) } }

    /// Marks every block whose bytes `done` covers entirely. Never unmarks.
    ///
    /// The last block may be shorter than `blockSize`: it counts once `done` reaches `length`.
    package mutating func mark(coveredBy done: ByteRangeSet) {
        for range in done.ranges {
            let lower = max(range.lowerBound, 0)
            guard lower < length, range.upperBound > lower else { continue }
            // A block counts only from its own start; the short last block ends at `length`.
            let first = Int(lower / blockSize + (lower % blockSize == 0 ? 0 : 1))
            let end = range.upperBound >= length ? blockCount : Int(range.upperBound / blockSize)
            for block in first..<max(first, end) { markComplete(block: block) }
        }
    }

    /// The blocks complete here but not in `earlier` (a bitmap of the same file and block size), in order.
    package func blocksCompleted(since earlier: BlockBitmap) -> [Int] {
        precondition(earlier.length == length && earlier.blockSize == blockSize, "same file, same blocks")
        var blocks: [Int] = []
        // A byte at a time: nearly all of them are unchanged between two checkpoints.
        for index in bits.indices where bits[index] & ~earlier.bits[index] != 0 {
            let new = bits[index] & ~earlier.bits[index]
            for bit in 0..<8 where new & (1 << bit) != 0 { blocks.append(index * 8 + bit) }
        }
        return blocks
    }

    /// The parts of `done` that lie in blocks not complete, cut at block boundaries, in order: what
    /// a checkpoint records as partial blocks. `done` must have been marked (`mark(coveredBy:)`), so
    /// only the first and last block of each of its ranges can be incomplete.
    package func incompleteParts(of done: ByteRangeSet) -> [Range<Int64>] {
        var parts: [Range<Int64>] = []
        for range in done.ranges {
            let lower = max(range.lowerBound, 0)
            let upper = min(range.upperBound, length)
            guard lower < upper else { continue }
            let first = block(at: lower)
            let last = block(at: upper - 1)
            if !isComplete(block: first) { parts.append(lower..<min(upper, self.range(of: first).upperBound)) }
            if last != first, !isComplete(block: last) { parts.append(self.range(of: last).lowerBound..<upper) }
        }
        return parts
    }

    /// The bytes of the complete blocks, merged into ranges (clipped to `length`).
    package var completedRanges: ByteRangeSet {
        var result = ByteRangeSet()
        var block = 0
        while block < blockCount {
            guard isComplete(block: block) else {
                block += 1
                continue
            }
            let start = block
            while block < blockCount, isComplete(block: block) { block += 1 }
            // A run to the last block ends at `length`: `blockCount * blockSize` can pass Int64.max
            // when a manifest on disk claims a length near it. Earlier blocks start before `length`.
            let end = block == blockCount ? length : Int64(block) * blockSize
            result.insert(Int64(start) * blockSize..<end)
        }
        return result
    }

    /// The raw bits: bit i (block i) is byte i/8, bit i%8, least significant bit first; ceil(blockCount/8) bytes.
    package var bytes: [UInt8] { bits }

    /// A compact map of `width` characters for progress displays: "█" all blocks of that slice
    /// complete, "▓" half or more, "░" some, "·" none.
    ///
    /// With more characters than blocks, neighbouring characters show the same block.
    package func map(width: Int) -> String {
        completedRanges.map(total: length, width: width)
    }

    private static func blockCount(length: Int64, blockSize: Int64) -> Int {
        // Division first: `length + blockSize - 1` could overflow for a hostile length.
        Int(length / blockSize + (length % blockSize == 0 ? 0 : 1))
    }

    private static func byteCount(blocks: Int) -> Int { blocks / 8 + (blocks % 8 == 0 ? 0 : 1) }
}
