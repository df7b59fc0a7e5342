import Testing

@testable import VFetchCore

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func knownVectors(input: String, digest: String) {
        #expect(SHA256.hex(Array(input.utf8)) == digest)
    }

    @Test func streamingInPiecesEqualsOneShot() {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var hasher = SHA256()
        var index = 0
        for size in [1, 63, 64, 65, 1000, 3] + Array(repeating: 997, count: 20) where index < bytes.count {
            let end = min(bytes.count, index + size)
            hasher.update(Array(bytes[index..<end]))
            index = end
        }
        hasher.update(Array(bytes[index...]))
        #expect(hasher.finalize() == SHA256.hex(bytes))
        // One million 'a': the FIPS 180-2 long vector.
        var million = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { million.update(chunk) }
        #expect(million.finalize() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

@Suite struct HMACTests {
    // RFC 4231, test cases 2 and 6.
    @Test func matchesTheRFCVectors() {
        #expect(
            SHA256.hmacHex(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(
            SHA256.hmacHex(
                key: [UInt8](repeating: 0xAA, count: 131),
                message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func aServersProofDependsOnTokenNonceAndPort() {
        let proof = ServerProof.answer(token: "t", nonce: "00", port: 1)
        #expect(proof != ServerProof.answer(token: "u", nonce: "00", port: 1))
        #expect(proof != ServerProof.answer(token: "t", nonce: "01", port: 1))
        #expect(proof != ServerProof.answer(token: "t", nonce: "00", port: 2))
        #expect(ServerProof.isNonce(ServerProof.nonce()) && !ServerProof.isNonce("xyz"))
    }
}
