import Crypto

/// SHA-256, streaming, as lowercase hex: swift-crypto's (BoringSSL's, with the CPU's SHA instructions)
/// behind the small interface vfetch's manifests, cache IDs and `--checksum` use.
package struct SHA256: Sendable {
    private var hasher = Crypto.SHA256()

    package init() {}

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
    }

    /// The digest as lowercase hex.
    package func finalize() -> String {
        hexDigits(hasher.finalize())
    }

    package static func hex(_ bytes: [UInt8]) -> String {
        hexDigits(Crypto.SHA256.hash(data: bytes))
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`, as lowercase hex.
    package static func hmacHex(key: [UInt8], message: [UInt8]) -> String {
        hexDigits(HMAC<Crypto.SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}

/// Lowercase hex of a digest's bytes.
private func hexDigits(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
    return String(decoding: text, as: UTF8.self)
}
