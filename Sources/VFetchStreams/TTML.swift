/// TTML subtitles (IMSC, EBU-TT-D), as DASH serves them beside the media: read into cues, so they
/// are saved as WebVTT like HLS subtitles are (muxed into MKV and MP4, beside a `.ts`). Timing and
/// text are kept; styling, regions and a span's own timing are not.
package enum TTML {
    /// Whether `bytes` look like a TTML document: XML whose first element is `tt`.
    package static func isTTML<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        let head = String(decoding: bytes.prefix(2048), as: UTF8.self)
        guard let start = head.firstIndex(where: { !$0.isWhitespace && $0 != "\u{FEFF}" }), head[start] == "<" else { return false }
        var rest = head[start...]
        // The XML declaration and comments come before the root.
        while rest.hasPrefix("<?") || rest.hasPrefix("<!--") {
            guard let end = rest.range(of: rest.hasPrefix("<?") ? "?>" : "-->") else { return false }
            rest = rest[end.upperBound...].drop { $0.isWhitespace }
        }
        let name = rest.dropFirst().prefix { !$0.isWhitespace && $0 != ">" && $0 != "/" }
        return name == "tt" || name.hasSuffix(":tt")
    }

    /// The document's paragraphs (`p`) as cues, their times on the media's clock: a container's
    /// (`body`, `div`) `begin` adds to the times inside it.
    package static func cues(of bytes: [UInt8]) throws(StreamParseError) -> [WebVTT.Cue] {
        let root: MPDElement
        do { root = try MPDElement.parse(bytes, textNodes: true) } catch {
            throw StreamParseError("not a TTML document: \(error.description)")
        }
        guard root.name == "tt" else { throw StreamParseError("not a TTML document: its root is <\(root.name.prefix(40))>") }
        let rates = Rates(frame: root["frameRate"].flatMap(Double.init), tick: root["tickRate"].flatMap(Double.init))
        var cues: [WebVTT.Cue] = []
        func walk(_ element: MPDElement, offset: Double) throws(StreamParseError) {
            let begin = try element["begin"].map { (text) throws(StreamParseError) in try rates.seconds(text) } ?? 0
            if element.name == "p" {
                let start = offset + begin
                let end: Double
                if let text = element["end"] {
                    end = offset + (try rates.seconds(text))
                } else if let text = element["dur"] {
                    end = start + (try rates.seconds(text))
                } else {
                    return  // a paragraph with no end shows until the document's: too vague to keep
                }
                let text = lines(of: element).map(escaped).joined(separator: "\n")
                if end > start, !text.isEmpty { cues.append(WebVTT.Cue(start: start, end: end, text: text)) }
                return
            }
            for child in element.children where child.name != "#text" && child.name != "head" {
                try walk(child, offset: offset + begin)
            }
        }
        try walk(root, offset: 0)
        return cues
    }

    /// A paragraph's text: runs of white space as one space, `br` as a line break, spans as their text.
    private static func lines(of paragraph: MPDElement) -> [String] {
        var text = ""
        func collect(_ element: MPDElement) {
            for child in element.children {
                switch child.name {
                case "#text": text += child.text
                case "br": text += "\u{2028}"  // a line separator no text node holds as white space
                default: collect(child)
                }
            }
        }
        collect(paragraph)
        return text.split(separator: "\u{2028}").map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }.filter {
            !$0.isEmpty
        }
    }

    /// Text as WebVTT cue text writes it: `&`, `<` and `>` as references.
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }

    /// `ttp:frameRate` and `ttp:tickRate`, for times in frames and ticks.
    private struct Rates {
        var frame: Double?
        var tick: Double?

        /// A TTML time expression: `00:00:01.500`, `00:00:01:12` (frames), or `1.5s`, `1500ms`, `2m`, `1h`,
        /// `30f`, `10000t`.
        func seconds(_ text: String) throws(StreamParseError) -> Double {
            let text = text.trimmingCharacters(in: .whitespaces)
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            var value: Double?
            if parts.count == 3 || parts.count == 4 {
                let numbers = parts.map { Double($0) }
                if numbers.allSatisfy({ $0 != nil && $0! >= 0 }), let hours = numbers[0], let minutes = numbers[1], let seconds = numbers[2]
                {
                    value = hours * 3600 + minutes * 60 + seconds + (parts.count == 4 ? (numbers[3] ?? 0) / (frame ?? 30) : 0)
                }
            } else {
                let units: [(String, Double)] = [
                    ("ms", 0.001), ("h", 3600), ("m", 60), ("s", 1), ("f", 1 / (frame ?? 30)), ("t", 1 / (tick ?? 1)),
                ]
                if let (unit, scale) = units.first(where: { text.hasSuffix($0.0) }), let number = Double(text.dropLast(unit.count)),
                    number >= 0
                {
                    value = number * scale
                }
            }
            guard let value, value.isFinite, value < 1e9 else {
                throw StreamParseError("TTML time \"\(text.prefix(40))\" is not a time expression")
            }
            return value
        }
    }
}
