/// Deterministic pseudo-random bytes, different for each seed: file content for tests and the demo
/// origin's fixtures, the same on every run.
public func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: 0, count: count)
    for index in stride(from: 0, to: count, by: 8) {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        withUnsafeBytes(of: state) { word in
            for offset in 0..<min(8, count - index) { bytes[index + offset] = word[offset] }
        }
    }
    return bytes
}
