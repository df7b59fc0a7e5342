/// A 32-bit digest of one block's bytes, which the manifest keeps for every complete block so that
/// bytes changed on disk after they were recorded (zeroed, a hole punched, an older copy put back)
/// are noticed on resume by reading a few blocks, not the whole file.
///
/// It guards against accidents, not an adversary: anyone who can rewrite the manifest can recompute
/// it. Fast rather than cryptographic (four independent FNV-1a lanes over 64-bit words, then
/// MurmurHash3's finalizer), so tagging what a download writes costs far less than writing it.
package enum BlockTag {
    private static let prime: UInt64 = 0x0000_0100_0000_01b3
    private static let seeds: (UInt64, UInt64, UInt64, UInt64) = (
        0xcbf2_9ce4_8422_2325, 0x9e37_79b9_7f4a_7c15, 0xc2b2_ae3d_27d4_eb4f, 0x1656_67b1_9e37_79f9
    )

    /// The tag of `bytes`.
    package static func of(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var tag = Running()
        tag.add(bytes)
        return tag.value
    }

    /// The tag of bytes that come a step at a time, as `of` gives for all of them at once: every step but the
    /// last a whole number of 32-byte words (a file read in steps of a MiB), so memory never holds them all.
    package struct Running: Sendable {
        private var lanes = BlockTag.seeds
        private var count = 0
        private var ended = false

        package init() {}

        package mutating func add(_ bytes: UnsafeRawBufferPointer) {
            precondition(!ended, "only the last step may end inside a word")
            var (a, b, c, d) = lanes
            var index = 0
            // Each lane's step is a bijection of its state, so a single changed word always changes the lane.
            while bytes.count - index >= 32 {
                a = (a ^ bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* prime
                b = (b ^ bytes.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)) &* prime
                c = (c ^ bytes.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self)) &* prime
                d = (d ^ bytes.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self)) &* prime
                index += 32
            }
            ended = index < bytes.count
            while index < bytes.count {
                a = (a ^ UInt64(bytes[index])) &* prime
                index += 1
            }
            lanes = (a, b, c, d)
            count += bytes.count
        }

        package var value: UInt32 {
            var hash = UInt64(count)
            for lane in [lanes.0, lanes.1, lanes.2, lanes.3] { hash = BlockTag.mix(hash ^ BlockTag.mix(lane)) }
            return UInt32(truncatingIfNeeded: hash ^ hash >> 32)
        }
    }

    package static func of(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { of($0) } }

    /// The bytes of a block that its tag covers: its first and last 4 KiB (the whole block when it is
    /// no longer than 8 KiB), tagged as one run. Reading all of every block back at each checkpoint
    /// cost a quarter of a second of CPU per GiB; these samples still tell a block that was zeroed,
    /// punched out or put back from an older copy (which holds zeros where it had nothing yet).
    package static func sampled(_ block: Range<Int64>) -> [Range<Int64>] {
        guard block.count > 2 * sample else { return [block] }
        return [block.lowerBound..<block.lowerBound + sample, block.upperBound - sample..<block.upperBound]
    }

    static let sample: Int64 = 4 << 10

    /// MurmurHash3's 64-bit finalizer: every input bit affects every output bit.
    fileprivate static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x &*= 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x &*= 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return x
    }
}
