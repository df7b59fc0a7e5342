/// One line of an HLS playlist, numbered from 1, as the parsers see it: a tag, a URI, or nothing
/// (a blank line or a comment).
struct HLSLine {
    enum Content {
        /// `#EXT…`: the tag's name (`EXTINF`, `EXT-X-KEY`) and what follows its colon.
        case tag(name: Substring, value: Substring)
        case uri(Substring)
        case blank
    }

    var number: Int
    var content: Content

    init(number: Int, text: Substring) {
        self.number = number
        // Bytes, not Characters: every byte looked for is ASCII, and a 16 MiB playlist is read twice.
        let utf8 = text.utf8
        if utf8.starts(with: "#EXT".utf8) {
            let body = text[utf8.index(after: utf8.startIndex)...]
            let colon = body.utf8.firstIndex(of: UInt8(ascii: ":")) ?? body.endIndex
            let value = colon < body.endIndex ? body[body.utf8.index(after: colon)...] : body[colon...]
            content = .tag(name: body[..<colon], value: value.trimmingSpaces)
        } else if utf8.isEmpty || utf8.first == UInt8(ascii: "#") {
            content = .blank
        } else {
            content = .uri(text)
        }
    }
}

/// The lines of a playlist's text, read one at a time: a 16 MiB playlist is never copied into an
/// array of lines. A line ends at LF or CRLF (RFC 8216 4.1); spaces at either end are dropped.
struct HLSLines: Sequence, IteratorProtocol {
    private let text: Substring
    private var position: Substring.Index
    private var number = 0

    init(_ text: Substring) {
        self.text = text
        position = text.startIndex
    }

    mutating func next() -> HLSLine? {
        let utf8 = text.utf8
        guard position < utf8.endIndex else { return nil }
        // A line feed byte always starts a scalar of its own, so the slices end between scalars.
        let end = utf8[position...].firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
        var line = text[position..<end]
        if line.utf8.last == UInt8(ascii: "\r") { line = text[position..<utf8.index(before: end)] }
        position = end < utf8.endIndex ? utf8.index(after: end) : end
        number += 1
        return HLSLine(number: number, text: line.trimmingSpaces)
    }
}
