/// How a client makes sure the `vfetch serve` that a cache directory's `server.json` names is that
/// directory's server before it sends the token: after a kill -9 the record stays, and whatever
/// listens on its port next would receive the token.
///
/// The client sends a fresh nonce; only a server that holds the token can answer the HMAC of the
/// nonce and its own port (the port, so another cache's server cannot be used as an oracle by a
/// relay on the recorded port).
package enum ServerProof {
    /// The answer to `nonce` of the server holding `token` and listening on `port`.
    package static func answer(token: String, nonce: String, port: Int) -> String {
        SHA256.hmacHex(key: Array(token.utf8), message: Array("vfetch serve \(port) \(nonce)".utf8))
    }

    /// A fresh nonce: 32 random hex digits.
    package static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// What a server accepts as a nonce: 32 to 128 hex digits.
    package static func isNonce(_ value: String) -> Bool {
        (32...128).contains(value.utf8.count) && value.allSatisfy(\.isHexDigit)
    }
}
