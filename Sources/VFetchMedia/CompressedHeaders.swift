#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Finds, in the bytes a read hands libavformat, the compressed headers its demuxers inflate to
/// whatever size the bytes declare, before they are handed over: a QuickTime compressed movie
/// header (`cmov`, which the mov demuxer inflates anywhere in the file, nesting included) and a
/// compressed ID3v2 frame (which libavformat reads at the start of any input and amid ADTS AAC).
/// A 255 KiB `cmov` inflated to 256 MiB; so did a 255 KiB ID3v2 frame, held twice. Neither is in
/// media vfetch means to open (MP4 writers never compress the movie header).
struct CompressedHeaders {
    /// Why the bytes are refused, or what must be present to decide.
    enum Verdict: Equatable {
        case refused(String)
        case missing(Range<Int64>)
        case aborted
    }

    /// The last bytes handed over and the offset after them: a header split between two reads is
    /// found in the second.
    private var tail: [UInt8] = []
    private var tailEnd: Int64 = -1
    /// The longest header looked for, the `cmov` one: `dcom` `zlib`, a size, `cmvd`.
    private static let longest = 16

    /// Looks at `bytes`, read at `offset` from `source`, and, for an ID3v2 tag starting in them,
    /// at the frame headers of the whole tag. Nil when libavformat may have the bytes.
    mutating func verdict(on bytes: UnsafeRawBufferPointer, at offset: Int64, in source: any MediaByteSource)
        -> Verdict?
    {
        let carried = tailEnd == offset ? tail : []
        let keep = Self.longest - 1
        // Sliced by index: `bytes.suffix(_:)` beside an Array picks Sequence's, which walks every byte
        // (18% of a remux's CPU).
        let last = UnsafeRawBufferPointer(rebasing: bytes[max(0, bytes.count - keep)...])
        tail = Array((carried + last).suffix(keep))
        tailEnd = offset + Int64(bytes.count)
        // A header that starts in the previous read and ends in this one: only the seam is copied.
        if !carried.isEmpty {
            let seam = carried + UnsafeRawBufferPointer(rebasing: bytes[..<min(bytes.count, keep)])
            let verdict = seam.withUnsafeBytes {
                Self.firstHeader(
                    in: $0, at: offset - Int64(carried.count), startingBefore: carried.count, endingAfter: carried.count, source)
            }
            if let verdict { return verdict }
        }
        return Self.firstHeader(in: bytes, at: offset, startingBefore: bytes.count, endingAfter: 0, source)
    }

    /// The verdict on the first header in `window` (read at `offset`) that starts before `end` and
    /// ends after `seam`. memchr finds the first byte of each kind of header: this runs on every
    /// byte a remux reads, so it must cost next to nothing.
    private static func firstHeader(
        in window: UnsafeRawBufferPointer, at offset: Int64, startingBefore end: Int, endingAfter seam: Int,
        _ source: any MediaByteSource
    ) -> Verdict? {
        let bytes = window.assumingMemoryBound(to: UInt8.self)
        func next(_ byte: UInt8, from index: Int) -> Int? {
            guard index < end, let base = window.baseAddress, let found = memchr(base + index, Int32(byte), end - index)
            else { return nil }
            return base.distance(to: found)
        }
        var movie = next(UInt8(ascii: "d"), from: 0)
        var tag = next(UInt8(ascii: "I"), from: 0)
        while movie != nil || tag != nil {
            if let index = movie, index < tag ?? .max {
                if index + longest > seam, isCompressedMovie(bytes, at: index) {
                    return .refused("a compressed movie header (cmov), which vfetch does not open")
                }
                movie = next(UInt8(ascii: "d"), from: index + 1)
            } else if let index = tag {
                if index + ID3Header.size > seam, let header = ID3Header(bytes, at: index),
                    let verdict = header.compressedFrame(at: offset + Int64(index), in: source)
                {
                    return verdict
                }
                tag = next(UInt8(ascii: "I"), from: index + 1)
            }
        }
        return nil
    }

    /// What `mov_read_cmov` checks before it inflates: `dcom` `zlib`, a box size, `cmvd`.
    private static func isCompressedMovie(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        index + longest <= bytes.count && bytes[index..<index + 8].elementsEqual("dcomzlib".utf8)
            && bytes[index + 12..<index + 16].elementsEqual("cmvd".utf8)
    }
}

/// An ID3v2.3 or 2.4 tag header as libavformat matches it (`ff_id3v2_match`). Version 2.2 tags
/// have no frame flags, and libavformat skips a 2.2 tag compressed whole.
private struct ID3Header {
    static let size = 10
    let version: UInt8
    let flags: UInt8
    /// The bytes after the 10-byte header.
    let length: Int64

    init?(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) {
        guard index + 10 <= bytes.count, bytes[index..<index + 3].elementsEqual("ID3".utf8),
            bytes[index + 3] == 3 || bytes[index + 3] == 4, bytes[index + 4] != 0xff,
            bytes[index + 6..<index + 10].allSatisfy({ $0 & 0x80 == 0 })
        else { return nil }
        version = bytes[index + 3]
        flags = bytes[index + 5]
        length = Self.syncsafe(bytes[index + 6..<index + 10])
    }

    /// Walks the tag's frame headers as `id3v2_parse` does and answers `.refused` at a frame it
    /// would inflate (compressed, not encrypted).
    func compressedFrame(at offset: Int64, in source: any MediaByteSource) -> CompressedHeaders.Verdict? {
        var reader = Reader(source: source)
        var position = offset + 10
        var left = length
        if flags & 0x40 != 0 {
            guard let size = reader.bytes(at: position, count: 4) else { return reader.stop }
            let extended = Self.syncsafe(size) - (version == 4 ? 4 : 0)
            guard extended >= 0 else { return nil }
            position += 4 + extended
            left -= 4 + extended
        }
        while left >= 10 {
            guard let header = reader.bytes(at: position, count: 10) else { return reader.stop }
            var size = Int64(Self.bigEndian(header[4..<8]))
            if version == 4, size > 0x7f {
                // Some writers put 2.3 sizes in 2.4 tags; libavformat takes the size after which a
                // frame ID (or padding) follows.
                if size < left {
                    let synced = Self.syncsafe(header[4..<8])
                    guard let afterSynced = reader.isFrameStart(at: position + 10 + synced) else { return reader.stop }
                    if afterSynced {
                        size = synced
                    } else {
                        guard let afterPlain = reader.isFrameStart(at: position + 10 + size) else { return reader.stop }
                        guard afterPlain else { return nil }
                    }
                } else {
                    size = Self.syncsafe(header[4..<8])
                }
            }
            left -= 10 + size
            guard size <= 1 << 28, left >= 0 else { return nil }
            if header[0] == 0 { return nil }  // padding
            let frameFlags = header[9]
            if size > 0, frameFlags & 0x08 != 0, frameFlags & 0x04 == 0 {
                let name = String(decoding: header[0..<4], as: UTF8.self)
                return .refused("a compressed ID3v2 frame (\(name)), which vfetch does not open")
            }
            position += 10 + size
        }
        return nil
    }

    private static func syncsafe(_ bytes: some Collection<UInt8>) -> Int64 {
        bytes.reduce(0) { $0 << 7 | Int64($1 & 0x7f) }
    }

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// Reads a tag's frame headers through a 64 KiB window, and remembers why a read came up short.
private struct Reader {
    let source: any MediaByteSource
    private var window: [UInt8] = []
    private var windowStart: Int64 = 0
    /// The verdict when bytes were not there: nil at the end of the file (libavformat stops there too).
    private(set) var stop: CompressedHeaders.Verdict?

    init(source: any MediaByteSource) {
        self.source = source
    }

    mutating func bytes(at offset: Int64, count: Int) -> ArraySlice<UInt8>? {
        if offset < windowStart || offset + Int64(count) > windowStart + Int64(window.count) {
            windowStart = offset
            window = source.presentPrefix(at: offset, count: max(count, 64 << 10))
        }
        let from = Int(offset - windowStart)
        guard from + count <= window.count else {
            switch source.probe(at: windowStart + Int64(window.count)) {
            case .missing(let run): stop = .missing(run)
            case .aborted: stop = .aborted
            case .bytes, .endOfFile: stop = nil
            }
            return nil
        }
        return window[from..<from + count]
    }

    /// Whether four letters or digits, or four zero bytes, start at `offset` (`check_tag`); nil when
    /// they are not present. libavformat reads a short tag there as no frame.
    mutating func isFrameStart(at offset: Int64) -> Bool? {
        guard let name = bytes(at: offset, count: 4) else { return stop == nil ? false : nil }
        return name.allSatisfy { $0 == 0 } || name.allSatisfy { (0x41...0x5a).contains($0) || (0x30...0x39).contains($0) }
    }
}
