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

    /// `path` with a number before its extension, as aria2c and wget rename: `a/clip.mp4` → `a/clip.1.mp4`.
    package static func numbered(_ path: String, _ number: Int) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: "."), dot != slash else { return "\(path).\(number)" }
        return "\(path[..<dot]).\(number)\(path[dot...])"
    }

    /// The name for a stream's remuxed output when none was given: the playlist's name with `.mp4` for its
    /// extension, or its folder's name when the playlist has a generic one (`bbb/master.m3u8` → `bbb.mp4`).
    package static func forStream(url: String) -> String {
        let path = URLComponents(string: url)?.percentEncodedPath ?? ""
        let segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let generic: Set<String> = ["master", "index", "playlist", "manifest", "stream", "main", "chunklist", "prog_index", "media"]
        var stem = ""
        for segment in segments.reversed() {
            let name = segment.split(separator: ".", omittingEmptySubsequences: false).dropLast(segment.contains(".") ? 1 : 0)
                .joined(separator: ".")
            stem = name
            if !generic.contains(name.lowercased()) { break }
        }
        guard let name = sanitized(truncated(stem, toBytes: maxBytes - 4)) else { return "stream.mp4" }
        return name + ".mp4"
    }

    /// The file name a `Content-Disposition` value suggests (see `ContentDisposition`), not yet sanitized.
    package static func fromContentDisposition(_ value: String) -> String? {
        ContentDisposition(value).fileName
    }

    /// The longest name vfetch gives a file, in UTF-8 bytes: NAME_MAX (255) less the longest suffix of a file
    /// kept beside it (`NAME.part`, `NAME.vfetch`, and `NAME.vfetch.tmp` while the manifest is replaced).
    package static let maxBytes = 255 - SideFiles.longestSuffixBytes

    /// An extension this long at most (without its dot) is kept when a name is cut: `.mp4`, `.webm`, `.m2ts`.
    static let maxExtensionBytes = 10

    /// A name with no directory part, no control characters, no leading dot (a server or a URL never
    /// chooses a hidden file) and at most `maxBytes` long; nil when nothing is left.
    package static func sanitized(_ name: String) -> String? {
        let lastComponent = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let printable = String(lastComponent.unicodeScalars.filter { $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) })
        let visible = String(printable.drop { $0 == "." || $0 == " " || $0 == "\t" }).trimmingSpaces()
        if visible.isEmpty { return nil }
        return truncated(visible, toBytes: maxBytes)
    }

    /// `name` cut to at most `limit` UTF-8 bytes between two characters, keeping a short extension.
    static func truncated(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var stem = Substring(name)
        var suffix = ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.utf8[dot...].count <= maxExtensionBytes + 1 {
            stem = name[..<dot]
            suffix = String(name[dot...])
        }
        let budget = limit - suffix.utf8.count
        var kept = ""
        var bytes = 0
        for character in stem {
            bytes += character.utf8.count
            if bytes > budget { break }
            kept.append(character)
        }
        if kept.isEmpty {
            // One character longer than the whole budget (a letter under hundreds of combining marks): cut
            // between its scalars instead, still valid UTF-8.
            var scalars = String.UnicodeScalarView()
            bytes = 0
            for scalar in stem.unicodeScalars {
                bytes += UTF8.width(scalar)
                if bytes > budget { break }
                scalars.append(scalar)
            }
            kept = String(scalars)
        }
        return kept + suffix
    }

    private static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "m4a", "mov", "mkv", "webm", "ts", "m2ts", "avi", "flv", "mp3", "aac", "ogg", "ogv", "opus",
        "wav", "flac", "mpg", "mpeg", "3gp", "m3u8", "m3u", "mpd",
    ]

    /// True when the URL path names a media file by its extension.
    package static func hasMediaExtension(_ url: String) -> Bool {
        let path = URLComponents(string: url)?.path ?? url
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
        return mediaExtensions.contains(path[path.index(after: dot)...].lowercased())
    }
}
