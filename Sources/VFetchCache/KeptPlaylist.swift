import Foundation
import VFetchCore

/// The last good body of a VOD playlist or a static DASH manifest, as the player cache keeps it so a
/// stream plays again with its origin out of reach: the origin's bytes (rewritten when answered, for
/// the Host the player used), where they came from, and the validators that make the next fetch a
/// conditional one.
///
/// On disk: one line of JSON (everything but the body), a line feed, then the body's bytes as the
/// origin sent them.
package struct KeptPlaylist: Sendable, Equatable {
    package struct Facts: Codable, Sendable, Equatable {
        package var version = 1
        /// The URL a player asked for.
        package var url: String
        /// Where the body came from after redirects: its URIs resolve against this.
        package var finalURL: String
        package var contentType: String?
        package var etag: String?
        package var lastModified: String?
        package var length: Int
    }

    package var facts: Facts
    package var body: [UInt8]

    package init(
        url: String, finalURL: String, contentType: String?, etag: String?, lastModified: String?, body: [UInt8]
    ) {
        facts = Facts(
            url: url, finalURL: finalURL, contentType: contentType, etag: etag, lastModified: lastModified,
            length: body.count)
        self.body = body
    }

    package func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Strings and numbers only: encoding cannot fail.
        let line = (try? encoder.encode(facts)).map(Array.init) ?? []
        return line + [10] + body
    }

    /// Reads a kept playlist; nil for one that is damaged or torn (its length must match), or of another version.
    package init?(decoding bytes: [UInt8]) {
        guard let newline = bytes.firstIndex(of: 10) else { return nil }
        guard let facts = try? JSONDecoder().decode(Facts.self, from: Data(bytes[..<newline])), facts.version == 1,
            bytes.count - newline - 1 == facts.length
        else { return nil }
        self.facts = facts
        body = Array(bytes[(newline + 1)...])
    }
}
