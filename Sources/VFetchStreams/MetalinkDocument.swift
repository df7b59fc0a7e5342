import Foundation
import VFetchCore

/// A Metalink v4 file (RFC 5854) of one file: its name, size, whole-file SHA-256 and URLs, best first.
/// Read with the MPD reader's XML (`MPDElement`: bounded, no document type, no external entities);
/// elements and attributes vfetch does not use (`metaurl`, `pieces`, `signature`, other hashes) are skipped.
package struct MetalinkDocument: Sendable, Equatable {
    /// A safe file name (`FileName.sanitized`: no directory part, no leading dot).
    package var name: String
    package var size: Int64?
    /// Lowercase hex, when the file names a `sha-256` hash.
    package var sha256: String?
    /// http and https URLs, by `priority` (1 first; none last), in document order among equals.
    package var urls: [String]

    /// The largest Metalink file read: one of a file with a thousand mirrors is some hundred KiB.
    package static let maxBytes = 1 << 20
    /// URLs kept at most: more mirrors than connections would never be asked.
    package static let maxURLs = 64

    /// Whether an answer is a Metalink document: its type says so (`application/metalink4+xml`), or its path
    /// ends in `.meta4` or `.metalink` and its type says nothing else (none, XML, octet-stream), as
    /// `StreamFormat.detect` takes a playlist's name: a server that says `video/mp4` is believed.
    package static func isMetalink(contentType: String?, path: String) -> Bool {
        let type = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if type == "application/metalink4+xml" { return true }
        let vague = ["", "text/plain", "text/xml", "application/xml", "application/octet-stream", "binary/octet-stream"]
        guard vague.contains(type) || type == "application/metalink+xml" else { return false }
        let name = path.lowercased()
        return name.hasSuffix(".meta4") || name.hasSuffix(".metalink")
    }

    package static func parse(_ bytes: [UInt8]) throws(StreamParseError) -> MetalinkDocument {
        guard bytes.count <= maxBytes else {
            throw StreamParseError("the Metalink file is \(bytes.count) bytes, more than the \(maxBytes >> 20) MiB vfetch reads")
        }
        let root: MPDElement
        do { root = try MPDElement.parse(bytes) } catch { throw StreamParseError("not a Metalink file: \(error.description)") }
        guard root.name == "metalink" else { throw StreamParseError("not a Metalink v4 file (its root is <\(root.name.prefix(40))>)") }
        let files = root.children("file")
        guard files.count == 1, let file = files.first else {
            throw StreamParseError("the Metalink file describes \(files.count) files; vfetch reads one")
        }
        guard let name = file["name"].flatMap(FileName.sanitized) else { throw StreamParseError("the Metalink <file> has no usable name") }
        var size: Int64?
        if let text = file.child("size")?.text.trimmingCharacters(in: .whitespacesAndNewlines) {
            guard let value = Int64(text), value >= 0 else { throw StreamParseError("the Metalink <size> is not a length") }
            size = value
        }
        var sha256: String?
        if let hash = file.children("hash").first(where: { $0["type"]?.lowercased() == "sha-256" }) {
            let hex = hash.text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else {
                throw StreamParseError("the Metalink sha-256 hash is not 64 hex digits")
            }
            sha256 = hex
        }
        let ranked = file.children("url").enumerated().compactMap { index, element -> (Int, Int, String)? in
            let url = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
            let scheme = url.prefix { $0 != ":" }.lowercased()
            guard scheme == "http" || scheme == "https", url.count <= 8192 else { return nil }
            let priority = element["priority"].flatMap { Int($0) }.map { min(max($0, 1), 999_999) } ?? 1_000_000
            return (priority, index, url)
        }
        let urls = ranked.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2).prefix(maxURLs)
        guard !urls.isEmpty else { throw StreamParseError("the Metalink file lists no http or https URL") }
        return MetalinkDocument(name: name, size: size, sha256: sha256, urls: Array(urls))
    }
}
