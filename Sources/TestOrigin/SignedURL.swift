/// The expiring tokens of the `/signed/P` → `/s/<token>/P` route, like a CDN's signed URLs.
///
/// A token is `<expiry in ms since 1970, hex>-<signature>`; the signature binds expiry and path
/// to the origin's random seed, so an edited token is refused rather than extended.
enum SignedURL {
    /// A token for `path` valid until `expiry` (seconds since 1970).
    static func token(path: String, expiry: Double, seed: UInt64) -> String {
        let millis = UInt64(max(0, expiry * 1000).rounded(.up))
        return String(millis, radix: 16) + "-" + signature(path: path, millis: millis, seed: seed)
    }

    /// Whether `token` is genuine for `path` and not yet expired at `now`.
    static func isValid(_ token: String, path: String, now: Double, seed: UInt64) -> Bool {
        let parts = token.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let millis = UInt64(parts[0], radix: 16),
            parts[1] == signature(path: path, millis: millis, seed: seed)
        else { return false }
        return now * 1000 < Double(millis)
    }

    private static func signature(path: String, millis: UInt64, seed: UInt64) -> String {
        // FNV-1a over the path, then mixed with the expiry and the seed.
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in path.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hex(mix(hash ^ mix(millis ^ seed)))
    }
}
