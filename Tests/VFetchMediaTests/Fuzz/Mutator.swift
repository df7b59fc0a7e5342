import VFetchContainers
/// Where a valid input keeps the fields worth damaging: size fields and numbers.
struct Landmarks: Sendable {
    enum SizeField: Sendable {
        /// An ISO BMFF box's 32-bit size, at this offset; a 64-bit size may follow the type.
        case mp4Box(Int)
        /// An EBML element's variable-length size, at this offset.
        case ebmlElement(Int)
    }

    var sizes: [SizeField] = []
    /// Big-endian binary numbers: offset and width in bytes.
    var numbers: [(offset: Int, width: Int)] = []
    /// Runs of decimal digits, in text formats.
    var decimals: [Range<Int>] = []
}

/// A valid input and its landmarks, found once.
struct Seed: Sendable {
    var bytes: [UInt8]
    var landmarks: Landmarks
}

/// Makes damaged copies of valid inputs: bit flips, boundary bytes (0x00, 0xFF, 0x7F, 0x80), size
/// fields set to 0, 1, 7, 8, past the end or to the largest 32- and 64-bit values, numbers set to
/// their boundaries, format tokens, truncation, duplicated, spliced and removed chunks; and now
/// and then nothing but random bytes. Deterministic for a given generator.
struct Mutator: Sendable {
    /// Finds the landmarks of a valid input.
    var landmarks: @Sendable ([UInt8]) -> Landmarks
    /// Pieces of the format, inserted or written over bytes: quotes, separators, keywords.
    var tokens: [[UInt8]] = []
    /// The longest input of random bytes.
    var randomLength = 4096

    /// For binary formats without landmarks (or none known).
    static let bytes = Mutator(landmarks: { _ in Landmarks() })

    /// For text formats: digit runs are landmarks, and `tokens` join the ones every text format has.
    static func text(tokens: [String]) -> Mutator {
        Mutator(
            landmarks: Landmarks.decimals, tokens: (textTokens + tokens).map { Array($0.utf8) }, randomLength: 512)
    }

    private static let textTokens = [
        "\"", "\\", ";", ",", "=", "-", "/", "*", "%", "'", ":", " ", "\t", "\r\n", "\n", "\r", "\0", "%FF", "%C3%A9",
        "%2F", "%0A", "%", "..", "/../", "\u{FFFD}", "é", "😀", "e\u{301}\u{301}\u{301}", "\u{202E}", "\u{7F}", "\u{85}",
        String(repeating: "a", count: 300), String(repeating: "\u{301}", count: 200),
    ]

    /// Decimal numbers at the edges of the integer types and of JSON's exact range.
    static let decimalTokens = [
        "0", "1", "-1", "7", "8", "65536", "2147483647", "2147483648", "4294967295", "4294967296", "9007199254740992",
        "9007199254740993", "4611686018427387904", "9223372036854775807", "9223372036854775806",
        "9223372036854775808", "-9223372036854775808", "18446744073709551615", "99999999999999999999999", "1e308",
        "1e999", "0.5", "-0", "00", "",
    ]

    private enum Mutation: CaseIterable {
        // Keep the length: applied first, while the landmarks still point at their fields.
        case flipBit, boundaryByte, randomByte, sizeField, number
        // Change the length.
        case token, truncate, duplicate, splice, remove

        var keepsLength: Bool { [.flipBit, .boundaryByte, .randomByte, .sizeField, .number].contains(self) }
    }

    func mutate(_ corpus: [Seed], using random: inout SplitMix64) -> [UInt8] {
        if random.oneIn(16) {
            return (0..<random.below(randomLength + 1)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        let seed = random.pick(corpus)
        var bytes = seed.bytes
        let chosen = (0..<1 + random.below(4)).map { _ in random.pick(Mutation.allCases) }
        for mutation in chosen.filter(\.keepsLength) + chosen.filter({ !$0.keepsLength }) {
            apply(mutation, to: &bytes, seed: seed, corpus: corpus, random: &random)
        }
        return bytes
    }

    private func apply(
        _ mutation: Mutation, to bytes: inout [UInt8], seed: Seed, corpus: [Seed], random: inout SplitMix64
    ) {
        let landmarks = seed.landmarks
        switch mutation {
        case .flipBit:
            guard let at = offset(in: bytes, landmarks: landmarks, random: &random) else { return }
            bytes[at] ^= 1 << random.below(8)
        case .boundaryByte:
            guard let at = offset(in: bytes, landmarks: landmarks, random: &random) else { return }
            bytes[at] = random.pick([0x00, 0xFF, 0x7F, 0x80])
        case .randomByte:
            guard let at = offset(in: bytes, landmarks: landmarks, random: &random) else { return }
            bytes[at] = UInt8(truncatingIfNeeded: random.next())
        case .sizeField:
            guard !landmarks.sizes.isEmpty else {
                return apply(.boundaryByte, to: &bytes, seed: seed, corpus: corpus, random: &random)
            }
            switch random.pick(landmarks.sizes) {
            case .mp4Box(let at): Self.damageBoxSize(at: at, in: &bytes, random: &random)
            case .ebmlElement(let at): Self.damageElementSize(at: at, in: &bytes, random: &random)
            }
        case .number:
            if !landmarks.decimals.isEmpty {
                let run = random.pick(landmarks.decimals)
                guard run.upperBound <= bytes.count else { return }
                bytes.replaceSubrange(run, with: Array(random.pick(Self.decimalTokens).utf8))
            } else if !landmarks.numbers.isEmpty {
                let field = random.pick(landmarks.numbers)
                // Now and then a 64-bit value where a 32-bit one was (a version 1 box, say).
                let width = field.width == 4 && random.oneIn(4) ? 8 : field.width
                Self.write(Self.boundary(width: width, random: &random), width: width, at: field.offset, in: &bytes)
            } else {
                apply(.boundaryByte, to: &bytes, seed: seed, corpus: corpus, random: &random)
            }
        case .token:
            guard !tokens.isEmpty else {
                return apply(.duplicate, to: &bytes, seed: seed, corpus: corpus, random: &random)
            }
            let token = random.pick(tokens)
            let at = random.below(bytes.count + 1)
            if random.oneIn(2) {
                bytes.insert(contentsOf: token, at: at)
            } else {
                bytes.replaceSubrange(at..<min(bytes.count, at + token.count), with: token)
            }
        case .truncate:
            bytes.removeLast(bytes.count - random.below(bytes.count + 1))
        case .duplicate:
            let chunk = Self.chunk(of: bytes, random: &random)
            bytes.insert(contentsOf: bytes[chunk], at: random.below(bytes.count + 1))
        case .splice:
            let other = random.pick(corpus).bytes
            let chunk = Self.chunk(of: other, random: &random)
            let at = random.below(bytes.count + 1)
            if random.oneIn(2) {
                bytes.insert(contentsOf: other[chunk], at: at)
            } else {
                bytes.replaceSubrange(at..<min(bytes.count, at + chunk.count), with: other[chunk])
            }
        case .remove:
            bytes.removeSubrange(Self.chunk(of: bytes, random: &random))
        }
    }

    /// A byte to damage: anywhere, or close to a landmark (a header, most likely), or in the first 4 KiB.
    private func offset(in bytes: [UInt8], landmarks: Landmarks, random: inout SplitMix64) -> Int? {
        guard !bytes.isEmpty else { return nil }
        if random.oneIn(2) { return random.below(bytes.count) }
        let near: Int
        if !landmarks.sizes.isEmpty, random.oneIn(2) {
            switch random.pick(landmarks.sizes) {
            case .mp4Box(let at), .ebmlElement(let at): near = at
            }
        } else if !landmarks.numbers.isEmpty {
            near = random.pick(landmarks.numbers).offset
        } else {
            near = random.below(4096)
        }
        return min(bytes.count - 1, max(0, near + random.below(32) - 8))
    }

    /// A run of up to 1/8 of `bytes` (and at most 64 KiB), at least 1 byte unless `bytes` is empty.
    private static func chunk(of bytes: [UInt8], random: inout SplitMix64) -> Range<Int> {
        guard !bytes.isEmpty else { return 0..<0 }
        let length = 1 + random.below(min(64 << 10, max(1, bytes.count / 8)))
        let start = random.below(bytes.count - min(length, bytes.count) + 1)
        return start..<min(bytes.count, start + length)
    }

    /// A box size of 0 (to the end), 1 (a 64-bit size follows), less than a header, the exact room
    /// left and one more or less, or the largest values.
    private static func damageBoxSize(at offset: Int, in bytes: inout [UInt8], random: inout SplitMix64) {
        guard offset < bytes.count else { return }
        let room = UInt64(bytes.count - offset)
        let size = random.pick([
            0, 1, 1, 7, 8, 9, 15, 16, room, room + 1, room - 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF,
        ])
        write(size, width: 4, at: offset, in: &bytes)
        if size == 1 {
            let large = random.pick([
                0, 1, 15, 16, 17, room, room + 1, UInt64(Int64.max), UInt64(Int64.max) - 7, 1 << 63, .max,
                random.next(),
            ])
            write(large, width: 8, at: offset + 8, in: &bytes)
        }
    }

    /// An EBML size of 0 or 1, "unknown" in one, two or eight bytes, the largest known sizes, one
    /// no reader can take (a zero first byte), or the old size plus or minus one.
    private static func damageElementSize(at offset: Int, in bytes: inout [UInt8], random: inout SplitMix64) {
        guard offset < bytes.count else { return }
        let oldLength = min(bytes[offset].leadingZeroBitCount + 1, bytes.count - offset)
        var old = bytes[offset..<offset + oldLength]
        var replacement: [UInt8] = random.pick([
            [0x80], [0x81], [0xFF], [0x7F, 0xFF], [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE], [0x01, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x01, 0, 0, 0, 0, 0, 0, 0], [0x08, 0xFF, 0xFF, 0xFF, 0xFE], [0x00], [0x40, 0x00],
        ])
        if random.oneIn(4), let last = old.indices.last {
            old[last] = random.oneIn(2) ? old[last] &+ 1 : old[last] &- 1
            replacement = Array(old)
        }
        bytes.replaceSubrange(offset..<offset + oldLength, with: replacement)
    }

    /// 0, 1, all ones, the largest and smallest signed values, or random, in `width` bytes.
    private static func boundary(width: Int, random: inout SplitMix64) -> UInt64 {
        let bits = UInt64(width * 8)
        let ones: UInt64 = bits >= 64 ? .max : (1 << bits) - 1
        return random.pick([0, 1, ones, ones >> 1, (ones >> 1) + 1, ones - 1, random.next() & ones])
    }

    /// Writes `value` big-endian in `width` bytes at `offset`, as far as the bytes go.
    private static func write(_ value: UInt64, width: Int, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<width where offset + index >= 0 && offset + index < bytes.count {
            bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - index)))
        }
    }
}

extension Landmarks {
    /// Every run of decimal digits, with its minus sign.
    static func decimals(_ bytes: [UInt8]) -> Landmarks {
        var landmarks = Landmarks()
        var start: Int?
        for index in 0...bytes.count {
            let byte = index < bytes.count ? bytes[index] : 0
            let isDigit = (0x30...0x39).contains(byte) || (byte == 0x2D && start == nil)
            if isDigit, start == nil { start = index }
            if !isDigit, let first = start {
                if index - first > 1 || bytes[first] != 0x2D { landmarks.decimals.append(first..<index) }
                start = nil
            }
        }
        return landmarks
    }

    /// The boxes of an ISO BMFF file, read by hand (not by `MP4Boxes`, which is under test): every
    /// box's size field, and the 32-bit words of every small box that is not a container or `mdat`
    /// (sample tables, track fragment headers and runs, time scales, durations).
    static func mp4(_ bytes: [UInt8]) -> Landmarks {
        var landmarks = Landmarks()
        let containers: Set<String> = [
            "moov", "trak", "mdia", "minf", "stbl", "mvex", "moof", "traf", "mfra", "edts", "dinf", "udta",
        ]
        func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 << 8 | Int($1) } }
        func walk(_ span: Range<Int>, depth: Int) {
            var offset = span.lowerBound
            while offset + 8 <= span.upperBound, depth < 8 {
                var size = number(offset..<offset + 4)
                var header = 8
                if size == 1 {
                    guard offset + 16 <= span.upperBound, bytes[offset + 8] == 0 else { return }
                    size = number(offset + 8..<offset + 16)
                    header = 16
                }
                if size == 0 { size = span.upperBound - offset }
                guard size >= header, size <= span.upperBound - offset else { return }
                landmarks.sizes.append(.mp4Box(offset))
                let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
                let body = offset + header..<offset + size
                if containers.contains(type) {
                    walk(body, depth: depth + 1)
                } else if type != "mdat", body.count <= 64 << 10 {
                    for word in stride(from: body.lowerBound, to: body.upperBound - 3, by: 4) {
                        landmarks.numbers.append((word, 4))
                    }
                }
                offset += size
            }
        }
        walk(0..<bytes.count, depth: 0)
        return landmarks
    }

    /// The elements of a Matroska or WebM file, read by hand (not by `EBMLReader`, which is under
    /// test): every element's size field, and the value of every small element (positions,
    /// timestamps, track numbers and types, the timestamp scale).
    static func ebml(_ bytes: [UInt8]) -> Landmarks {
        var landmarks = Landmarks()
        let masters: Set<UInt64> = [
            0x1A45_DFA3, 0x1853_8067, 0x114D_9B74, 0x4DBB, 0x1549_A966, 0x1654_AE6B, 0xAE, 0xE0, 0xE1, 0x1C53_BB6B,
            0xBB, 0xB7, 0x1F43_B675, 0xA0, 0x1254_C367, 0x7373,
        ]
        func variableInteger(at offset: Int, keepMarker: Bool) -> (value: UInt64, length: Int)? {
            guard offset < bytes.count, bytes[offset] != 0 else { return nil }
            let length = bytes[offset].leadingZeroBitCount + 1
            guard offset + length <= bytes.count else { return nil }
            let first = keepMarker ? bytes[offset] : bytes[offset] & (0xFF >> length)
            return (bytes[offset + 1..<offset + length].reduce(UInt64(first)) { $0 << 8 | UInt64($1) }, length)
        }
        // A cluster's first elements only (its timestamp, a first block): thousands of blocks
        // would leave the header elements, which say the most, too rarely chosen.
        func walk(_ span: Range<Int>, depth: Int, children: Int = .max) {
            var offset = span.lowerBound
            for _ in 0..<children {
                guard offset < span.upperBound, depth < 8 else { return }
                guard let id = variableInteger(at: offset, keepMarker: true), id.length <= 4,
                    let size = variableInteger(at: offset + id.length, keepMarker: false)
                else { return }
                landmarks.sizes.append(.ebmlElement(offset + id.length))
                let data = offset + id.length + size.length
                let unknown = size.value == (1 << (7 * UInt64(size.length))) - 1
                let end = unknown ? span.upperBound : data + Int(clamping: size.value)
                guard end <= span.upperBound else { return }
                if masters.contains(id.value) {
                    walk(data..<end, depth: depth + 1, children: id.value == 0x1F43_B675 ? 4 : .max)
                } else if (1...8).contains(end - data) {
                    landmarks.numbers.append((data, end - data))
                }
                offset = end
            }
        }
        walk(0..<bytes.count, depth: 0)
        return landmarks
    }
}
