import Foundation
import Testing
import VFetchCore

/// AES-128-CBC decryption against the published known answers and against `openssl enc`.
@Suite struct AES128CBCTests {
    /// FIPS 197 Appendix C.1: one block through the inverse cipher (CBC with a zero IV XORs nothing).
    @Test func fips197ExampleBlock() throws {
        var cipher = try AES128CBC(key: hex("000102030405060708090a0b0c0d0e0f"), iv: [UInt8](repeating: 0, count: 16))
        let plain = try cipher.decryptBlocks(hex("69c4e0d86a7b0430d8cdb78070b4c55a"))
        #expect(plain == hex("00112233445566778899aabbccddeeff"))
    }

    /// FIPS 197 Appendix B: the cipher example with the key of Appendix A.1.
    @Test func fips197AppendixB() throws {
        var cipher = try AES128CBC(key: hex("2b7e151628aed2a6abf7158809cf4f3c"), iv: [UInt8](repeating: 0, count: 16))
        #expect(try cipher.decryptBlocks(hex("3925841d02dc09fbdc118597196a0b32")) == hex("3243f6a8885a308d313198a2e0370734"))
    }

    static let sp800Key = hex("2b7e151628aed2a6abf7158809cf4f3c")
    static let sp800IV = hex("000102030405060708090a0b0c0d0e0f")
    static let sp800Cipher = hex(
        "7649abac8119b246cee98e9b12e9197d" + "5086cb9b507219ee95db113a917678b2" + "73bed6b8e3c1743b7116e69e22229516"
            + "3ff1caa1681fac09120eca307586e1a7")
    static let sp800Plain = hex(
        "6bc1bee22e409f96e93d7e117393172a" + "ae2d8a571e03ac9c9eb76fac45af8e51" + "30c81c46a35ce411e5fbc1191a0a52ef"
            + "f69f2445df4f9b17ad2b417be66c3710")

    /// NIST SP 800-38A F.2.2 (CBC-AES128.Decrypt), whole and block by block: the chain carries over.
    @Test(arguments: [[64], [16, 48], [16, 16, 16, 16], [32, 0, 32]])
    func sp800_38aCBCDecrypt(pieces: [Int]) throws {
        var cipher = try AES128CBC(key: Self.sp800Key, iv: Self.sp800IV)
        var plain: [UInt8] = []
        var offset = 0
        for count in pieces {
            plain += try cipher.decryptBlocks(Array(Self.sp800Cipher[offset..<offset + count]))
            offset += count
        }
        #expect(plain == Self.sp800Plain)
    }

    /// Messages of every length around a block boundary, encrypted by `openssl enc` (PKCS7 padding).
    @Test(
        .enabled(if: opensslIsInstalled, "openssl encrypts the messages, and it is not installed"),
        arguments: [0, 1, 15, 16, 17, 31, 32, 1000, 188 * 1000 + 5])
    func decryptsWhatOpenSSLEncrypts(length: Int) throws {
        var generator = SplitMix(seed: UInt64(length))  // seeded, so a failure repeats
        let key = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let iv = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let plain = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let cipher = try openssl(["enc", "-aes-128-cbc", "-K", hexString(key), "-iv", hexString(iv)], input: plain)
        #expect(cipher.count == (length / 16 + 1) * 16)
        #expect(try AES128CBC.decrypt(cipher, key: key, iv: iv) == plain)
    }

    /// A message of several steps, decrypted as the stream parts are (step by step, the chain carried
    /// from one step to the next, the padding removed from the last), against `openssl enc`.
    @Test(
        .enabled(if: opensslIsInstalled, "openssl encrypts the messages, and it is not installed"),
        arguments: [1 << 20, 4096 + 48])
    func decryptsStepByStep(step: Int) throws {
        var generator = SplitMix(seed: UInt64(step))
        let key = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let iv = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let plain = (0..<(2 << 20) + 5).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        let cipher = try openssl(["enc", "-aes-128-cbc", "-K", hexString(key), "-iv", hexString(iv)], input: plain)
        var decryptor = try AES128CBC(key: key, iv: iv)
        var decrypted: [UInt8] = []
        for start in stride(from: 0, to: cipher.count, by: step) {
            decrypted += try decryptor.decryptBlocks(Array(cipher[start..<min(start + step, cipher.count)]))
        }
        try AES128CBC.removePadding(&decrypted)
        #expect(decrypted == plain)
    }

    @Test(.enabled(if: opensslIsInstalled, "openssl encrypts the messages, and it is not installed"))
    func badLengthsAndPaddingAreNamedErrors() throws {
        let key = [UInt8](repeating: 7, count: 16)
        let iv = [UInt8](repeating: 9, count: 16)
        #expect(throws: AES128CBC.Failure.keyLength(15)) { try AES128CBC(key: Array(key.prefix(15)), iv: iv) }
        #expect(throws: AES128CBC.Failure.ivLength(17)) { try AES128CBC(key: key, iv: iv + [0]) }
        #expect(throws: AES128CBC.Failure.ciphertextLength(20)) {
            try AES128CBC.decrypt([UInt8](repeating: 1, count: 20), key: key, iv: iv)
        }
        #expect(throws: AES128CBC.Failure.ciphertextLength(0)) { try AES128CBC.decrypt([], key: key, iv: iv) }

        let sealed = try openssl(["enc", "-aes-128-cbc", "-K", hexString(key), "-iv", hexString(iv)], input: Array("segment".utf8))
        #expect(try AES128CBC.decrypt(sealed, key: key, iv: iv) == Array("segment".utf8))
        // The wrong key: the last block's padding does not check out.
        #expect(throws: AES128CBC.Failure.badPadding) {
            try AES128CBC.decrypt(sealed, key: [UInt8](repeating: 8, count: 16), iv: iv)
        }
        // Blocks encrypted without padding, each with a bad ending: 0, more than a block, bytes that disagree.
        for ending: [UInt8] in [[0], [17], [2, 3], [16]] {
            let plain = [UInt8](repeating: 5, count: 16 - ending.count) + ending
            let raw = try openssl(["enc", "-aes-128-cbc", "-nopad", "-K", hexString(key), "-iv", hexString(iv)], input: plain)
            #expect(throws: AES128CBC.Failure.badPadding, "ending \(ending)") { try AES128CBC.decrypt(raw, key: key, iv: iv) }
        }
        // A whole block of padding leaves nothing.
        let padding = try openssl(
            ["enc", "-aes-128-cbc", "-nopad", "-K", hexString(key), "-iv", hexString(iv)],
            input: [UInt8](repeating: 16, count: 16))
        #expect(try AES128CBC.decrypt(padding, key: key, iv: iv) == [])
        #expect(AES128CBC.Failure.badPadding.description.contains("PKCS7"))
        #expect(AES128CBC.Failure.keyLength(15).description.contains("15"))
    }

    /// RFC 8216 5.2: the media sequence number as a 128-bit big-endian integer.
    @Test func hlsDefaultIV() {
        #expect(AES128CBC.hlsIV(mediaSequence: 0) == [UInt8](repeating: 0, count: 16))
        #expect(AES128CBC.hlsIV(mediaSequence: 7) == [UInt8](repeating: 0, count: 15) + [7])
        #expect(AES128CBC.hlsIV(mediaSequence: 0x0102_0304_0506_0708) == [UInt8](repeating: 0, count: 8) + [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(AES128CBC.hlsIV(mediaSequence: .max) == [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8))
    }

    /// A segment encrypted with its default IV by `openssl`, as a server that gives no `IV` does.
    @Test(.enabled(if: opensslIsInstalled, "openssl encrypts the segment, and it is not installed"))
    func decryptsWithTheDefaultIV() throws {
        let key = hex("0123456789abcdef0123456789abcdef")
        let plain = (0..<(188 * 50)).map { UInt8(truncatingIfNeeded: $0 % 188 == 0 ? 0x47 : $0 * 31) }
        let iv = AES128CBC.hlsIV(mediaSequence: 1234)
        let cipher = try openssl(["enc", "-aes-128-cbc", "-K", hexString(key), "-iv", "000000000000000000000000000004d2"], input: plain)
        #expect(try AES128CBC.decrypt(cipher, key: key, iv: iv) == plain)
    }
}

/// Whether `openssl`, which encrypts the messages, is on `PATH`.
private let opensslIsInstalled = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
    FileManager.default.isExecutableFile(atPath: $0 + "/openssl")
}

/// Bytes from hex digits (test vectors).
private func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

private func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

/// Runs `openssl` with `arguments` on `input` through temporary files; answers its output.
private func openssl(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vfetch-aes-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inputFile = directory.appendingPathComponent("in")
    let outputFile = directory.appendingPathComponent("out")
    try Data(input).write(to: inputFile)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments + ["-in", inputFile.path, "-out", outputFile.path]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    return [UInt8](try Data(contentsOf: outputFile))
}
