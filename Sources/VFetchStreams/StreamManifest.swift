import Foundation
import VFetchCore

/// What a stream download has kept so far, written beside its parts at every checkpoint so that a run
/// killed at any moment resumes without fetching a kept segment again.
///
/// It is bound to the exact list of fetches (the `fingerprint` of every URL and byte range, in order):
/// when the playlist changed, or another variant was chosen, nothing is reused. Each kept fetch records its
/// size and a tag of its bytes, checked against the part on disk before it is trusted.
package struct StreamManifest: Codable, Equatable, Sendable {
    package static let currentVersion = 1
    /// The largest manifest read back: a million segments fit.
    package static let maxEncodedSize = 64 << 20

    package struct Kept: Codable, Equatable, Sendable {
        package var fetch: Int
        package var size: Int64
        package var tag: UInt32

        package init(fetch: Int, size: Int64, tag: UInt32) {
            self.fetch = fetch
            self.size = size
            self.tag = tag
        }
    }

    package var version: Int
    /// The URL the user asked for.
    package var source: String
    /// SHA-256 over the fetches' URLs and ranges, in order (`fingerprint(of:)`).
    package var fingerprint: String
    package var fetches: Int
    package var kept: [Kept]

    package init(source: String, fingerprint: String, fetches: Int, kept: [Kept] = []) {
        version = Self.currentVersion
        self.source = source
        self.fingerprint = fingerprint
        self.fetches = fetches
        self.kept = kept
    }

    /// Identifies a list of fetches: two lists with the same fingerprint name the same bytes in the same order.
    package static func fingerprint(of resources: [MediaResource]) -> String {
        var hash = SHA256()
        for resource in resources {
            let range = resource.byteRange.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "all"
            hash.update(Array("\(resource.url.absoluteString) \(range)\n".utf8))
        }
        return hash.finalize()
    }

    package func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    /// Reads a manifest; nil when it is damaged, too large, of another version, or lists fetches it cannot have.
    package static func decode(_ bytes: [UInt8]) -> StreamManifest? {
        guard bytes.count <= maxEncodedSize, let manifest = try? JSONDecoder().decode(Self.self, from: Data(bytes)),
            manifest.version == currentVersion, manifest.fetches >= 0,
            manifest.kept.allSatisfy({ (0..<manifest.fetches).contains($0.fetch) && $0.size >= 0 })
        else { return nil }
        return manifest
    }
}
