import Foundation
import VFetchCore

/// What a stream download has kept so far, beside its parts, so that a run killed at any moment resumes
/// without fetching a kept segment again.
///
/// It is bound to the exact list of fetches (the `fingerprint` of every URL and byte range, in order):
/// when the playlist changed, or another variant was chosen, nothing is reused. Each kept fetch records its
/// size and a tag of its bytes, checked against the part on disk before it is trusted.
///
/// On disk it is a JSON header line, then one line per kept fetch (`fetch size tag`), appended as each
/// fetch is kept: a segment costs one short append, however long the stream. A torn last line (a crash
/// mid-append) is ignored.
package struct StreamManifest: Equatable, Sendable {
    package static let currentVersion = 1
    /// The largest manifest read back: a million segments fit.
    package static let maxEncodedSize = 64 << 20

    package struct Kept: Equatable, Sendable {
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

    private struct Header: Codable {
        var version: Int
        var source: String
        var fingerprint: String
        var fetches: Int
    }

    /// The whole manifest: the header line and a line per kept fetch.
    package func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let header = Header(version: version, source: source, fingerprint: fingerprint, fetches: fetches)
        var bytes = Array((try? encoder.encode(header)) ?? Data()) + [0x0A]
        for entry in kept { bytes += Self.line(entry) }
        return bytes
    }

    /// The line that records one kept fetch, appended to an encoded manifest.
    package static func line(_ entry: Kept) -> [UInt8] { Array("\(entry.fetch) \(entry.size) \(entry.tag)\n".utf8) }

    /// Reads a manifest; nil when its header is damaged, too large or of another version. Entry lines stop at
    /// the first that is torn or impossible (a fetch it cannot have, a negative size).
    package static func decode(_ bytes: [UInt8]) -> StreamManifest? {
        guard bytes.count <= maxEncodedSize, let newline = bytes.firstIndex(of: 0x0A),
            let header = try? JSONDecoder().decode(Header.self, from: Data(bytes[..<newline])),
            header.version == currentVersion, header.fetches >= 0
        else { return nil }
        var manifest = StreamManifest(source: header.source, fingerprint: header.fingerprint, fetches: header.fetches)
        // Only whole lines: the last may have been cut by a crash.
        let body = bytes[(newline + 1)...]
        let complete = body.lastIndex(of: 0x0A).map { body[..<$0] } ?? []
        for line in complete.split(separator: 0x0A) {
            let fields = line.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 3, let fetch = Int(fields[0]), let size = Int64(fields[1]), let tag = UInt32(fields[2]),
                (0..<header.fetches).contains(fetch), size >= 0
            else { break }
            manifest.kept.append(Kept(fetch: fetch, size: size, tag: tag))
        }
        return manifest
    }
}
