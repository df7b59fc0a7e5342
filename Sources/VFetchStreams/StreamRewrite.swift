import Foundation

/// Rewrites an HLS playlist or a DASH manifest so that every URI in it points through a proxy
/// (`vfetch serve`): a player given the result asks the proxy for every variant, rendition, init
/// section, key and segment, and the proxy's cache answers.
///
/// Pure: it fetches nothing. `link` turns an absolute http(s) URL of the origin into the proxy's URL
/// for it. Everything but the URIs is kept byte for byte, so a player sees the origin's document.
package enum StreamRewrite {
    /// A rewritten document.
    package struct Document: Sendable, Equatable {
        package var bytes: [UInt8]
        package var format: StreamFormat
        /// A live HLS media playlist or a dynamic MPD: it changes, so it must never be cached.
        package var isLive: Bool
        /// An HLS media playlist's segments in play order, as absolute URLs of the origin (one per
        /// file: byte ranges of one file count once): what a player on it asks for next. Empty otherwise.
        package var segments: [String] = []
        /// An HLS master playlist's variants (its `EXT-X-STREAM-INF` URIs), absolute: a player plays
        /// one of them at a time. Empty otherwise.
        package var variants: [String] = []

        /// The Content-Type a player expects for it.
        package var contentType: String {
            switch format {
            case .hls: "application/vnd.apple.mpegurl"
            case .dash: "application/dash+xml"
            }
        }
    }

    /// The largest document rewritten: as large as the parsers read.
    package static let maximumSize = min(HLSPlaylist.maximumSize, MPDElement.maxBytes)

    /// Rewrites the document `bytes`, fetched from `url` (after redirects); `format` is what
    /// `StreamFormat.detect` made of it. `requested` is the URL asked for, when another: a document
    /// naming either as one of its own parts would send a player round in a circle, and is refused.
    /// `budget` is how many URL bytes it may link (smaller in tests). `linkKey`, when given, links an HLS
    /// key's URI (`EXT-X-KEY`, `EXT-X-SESSION-KEY`) in place of `link`: a proxy keeps secrets apart from media.
    package static func rewrite(
        _ bytes: [UInt8], format: StreamFormat, url: URL, requested: URL? = nil,
        budget: SegmentBudget = SegmentBudget(), link: @escaping (String) -> String, linkKey: ((String) -> String)? = nil
    ) throws(StreamParseError) -> Document {
        guard bytes.count <= maximumSize else {
            throw StreamParseError("the document is larger than \(maximumSize >> 20) MiB")
        }
        let own = Set([url.absoluteString, requested?.absoluteString].compactMap { $0 })
        switch format {
        case .hls:
            let (text, isLive, segments, variants) = try hls(
                String(decoding: bytes, as: UTF8.self), url: url, own: own, budget: budget, link: link,
                linkKey: linkKey ?? link)
            return Document(bytes: Array(text.utf8), format: .hls, isLive: isLive, segments: segments, variants: variants)
        case .dash:
            let (rewritten, isLive) = try dash(bytes, url: url, own: own, budget: budget, link: link)
            return Document(bytes: rewritten, format: .dash, isLive: isLive)
        }
    }

    // MARK: - HLS

    /// Every URI line and every `URI="…"` attribute resolved against `url` and linked; every other
    /// byte (tags, `EXT-X-BYTERANGE`, comments, line ends) kept.
    static func hls(
        _ text: String, url: URL, own: Set<String>, budget: SegmentBudget, link: (String) -> String,
        linkKey: (String) -> String
    ) throws(StreamParseError) -> (String, isLive: Bool, segments: [String], variants: [String]) {
        var body = text[...]
        if body.first == "\u{FEFF}" { body = body.dropFirst() }
        let first = body.drop { $0.isWhitespace }
        guard first.hasPrefix("#EXTM3U") else {
            let hint = first.hasPrefix("<") ? " (it looks like an HTML or XML page)" : ""
            throw StreamParseError("not an HLS playlist: it does not start with #EXTM3U\(hint)")
        }
        // A byte order mark is kept, and the first line read without it.
        var output = String(text[..<body.startIndex])
        output.reserveCapacity(text.utf8.count + text.utf8.count / 2)
        var isMedia = false
        var hasEnd = false
        var segments: [String] = []
        var number = 0
        // Whether a URI line now is what a tag before it describes; one that is not is stray text, which
        // players ignore and the parser does too (`HLSMediaPlaylistReader`): it is left out, not linked.
        var awaitsURI = false
        // Every URI is written out, the same one as often as it is listed: each counts.
        var budget = budget
        var rest = body
        while !rest.isEmpty {
            number += 1
            let end = rest.utf8.firstIndex(of: UInt8(ascii: "\n")).map { rest.utf8.index(after: $0) } ?? rest.endIndex
            let raw = rest[..<end]
            rest = rest[end...]
            // The line's own text, without its end (LF or CRLF), which is copied as it was.
            var content = raw
            while let last = content.utf8.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                content = content[..<content.utf8.index(before: content.endIndex)]
            }
            let ending = raw[content.endIndex...]
            let line = HLSLine(number: number, text: content.trimmingSpaces)
            switch line.content {
            case .blank:
                output += raw
            case .uri where !awaitsURI:
                continue
            case .uri(let uri):
                awaitsURI = false
                var target: String?
                output += try linked(uri, url: url, own: own, line: number, budget: &budget) { absolute in
                    target = absolute
                    return link(absolute)
                }
                if let target, target != segments.last { segments.append(target) }
                output += ending
            case .tag(let name, _):
                if ["EXTINF", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE"].contains(name) { isMedia = true }
                if name == "EXT-X-ENDLIST" { hasEnd = true }
                if Self.tagsBeforeAURI.contains(name) { awaitsURI = true }
                let isKey = name == "EXT-X-KEY" || name == "EXT-X-SESSION-KEY"
                output += try linkingAttributes(
                    content, url: url, own: own, line: number, budget: &budget, link: isKey ? linkKey : link)
                output += ending
            }
        }
        // A master playlist's URI lines are its variants, not segments.
        return (output, isMedia && !hasEnd, isMedia ? segments : [], isMedia ? [] : segments)
    }

    /// A tag line with the value of its `URI` attribute (the only attribute that names a resource in
    /// RFC 8216) linked; other tags unchanged.
    private static func linkingAttributes(
        _ line: Substring, url: URL, own: Set<String>, line number: Int, budget: inout SegmentBudget,
        link: (String) -> String
    ) throws(StreamParseError) -> String {
        let utf8 = line.utf8
        // Most tags (EXTINF, BYTERANGE) name no resource, and some are no attribute list at all.
        guard line.contains("URI="), let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { return String(line) }
        var position = utf8.index(after: colon)
        var output = String(line[..<position])
        // Walks the attribute list: NAME=VALUE pairs, a quoted VALUE may hold commas.
        while position < utf8.endIndex {
            guard let equals = utf8[position...].firstIndex(of: UInt8(ascii: "=")) else {
                output += line[position...]
                break
            }
            let name = line[position..<equals].trimmingSpaces
            output += line[position...equals]
            var valueStart = utf8.index(after: equals)
            if valueStart < utf8.endIndex, utf8[valueStart] == UInt8(ascii: "\"") {
                valueStart = utf8.index(after: valueStart)
                let close = utf8[valueStart...].firstIndex(of: UInt8(ascii: "\"")) ?? utf8.endIndex
                let value = line[valueStart..<close]
                output += "\""
                output +=
                    name == "URI"
                    ? try linked(value, url: url, own: own, line: number, budget: &budget, link: link) : String(value)
                position = close
            } else {
                position = valueStart
            }
            // Up to and including the next comma, as written.
            let next = utf8[position...].firstIndex(of: UInt8(ascii: ",")).map { utf8.index(after: $0) } ?? utf8.endIndex
            output += line[position..<next]
            position = next
        }
        return output
    }

    /// `uri` resolved against the playlist's URL and linked; a URI of another scheme (`skd:`, `data:`)
    /// is not the proxy's to fetch and stays.
    private static func linked(
        _ uri: Substring, url: URL, own: Set<String>, line: Int, budget: inout SegmentBudget, link: (String) -> String
    ) throws(StreamParseError) -> String {
        let trimmed = uri.trimmingSpaces
        if let scheme = schemeOf(trimmed), scheme != "http", scheme != "https" { return String(uri) }
        let absolute = try HLSPlaylist.resolve(trimmed, against: url, line: line, budget: &budget)
        guard !own.contains(absolute.absoluteString) else {
            throw HLSPlaylist.failure(line, "the playlist lists itself (\(trimmed.prefix(200)))")
        }
        return link(absolute.absoluteString)
    }

    /// The tags a URI line follows: a variant's, or a segment's own.
    private static let tagsBeforeAURI: Set<Substring> = [
        "EXTINF", "EXT-X-STREAM-INF", "EXT-X-BYTERANGE", "EXT-X-DISCONTINUITY", "EXT-X-GAP",
    ]

    /// The scheme of an absolute URI (RFC 3986 3.1), lowercased; nil for a relative reference.
    static func schemeOf(_ uri: Substring) -> String? {
        guard let colon = uri.firstIndex(of: ":") else { return nil }
        let scheme = uri[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        return scheme.lowercased()
    }
}
