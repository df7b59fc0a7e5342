import Foundation

/// An HLS playlist (RFC 8216) read into the stream model: a master playlist becomes a catalog of
/// variants and renditions, a media playlist the list of its segments.
///
/// Parsing is a line-by-line state machine (`HLSMasterPlaylistReader`, `HLSMediaPlaylistReader`)
/// over hostile text: its size, its segment count and every number in it are bounded, unknown tags
/// are ignored (RFC 8216 6.3.1), and anything the model cannot represent faithfully is an error that
/// names its line.
package enum HLSPlaylist {
    /// What a playlist's text turned out to be.
    package enum Document: Sendable, Equatable {
        /// A master (multivariant) playlist: variants and renditions, each a media playlist still
        /// to fetch (`SegmentSource.playlist`).
        case master(StreamCatalog)
        /// A media playlist: its segments.
        case media(SegmentList)
    }

    /// The largest playlist read, in UTF-8 bytes: a day of two-second segments is about 5 MiB.
    package static let maximumSize = 16 << 20

    /// Reads a playlist's text.
    ///
    /// - Parameter url: the playlist's own URL, after redirects: every URI in it resolves against it.
    /// - Parameter budget: how many segments and URL bytes it may make (smaller in tests).
    package static func parse(_ text: String, url: URL, budget: SegmentBudget = SegmentBudget()) throws(StreamParseError)
        -> Document
    {
        guard text.utf8.count <= maximumSize else {
            throw StreamParseError("line 1: the playlist is larger than \(maximumSize >> 20) MiB")
        }
        var body = text[...]
        if body.first == "\u{FEFF}" { body = body.dropFirst() }
        let firstTag = HLSLines(body).first { if case .blank = $0.content { false } else { true } }
        guard let firstTag, case .tag(let name, _) = firstTag.content, name.hasPrefix("EXTM3U") else {
            let line = firstTag?.number ?? 1
            let hint = body.trimmingSpaces.hasPrefix("<") ? " (it looks like an HTML or XML page)" : ""
            throw failure(line, "not an HLS playlist: it does not start with #EXTM3U\(hint)")
        }

        switch try kind(of: body) {
        case .master:
            var reader = HLSMasterPlaylistReader(url: url, budget: budget)
            var lastLine = 1
            for line in HLSLines(body) {
                try reader.read(line)
                lastLine = line.number
            }
            return .master(try reader.finish(lastLine: lastLine))
        case .media:
            var reader = HLSMediaPlaylistReader(url: url, budget: budget)
            var lastLine = 1
            for line in HLSLines(body) {
                try reader.read(line)
                lastLine = line.number
            }
            return .media(try reader.finish(lastLine: lastLine))
        }
    }

    private enum Kind { case master, media }

    /// Tags that only a master playlist has, and tags that only a media playlist has.
    private static let masterTags: Set<Substring> = ["EXT-X-STREAM-INF", "EXT-X-I-FRAME-STREAM-INF", "EXT-X-MEDIA"]
    private static let mediaTags: Set<Substring> = [
        "EXTINF", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE", "EXT-X-ENDLIST", "EXT-X-PLAYLIST-TYPE",
        "EXT-X-BYTERANGE", "EXT-X-MAP",
    ]

    /// Whether the playlist is a master or a media playlist, from its tags; it may not be both
    /// (RFC 8216 4.1), nor neither.
    private static func kind(of body: Substring) throws(StreamParseError) -> Kind {
        var master: (line: Int, tag: Substring)?
        var media: (line: Int, tag: Substring)?
        var lastLine = 1
        for line in HLSLines(body) {
            lastLine = line.number
            guard case .tag(let name, _) = line.content else { continue }
            if master == nil, masterTags.contains(name) { master = (line.number, name) }
            if media == nil, mediaTags.contains(name) { media = (line.number, name) }
        }
        switch (master, media) {
        case (let master?, let media?):
            let (later, earlier) = master.line > media.line ? (master, media) : (media, master)
            let message = "#\(later.tag) in a playlist that has #\(earlier.tag) on line \(earlier.line)"
            throw failure(later.line, message + ": a playlist is either master or media")
        case (_?, nil): return .master
        case (nil, _?): return .media
        case (nil, nil): throw failure(lastLine, "the playlist has no segments and no variants")
        }
    }

    /// An error that names the playlist line it is about.
    /// `EXT-X-KEY` or `EXT-X-SESSION-KEY` (`tag`): how segments are encrypted.
    static func key(
        _ attributes: HLSAttributes, tag: String, against url: URL, line: Int, budget: inout SegmentBudget
    ) throws(StreamParseError) -> SegmentEncryption {
        guard let method = attributes["METHOD"] else { throw failure(line, "#\(tag) has no METHOD") }
        let format = attributes["KEYFORMAT"] ?? "identity"
        switch method {
        case "NONE":
            return .none
        case "AES-128" where format == "identity":
            guard let uri = attributes["URI"] else { throw failure(line, "#\(tag) METHOD=AES-128 has no URI") }
            var iv: [UInt8]?
            if let text = attributes["IV"] {
                guard let bytes = attributes.hexadecimal("IV", byteCount: 16) else {
                    throw failure(line, "#\(tag) IV \"\(text.prefix(40))\" is not a 128-bit hexadecimal number")
                }
                iv = bytes
            }
            return .aes128(key: try resolve(uri, against: url, line: line, budget: &budget), iv: iv)
        default:
            // SAMPLE-AES, or a DRM system's key (its URI is skd:// or data:, never resolved).
            return .unsupported(String(format == "identity" ? method : format))
        }
    }

    static func failure(_ line: Int, _ message: String) -> StreamParseError {
        StreamParseError("line \(line): \(message)")
    }

    /// The absolute http(s) URL a playlist URI names: relative ones resolve against the playlist's URL.
    /// It is no longer than the longest URL, and its bytes come out of the playlist's budget.
    static func resolve(_ uri: Substring, against base: URL, line: Int, budget: inout SegmentBudget)
        throws(StreamParseError) -> URL
    {
        guard uri.utf8.count <= SegmentBudget.maxURLBytes else {
            throw failure(line, "the URI \"\(uri.prefix(80))\" is longer than \(SegmentBudget.maxURLBytes) bytes")
        }
        guard let url = URL(string: String(uri), relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else {
            throw failure(line, "the URI \"\(uri.prefix(200))\" does not resolve to an http(s) URL")
        }
        let bytes = url.absoluteString.utf8.count
        guard bytes <= SegmentBudget.maxURLBytes else {
            throw failure(
                line, "the URI \"\(uri.prefix(80))\" resolves to a URL longer than \(SegmentBudget.maxURLBytes) bytes")
        }
        guard budget.takeURL(bytes: bytes) else {
            throw failure(line, "the playlist's URLs are more than \(budget.totalURLBytesText) in all")
        }
        return url
    }
}
