/// AES-128 decryption in CBC mode (FIPS 197, NIST SP 800-38A), in pure Swift: what HLS
/// `METHOD=AES-128` segments need (RFC 8216 5.2), whole-segment CBC with PKCS7 padding.
///
/// Table-based (the "T-table" form of the inverse cipher), so a segment of megabytes decrypts in
/// milliseconds. Not constant-time: it decrypts media with a key the server handed out, where
/// timing reveals nothing worth hiding, and never answers anyone about padding.
///
/// Decrypt a whole segment with ``decrypt(_:key:iv:)``, or one as it arrives: ``decryptBlocks(_:)``
/// for every run of whole blocks, in order, then ``removePadding(_:)`` on the plaintext's end.
package struct AES128CBC: Sendable {
    /// Why bytes could not be decrypted.
    package enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The key is not 16 bytes.
        case keyLength(Int)
        /// The IV is not 16 bytes.
        case ivLength(Int)
        /// The ciphertext is not a whole number of 16-byte blocks (or, padded, is empty).
        case ciphertextLength(Int)
        /// The last block does not end in valid PKCS7 padding: a wrong key or IV, or damaged bytes.
        case badPadding

        package var description: String {
            switch self {
            case .keyLength(let count): "an AES-128 key is 16 bytes, this one is \(count)"
            case .ivLength(let count): "an AES-128 IV is 16 bytes, this one is \(count)"
            case .ciphertextLength(let count):
                "AES-128-CBC ciphertext is a whole number of 16-byte blocks, this is \(count) bytes"
            case .badPadding: "the decrypted bytes do not end in PKCS7 padding (wrong key or IV, or damaged bytes)"
            }
        }
    }

    /// The bytes in a block.
    package static let blockSize = 16

    /// The decryption key schedule: 11 round keys of 4 words, last round first, with
    /// InvMixColumns applied to the middle nine (the "equivalent inverse cipher", FIPS 197 5.3.5).
    private let roundKeys: [UInt32]
    /// The previous ciphertext block (the IV at first), which the next plaintext block is XORed with.
    private var chain: (UInt32, UInt32, UInt32, UInt32)

    /// Prepares to decrypt a message that starts with `iv` under `key` (16 bytes each).
    package init(key: [UInt8], iv: [UInt8]) throws(Failure) {
        guard key.count == Self.blockSize else { throw .keyLength(key.count) }
        guard iv.count == Self.blockSize else { throw .ivLength(iv.count) }
        roundKeys = Self.decryptionSchedule(key)
        chain = (Self.word(iv, 0), Self.word(iv, 4), Self.word(iv, 8), Self.word(iv, 12))
    }

    /// Decrypts a whole message padded with PKCS7, such as an HLS segment, and removes the padding.
    package static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(Failure) -> [UInt8] {
        guard !ciphertext.isEmpty else { throw .ciphertextLength(0) }
        var cipher = try AES128CBC(key: key, iv: iv)
        var plaintext = try cipher.decryptBlocks(ciphertext)
        try removePadding(&plaintext)
        return plaintext
    }

    /// Decrypts whole blocks, continuing the chain from the blocks decrypted before; removes no padding.
    package mutating func decryptBlocks(_ ciphertext: [UInt8]) throws(Failure) -> [UInt8] {
        guard ciphertext.count % Self.blockSize == 0 else { throw .ciphertextLength(ciphertext.count) }
        return [UInt8](unsafeUninitializedCapacity: ciphertext.count) { output, initialized in
            ciphertext.withUnsafeBytes { input in
                decrypt(input, into: UnsafeMutableRawBufferPointer(output))
            }
            initialized = ciphertext.count
        }
    }

    /// Removes PKCS7 padding from the end of a decrypted message: 1 to 16 bytes, each holding the count.
    package static func removePadding(_ plaintext: inout [UInt8]) throws(Failure) {
        guard let count = plaintext.last.map(Int.init), (1...blockSize).contains(count), count <= plaintext.count,
            plaintext[(plaintext.count - count)...].allSatisfy({ Int($0) == count })
        else { throw .badPadding }
        plaintext.removeLast(count)
    }

    /// The IV of an HLS segment whose `EXT-X-KEY` gives none: its media sequence number as a
    /// 16-byte big-endian integer (RFC 8216 5.2).
    package static func hlsIV(mediaSequence: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: mediaSequence >> (56 - 8 * UInt64($0))) }
    }

    // MARK: The cipher

    /// Decrypts `input` (whole blocks) into `output` (as long): each block through the inverse
    /// cipher, XORed with the previous ciphertext block.
    private mutating func decrypt(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        let tables = Self.tables
        var (c0, c1, c2, c3) = chain
        roundKeys.withUnsafeBufferPointer { keys in
            tables.withUnsafeBufferPointer { tables in
                let keys = keys.baseAddress!
                let td0 = tables.baseAddress!
                let td1 = td0 + 256
                let td2 = td0 + 512
                let td3 = td0 + 768
                let td4 = td0 + 1024  // the inverse S-box, one byte per word
                var offset = 0
                while offset < input.count {
                    let i0 = input.loadUnaligned(fromByteOffset: offset, as: UInt32.self).bigEndian
                    let i1 = input.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).bigEndian
                    let i2 = input.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self).bigEndian
                    let i3 = input.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self).bigEndian
                    var s0 = i0 ^ keys[0]
                    var s1 = i1 ^ keys[1]
                    var s2 = i2 ^ keys[2]
                    var s3 = i3 ^ keys[3]
                    var key = keys + 4
                    for _ in 1..<10 {
                        let t0 = td0[Int(s0 >> 24)] ^ td1[Int(s3 >> 16 & 0xFF)] ^ td2[Int(s2 >> 8 & 0xFF)] ^ td3[Int(s1 & 0xFF)] ^ key[0]
                        let t1 = td0[Int(s1 >> 24)] ^ td1[Int(s0 >> 16 & 0xFF)] ^ td2[Int(s3 >> 8 & 0xFF)] ^ td3[Int(s2 & 0xFF)] ^ key[1]
                        let t2 = td0[Int(s2 >> 24)] ^ td1[Int(s1 >> 16 & 0xFF)] ^ td2[Int(s0 >> 8 & 0xFF)] ^ td3[Int(s3 & 0xFF)] ^ key[2]
                        let t3 = td0[Int(s3 >> 24)] ^ td1[Int(s2 >> 16 & 0xFF)] ^ td2[Int(s1 >> 8 & 0xFF)] ^ td3[Int(s0 & 0xFF)] ^ key[3]
                        (s0, s1, s2, s3) = (t0, t1, t2, t3)
                        key += 4
                    }
                    // The last round has no InvMixColumns: the inverse S-box alone.
                    func last(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
                        td4[Int(a >> 24)] << 24 | td4[Int(b >> 16 & 0xFF)] << 16 | td4[Int(c >> 8 & 0xFF)] << 8
                            | td4[Int(d & 0xFF)]
                    }
                    let p0 = last(s0, s3, s2, s1) ^ key[0] ^ c0
                    let p1 = last(s1, s0, s3, s2) ^ key[1] ^ c1
                    let p2 = last(s2, s1, s0, s3) ^ key[2] ^ c2
                    let p3 = last(s3, s2, s1, s0) ^ key[3] ^ c3
                    output.storeBytes(of: p0.bigEndian, toByteOffset: offset, as: UInt32.self)
                    output.storeBytes(of: p1.bigEndian, toByteOffset: offset + 4, as: UInt32.self)
                    output.storeBytes(of: p2.bigEndian, toByteOffset: offset + 8, as: UInt32.self)
                    output.storeBytes(of: p3.bigEndian, toByteOffset: offset + 12, as: UInt32.self)
                    (c0, c1, c2, c3) = (i0, i1, i2, i3)
                    offset += Self.blockSize
                }
            }
        }
        chain = (c0, c1, c2, c3)
    }

    /// The key expansion (FIPS 197 5.2), then reordered for decryption with InvMixColumns applied
    /// to the round keys between the first and the last.
    private static func decryptionSchedule(_ key: [UInt8]) -> [UInt32] {
        let sbox = Self.sbox
        func subWord(_ word: UInt32) -> UInt32 {
            UInt32(sbox[Int(word >> 24)]) << 24 | UInt32(sbox[Int(word >> 16 & 0xFF)]) << 16
                | UInt32(sbox[Int(word >> 8 & 0xFF)]) << 8 | UInt32(sbox[Int(word & 0xFF)])
        }
        var words = (0..<4).map { word(key, 4 * $0) }
        var roundConstant: UInt8 = 1
        for index in 4..<44 {
            var temp = words[index - 1]
            if index % 4 == 0 {
                temp = subWord(temp << 8 | temp >> 24) ^ UInt32(roundConstant) << 24
                roundConstant = times2(roundConstant)
            }
            words.append(words[index - 4] ^ temp)
        }
        let tables = Self.tables
        var schedule: [UInt32] = []
        for round in (0...10).reversed() {
            for column in 0..<4 {
                let word = words[4 * round + column]
                guard round != 0, round != 10 else {
                    schedule.append(word)
                    continue
                }
                // Td0[S[x]] is InvMixColumns of x alone in the top row: the S-box undoes the table's inverse S-box.
                schedule.append(
                    tables[Int(sbox[Int(word >> 24)])] ^ tables[256 + Int(sbox[Int(word >> 16 & 0xFF)])]
                        ^ tables[512 + Int(sbox[Int(word >> 8 & 0xFF)])] ^ tables[768 + Int(sbox[Int(word & 0xFF)])])
            }
        }
        return schedule
    }

    /// Big-endian word at `offset` of `bytes`.
    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    // MARK: Tables

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
    private static func times2(_ value: UInt8) -> UInt8 {
        value << 1 ^ (value & 0x80 != 0 ? 0x1B : 0)
    }

    /// Multiplication in GF(2^8).
    private static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var (a, b, product): (UInt8, UInt8, UInt8) = (a, b, 0)
        while b != 0 {
            if b & 1 != 0 { product ^= a }
            a = times2(a)
            b >>= 1
        }
        return product
    }

    /// The S-box (FIPS 197 5.1.1): each byte's multiplicative inverse in GF(2^8), then the affine
    /// transformation. Computed rather than written out, so there is no table to mistype.
    private static let sbox: [UInt8] = (0..<256).map { value in
        let byte = UInt8(value)
        // The inverse is byte^254 (0 for 0): square-and-multiply over the exponent's bits.
        var inverse: UInt8 = 1
        var power = byte
        var exponent = 254
        while exponent > 0 {
            if exponent & 1 != 0 { inverse = multiply(inverse, power) }
            power = multiply(power, power)
            exponent >>= 1
        }
        if byte == 0 { inverse = 0 }
        func rotate(_ value: UInt8, _ count: UInt8) -> UInt8 { value << count | value >> (8 - count) }
        return inverse ^ rotate(inverse, 1) ^ rotate(inverse, 2) ^ rotate(inverse, 3) ^ rotate(inverse, 4) ^ 0x63
    }

    /// Td0…Td3 (256 words each): the inverse S-box followed by InvMixColumns for one byte in each
    /// row position; then Td4, the inverse S-box itself (256 words).
    private static let tables: [UInt32] = {
        var inverse = [UInt8](repeating: 0, count: 256)
        for (index, value) in sbox.enumerated() { inverse[Int(value)] = UInt8(index) }
        var tables = [UInt32](repeating: 0, count: 5 * 256)
        for index in 0..<256 {
            let s = inverse[index]
            let word =
                UInt32(multiply(s, 0x0E)) << 24 | UInt32(multiply(s, 0x09)) << 16 | UInt32(multiply(s, 0x0D)) << 8
                | UInt32(multiply(s, 0x0B))
            for row in 0..<4 {
                let shift = UInt32(8 * row)
                tables[256 * row + index] = row == 0 ? word : word >> shift | word << (32 - shift)
            }
            tables[1024 + index] = UInt32(s)
        }
        return tables
    }()
}
