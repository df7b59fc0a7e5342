extension MediaByteSource {
    /// Exactly `count` bytes at `offset`, or nil unless they are all present.
    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        let bytes = presentPrefix(at: offset, count: count)
        return bytes.count == count ? bytes : nil
    }

    /// Up to `count` bytes at `offset`, stopping before the first byte that is not present.
    /// Memory grows with what is present, not with `count`, which a damaged file may make huge.
    func presentPrefix(at offset: Int64 = 0, count: Int) -> [UInt8] {
        guard offset >= 0, count > 0 else { return [] }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(count, 1 << 16))
        while bytes.count < count {
            let want = min(chunk.count, count - bytes.count)
            let answer = chunk.withUnsafeMutableBytes { buffer in
                read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset + Int64(bytes.count))
            }
            guard case .bytes(let read) = answer, read > 0 else { break }
            bytes.append(contentsOf: chunk[..<read])
        }
        return bytes
    }

    /// What a read at `offset` answers, reading at most one byte.
    func probe(at offset: Int64) -> MediaRead {
        var byte: UInt8 = 0
        return withUnsafeMutableBytes(of: &byte) { read(into: $0, at: offset) }
    }

    /// Whether every byte of `range` is present.
    func hasBytes(_ range: Range<Int64>) -> Bool {
        var offset = range.lowerBound
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        while offset < range.upperBound {
            let want = Int(min(Int64(scratch.count), range.upperBound - offset))
            let answer = scratch.withUnsafeMutableBytes { buffer in
                read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset)
            }
            guard case .bytes(let read) = answer, read > 0 else { return false }
            offset += Int64(read)
        }
        return true
    }
}
