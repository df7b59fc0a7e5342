import Foundation

/// Turns what the server and the URL say into a safe local file name.
package enum FileName {
    /// The name for a download when no output path was given: `Content-Disposition` first, then the URL's last path segment.
    package static func choose(url: String, suggested: String?) -> String {
        if let suggested, let safe = sanitized(suggested) { return safe }
        let path = URLComponents(string: url)?.percentEncodedPath ?? ""
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return sanitized(last.removingPercentEncoding ?? last) ?? "download"
    }

    /// The `filename*=` (RFC 5987) or `filename=` parameter of a `Content-Disposition` value.
    package static func fromContentDisposition(_ value: String) -> String? {
        var plain: String?
        for part in value.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            guard pair.count == 2 else { continue }
            switch pair[0].lowercased() {
            case "filename*":
                // charset'language'percent-encoded
                let pieces = pair[1].split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3, let decoded = String(pieces[2]).removingPercentEncoding { return decoded }
            case "filename":
                var name = pair[1]
                if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
                plain = name
            default: continue
            }
        }
        return plain
    }

    /// A name with no directory part, no control characters and not `.` or `..`; nil when nothing is left.
    package static func sanitized(_ name: String) -> String? {
        let lastComponent = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let cleaned = String(lastComponent.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F })
            .trimmingSpaces()
        if cleaned.isEmpty || cleaned == "." || cleaned == ".." { return nil }
        return String(cleaned.prefix(255))
    }

    private static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "m4a", "mov", "mkv", "webm", "ts", "m2ts", "avi", "flv", "mp3", "aac", "ogg", "ogv", "opus",
        "wav", "flac", "mpg", "mpeg", "3gp",
    ]

    /// True when the URL path names a media file by its extension.
    package static func hasMediaExtension(_ url: String) -> Bool {
        let path = URLComponents(string: url)?.path ?? url
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
        return mediaExtensions.contains(path[path.index(after: dot)...].lowercased())
    }
}
