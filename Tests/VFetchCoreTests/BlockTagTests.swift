import Testing

@testable import VFetchCore

@Suite struct BlockTagTests {
    /// A file read in steps (whole words, then a ragged end) has the tag of its bytes read at once; a changed
    /// byte anywhere, or one byte more, changes it.
    @Test func aTagTakenInStepsIsTheTagOfTheWhole() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(3 * 4096 + 77)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for step in [32, 4096, 1 << 20] {
            var running = BlockTag.Running()
            bytes.withUnsafeBytes { whole in
                var offset = 0
                while offset < whole.count {
                    let end = min(whole.count, offset + step)
                    running.add(UnsafeRawBufferPointer(rebasing: whole[offset..<end]))
                    offset = end
                }
            }
            #expect(running.value == BlockTag.of(bytes), "steps of \(step)")
        }
        var changed = bytes
        changed[5000] ^= 1
        #expect(BlockTag.of(changed) != BlockTag.of(bytes))
        #expect(BlockTag.of(bytes + [0]) != BlockTag.of(bytes))
    }
}
