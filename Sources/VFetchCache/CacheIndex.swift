import Foundation
import VFetchCore

/// The player cache's list of entries: which remote file each is and when it was last read.
///
/// An entry's bytes and validators live in its `ID.part` and `ID.vfetch` (the manifest `vfetch get`
/// writes); the index adds what the manifest does not know: the key and the last access, for LRU
/// eviction. IDs are hashes of keys, so no request can name a path.
package struct CacheIndex: Codable, Sendable, Equatable {
    package struct Entry: Codable, Sendable, Equatable {
        package var key: String
        package var url: String
        /// Seconds since 1970.
        package var lastAccess: Double

        package init(key: String, url: String, lastAccess: Double) {
            self.key = key
            self.url = url
            self.lastAccess = lastAccess
        }
    }

    package static let formatVersion = 1
    package var version = formatVersion
    /// By entry ID.
    package var entries: [String: Entry] = [:]

    package init() {}

    /// The entry ID for a key (the URL, or the `key=` a player gave): 32 hex digits of its SHA-256.
    package static func id(forKey key: String) -> String {
        String(SHA256.hex(Array(key.utf8)).prefix(32))
    }

    /// The key of `url`'s entry. A player's `key=` (for URLs whose query changes, such as signed
    /// links) is scoped to the URL's scheme, host, port and path: a key shared with another
    /// file's URL, or with another URL's own key, names another entry, so one URL can never fill
    /// the entry another URL reads.
    ///
    /// What a web page reads (`forPage`) has entries of their own, filled only from public addresses
    /// under the page's rules: a page never reads bytes a player fetched (perhaps from this machine or
    /// the local network), however fresh, nor what is left of them when its own fetch is refused.
    package static func key(url: String, playerKey: String?, forPage: Bool = false) -> String {
        let prefix = forPage ? pageKeyPrefix : ""
        guard let playerKey, !playerKey.isEmpty, var scope = URLComponents(string: url) else { return prefix + url }
        scope.user = nil
        scope.password = nil
        scope.query = nil
        scope.fragment = nil
        // A space never appears in a URL, so no URL is a scoped key.
        return prefix + "key \(playerKey) \(scope.string ?? url)"
    }

    // A space never appears in a URL, and a scoped key starts with "key ": no other key starts so.
    private static let pageKeyPrefix = "page "

    /// The key of an entry that holds a secret (an HLS stream's AES key, as a rewritten playlist marks
    /// it): its own entry, never listed by `vfetch cache ls` or `/status`.
    package static func secretKey(_ key: String) -> String { secretKeyPrefix + key }

    /// Whether `key` names a secret's entry.
    package static func isSecretKey(_ key: String) -> Bool { key.hasPrefix(secretKeyPrefix) }

    /// Whether entry `id`, read from `url`, is a secret's, when the saved index does not know it yet
    /// (a running serve saves it later): a key is linked without a player's `key=`, so its ID is one of two.
    package static func isSecretEntry(id: String, url: String) -> Bool {
        [false, true].contains { forPage in id == self.id(forKey: secretKey(key(url: url, playerKey: nil, forPage: forPage))) }
    }

    // No URL, page key or scoped key starts so.
    private static let secretKeyPrefix = "secret "

    /// The key of the kept copy of the playlist at `url` (see `KeptPlaylist`): a name of its own, so
    /// a URL read both as a file and as a playlist never shares an ID between the two.
    package static func playlistKey(url: String) -> String { playlistKeyPrefix + url }

    /// Whether `key` names a kept playlist rather than a file's entry.
    package static func isPlaylistKey(_ key: String) -> Bool { key.hasPrefix(playlistKeyPrefix) }

    // A space never appears in a URL, so no URL is a playlist's key.
    private static let playlistKeyPrefix = "playlist "

    /// Whether `name` could be an entry ID: guards every path built from one.
    package static func isID(_ name: some StringProtocol) -> Bool {
        name.count == 32 && name.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    /// Entries to evict, least recently used first, until the rest fit in `maxBytes`; entries in
    /// `inUse` (read or written now) are never chosen.
    package func evictions(sizes: [String: Int64], maxBytes: Int64, inUse: Set<String>) -> [String] {
        var total = sizes.values.reduce(0, +)
        var chosen: [String] = []
        let oldestFirst = sizes.keys.filter { !inUse.contains($0) }
            .sorted { (entries[$0]?.lastAccess ?? 0, $0) < (entries[$1]?.lastAccess ?? 0, $1) }
        // An empty entry frees nothing (and may be one a reader just asked for).
        for id in oldestFirst where total > maxBytes && sizes[id] ?? 0 > 0 {
            chosen.append(id)
            total -= sizes[id] ?? 0
        }
        return chosen
    }

    package func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return try encoder.encode(self)
    }

    package init(decoding data: Data) throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        self = try decoder.decode(Self.self, from: data)
    }
}
