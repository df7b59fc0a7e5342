import Crypto
import CryptoExtras
import Foundation

/// AES-128 decryption in CBC mode, what HLS `METHOD=AES-128` segments need (RFC 8216 5.2): whole-segment
/// CBC with PKCS7 padding. The cipher is swift-crypto's (BoringSSL's, with the CPU's AES instructions).
///
/// Decrypt a whole segment with ``decrypt(_:key:iv:)``, or one a step at a time: ``decryptInPlace(_:)``
/// (or ``decryptBlocks(_:)``) for every run of whole blocks, in order, then ``paddingLength(_:)`` (or
/// ``removePadding(_:)``) on the plaintext's end.
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

    private let key: SymmetricKey
    /// The previous ciphertext block (the IV at first), which the next plaintext block is XORed with:
    /// each run of blocks is decrypted as a message of its own that starts with it.
    private var chain: AES._CBC.IV

    /// Prepares to decrypt a message that starts with `iv` under `key` (16 bytes each).
    package init(key: [UInt8], iv: [UInt8]) throws(Failure) {
        guard key.count == Self.blockSize else { throw .keyLength(key.count) }
        guard iv.count == Self.blockSize, let chain = try? AES._CBC.IV(ivBytes: iv) else { throw .ivLength(iv.count) }
        self.key = SymmetricKey(data: key)
        self.chain = chain
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
        var blocks = ciphertext
        let decrypted = blocks.withUnsafeMutableBytes { blocks in Result { () throws(Failure) in try decryptInPlace(blocks) } }
        try decrypted.get()
        return blocks
    }

    /// Decrypts whole blocks where they are, continuing the chain from the blocks decrypted before;
    /// removes no padding. What a segment on disk is decrypted with, a buffer at a time: no copy of
    /// ours, so a step allocates only the library's two buffers.
    package mutating func decryptInPlace(_ blocks: UnsafeMutableRawBufferPointer) throws(Failure) {
        guard blocks.count % Self.blockSize == 0 else { throw .ciphertextLength(blocks.count) }
        guard !blocks.isEmpty else { return }
        do {
            let next = try AES._CBC.IV(ivBytes: UnsafeRawBufferPointer(rebasing: blocks[(blocks.count - Self.blockSize)...]))
            let plaintext = try AES._CBC.decrypt(UnsafeRawBufferPointer(blocks), using: key, iv: chain, noPadding: true)
            guard plaintext.copyBytes(to: blocks) == blocks.count else { throw Failure.ciphertextLength(blocks.count) }
            chain = next
        } catch {
            // The key, the IV and the length were checked before: the library refuses nothing else.
            throw .ciphertextLength(blocks.count)
        }
    }

    /// Removes PKCS7 padding from the end of a decrypted message: 1 to 16 bytes, each holding the count.
    package static func removePadding(_ plaintext: inout [UInt8]) throws(Failure) {
        let count = plaintext.withUnsafeBytes { plaintext in Result { () throws(Failure) in try paddingLength(plaintext) } }
        plaintext.removeLast(try count.get())
    }

    /// How many bytes of PKCS7 padding end a decrypted message.
    package static func paddingLength(_ plaintext: UnsafeRawBufferPointer) throws(Failure) -> Int {
        guard let count = plaintext.last.map(Int.init), (1...blockSize).contains(count), count <= plaintext.count,
            plaintext[(plaintext.count - count)...].allSatisfy({ Int($0) == count })
        else { throw .badPadding }
        return count
    }

    /// The IV of an HLS segment whose `EXT-X-KEY` gives none: its media sequence number as a
    /// 16-byte big-endian integer (RFC 8216 5.2).
    package static func hlsIV(mediaSequence: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: mediaSequence >> (56 - 8 * UInt64($0))) }
    }
}
