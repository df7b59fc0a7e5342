import Foundation

extension StreamRewrite {
    /// The MPD with every BaseURL, segment URL, template, initialization, index and `Location` made
    /// an absolute link. The document is read with the MPD parser's rules first (no DOCTYPE, no
    /// entities, bounded), then only the values that change are replaced in the original bytes.
    ///
    /// Templates keep their `$…$` identifiers as literal text, so the player still fills them in:
    /// each identifier stands in for a plain word while the template is resolved and linked, then
    /// goes back where the word landed.
    static func dash(
        _ bytes: [UInt8], url: URL, own: Set<String>, budget: SegmentBudget, link: @escaping (String) -> String
    ) throws(StreamParseError) -> ([UInt8], isLive: Bool) {
        let bytes = try XMLEncoding.utf8(bytes) ?? bytes  // edited as the UTF-8 text the parser reads
        let root = try MPDElement.parse(bytes)
        guard root.name == "MPD" else {
            throw StreamParseError("the document is <\(root.name.prefix(40))>, not a DASH manifest (<MPD>)")
        }
        var planner = DASHLinkPlanner(own: own, budget: budget, link: link)
        try planner.visit(root, base: url, inherited: DASHLinkPlanner.Inherited())
        let tags = try XMLStartTags(bytes)
        guard tags.count == planner.elementCount else {
            throw StreamParseError("the manifest's elements could not be matched to its text")
        }
        var edits: [(Range<Int>, [UInt8])] = []
        for edit in planner.edits {
            let tag = tags.tags[edit.element]
            switch edit.target {
            case .attribute(let name):
                guard let range = tags.attributeValue(name, in: tag) else { continue }
                edits.append((range, Array(xmlEscaped(edit.value).utf8)))
            case .text:
                guard let range = tags.text(after: tag) else { continue }
                edits.append((range, Array(xmlEscaped(edit.value).utf8)))
            case .addAttributes:
                let end = tag.range.upperBound - (tag.selfClosing ? 2 : 1)
                edits.append((end..<end, Array(edit.value.utf8)))
            case .firstChild(let name):
                let qualified = tags.name(of: tag)
                let prefix = qualified.contains(":") ? String(qualified.prefix { $0 != ":" }) + ":" : ""
                let child = "<\(prefix)\(name)\(edit.value)/>"
                if tag.selfClosing {
                    let end = tag.range.upperBound - 2
                    edits.append((end..<tag.range.upperBound, Array(">\(child)</\(qualified)>".utf8)))
                } else {
                    edits.append((tag.range.upperBound..<tag.range.upperBound, Array(child.utf8)))
                }
            }
        }
        // Stable, so edits at one position keep the planner's order.
        edits = edits.enumerated().sorted { ($0.element.0.lowerBound, $0.offset) < ($1.element.0.lowerBound, $1.offset) }.map(\.element)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 2)
        var position = 0
        for (range, replacement) in edits where range.lowerBound >= position || (range.isEmpty && range.lowerBound == position) {
            output += bytes[position..<range.lowerBound]
            output += replacement
            position = range.upperBound
        }
        output += bytes[position...]
        let isLive = root["type"]?.trimmingCharacters(in: .whitespaces) == "dynamic"
        return (output, isLive)
    }

    /// Text escaped for an XML attribute value or element content.
    static func xmlEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

/// Walks an MPD's tree in document order and decides what each URL-bearing value becomes.
private struct DASHLinkPlanner {
    enum Target {
        case attribute(String)
        case text
        /// Attributes (` name="value"…`, escaped) added to the element's start tag.
        case addAttributes
        /// A first child element of this local name (with the element's own prefix) holding the
        /// attributes `value`.
        case firstChild(String)
    }

    struct Edit {
        /// The element's number in document order (its start tag's).
        var element: Int
        var target: Target
        var value: String
    }

    let own: Set<String>
    let link: (String) -> String
    private(set) var edits: [Edit] = []
    private(set) var elementCount = 0
    private var budget: SegmentBudget
    /// Attributes for the SegmentTemplate of the level just visited, added when it is reached.
    private var pendingTemplateAttributes: (level: Int, attributes: String)?

    init(own: Set<String>, budget: SegmentBudget, link: @escaping (String) -> String) {
        self.own = own
        self.budget = budget
        self.link = link
    }

    static let levels: Set<String> = ["MPD", "Period", "AdaptationSet", "Representation"]
    static let segmentInfo: Set<String> = ["SegmentTemplate", "SegmentList", "SegmentBase"]

    /// What the levels above lend a level: the SegmentTemplate URL attributes (as written, and the
    /// BaseURL they were linked against) and the other segment information that names URLs.
    struct Inherited {
        var template: [String: (value: String, base: URL)] = [:]
        /// SegmentList or SegmentBase elements with URLs of their own.
        var others: [String] = []
    }

    static let templateURLs = ["media", "initialization", "index", "bitstreamSwitching"]

    /// Visits `element` (numbered now) and its children; `base` is the BaseURL its parent gives it.
    ///
    /// A template of a level above was linked against that level's BaseURL. A level with a BaseURL of
    /// its own would resolve it elsewhere, so it gets the template's URLs linked against its own
    /// BaseURL: added to its own SegmentTemplate, or in one added for them (players merge
    /// SegmentTemplate attributes down the levels).
    mutating func visit(_ element: MPDElement, base: URL, inherited above: Inherited, parent: Int = -1)
        throws(StreamParseError)
    {
        let number = elementCount
        elementCount += 1
        let isLevel = Self.levels.contains(element.name)
        var ownBase = base
        var inherited = above
        if isLevel, let first = element.child("BaseURL") {
            ownBase = try resolve(first.text, against: base)
            let overridden = Set(element.children.map(\.name)).intersection(Self.segmentInfo)
            if let kind = inherited.others.first(where: { !overridden.contains($0) }) {
                // Rare (a list of segment URLs shared by Representations in different places): refused, not served wrong.
                throw StreamParseError(
                    "a \(kind) above an element with its own BaseURL (<\(element.name.prefix(40))>) is not rewritten yet")
            }
            let own = element.child("SegmentTemplate")
            var added = ""
            for name in Self.templateURLs {
                guard own?[name] == nil, let lent = inherited.template[name], lent.base != ownBase else { continue }
                added += " \(name)=\"\(StreamRewrite.xmlEscaped(try linkTemplate(lent.value, base: ownBase)))\""
                inherited.template[name] = (lent.value, ownBase)
            }
            if !added.isEmpty {
                if own != nil {
                    pendingTemplateAttributes = (number, added)
                } else {
                    edits.append(Edit(element: number, target: .firstChild("SegmentTemplate"), value: added))
                }
            }
        }
        switch element.name {
        case "BaseURL":
            let target = try resolve(element.text, against: base)
            edits.append(Edit(element: number, target: .text, value: link(target.absoluteString)))
        case "Location", "PatchLocation":
            // Where the MPD is fetched again: its own URL, as often as not.
            let target = try resolve(element.text, against: base, mayBeOwn: true)
            edits.append(Edit(element: number, target: .text, value: link(target.absoluteString)))
        case "SegmentTemplate":
            for name in Self.templateURLs {
                guard let value = element[name] else { continue }
                edits.append(Edit(element: number, target: .attribute(name), value: try linkTemplate(value, base: base)))
            }
            if let (level, added) = pendingTemplateAttributes, level == parent {
                edits.append(Edit(element: number, target: .addAttributes, value: added))
                pendingTemplateAttributes = nil
            }
        case "SegmentURL":
            for name in ["media", "index"] {
                guard let value = element[name] else { continue }
                edits.append(Edit(element: number, target: .attribute(name), value: try linkURL(value, base: base)))
            }
        case "Initialization", "RepresentationIndex", "BitstreamSwitching":
            if let value = element["sourceURL"] {
                edits.append(Edit(element: number, target: .attribute("sourceURL"), value: try linkURL(value, base: base)))
            }
        default: break
        }
        if isLevel {
            if let template = element.child("SegmentTemplate") {
                for name in Self.templateURLs {
                    if let value = template[name] { inherited.template[name] = (value, ownBase) }
                }
            }
            for child in element.children where ["SegmentList", "SegmentBase"].contains(child.name) && Self.holdsURLs(child) {
                inherited.others.append(child.name)
            }
        }
        // Children of a level resolve against its own BaseURL; BaseURLs themselves against the parent's.
        for child in element.children {
            let childBase = child.name == "BaseURL" ? base : (isLevel ? ownBase : base)
            try visit(child, base: childBase, inherited: isLevel ? inherited : above, parent: number)
        }
    }

    /// Whether a segment information element names a URL of its own (else it uses the BaseURL).
    private static func holdsURLs(_ element: MPDElement) -> Bool {
        let attributes = ["media", "initialization", "index", "bitstreamSwitching", "sourceURL"]
        if attributes.contains(where: { element[$0] != nil }) { return true }
        return element.children.contains(where: holdsURLs)
    }

    private mutating func resolve(_ text: String, against base: URL, mayBeOwn: Bool = false) throws(StreamParseError)
        -> URL
    {
        let url = try DASHLocation.resolve(text, against: base, budget: &budget)
        guard mayBeOwn || !own.contains(url.absoluteString) || text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        else {
            throw StreamParseError("the manifest names itself as a part (\(text.prefix(200)))")
        }
        return url
    }

    private mutating func linkURL(_ text: String, base: URL) throws(StreamParseError) -> String {
        link(try resolve(text, against: base).absoluteString)
    }

    /// A SegmentTemplate URL linked with its `$…$` identifiers kept as they were written.
    private mutating func linkTemplate(_ template: String, base: URL) throws(StreamParseError) -> String {
        let marker = "vfetchfield"
        guard !template.lowercased().contains(marker) else {
            throw StreamParseError("the template \"\(template.prefix(80))\" holds vfetch's own marker")
        }
        let pieces = template.split(separator: "$", omittingEmptySubsequences: false)
        guard pieces.count % 2 == 1 else { throw StreamParseError("the template \"\(template.prefix(80))\" has an unpaired $") }
        var marked = ""
        var fields: [String] = []
        for (index, piece) in pieces.enumerated() {
            if index % 2 == 0 {
                marked += piece
            } else {
                // Letters and digits only: unchanged by URL resolution and percent-encoding alike.
                marked += "\(marker)\(fields.count)x"
                fields.append("$\(piece)$")
            }
        }
        var linked = try linkURL(marked, base: base)
        for (index, field) in fields.enumerated() {
            let word = "\(marker)\(index)x"
            guard linked.contains(word) else {
                throw StreamParseError("the template \"\(template.prefix(80))\" could not be linked with its identifiers")
            }
            linked = linked.replacingOccurrences(of: word, with: field)
        }
        return linked
    }
}

/// The start tags of an XML document, in document order, with their byte ranges; enough to find an
/// attribute's value or an element's text in the original bytes. Meant for a document the XML parser
/// has accepted (no DOCTYPE): comments, CDATA sections and processing instructions are skipped.
struct XMLStartTags {
    struct Tag {
        /// From `<` to `>` included.
        var range: Range<Int>
        var selfClosing: Bool
    }

    let bytes: [UInt8]
    private(set) var tags: [Tag] = []
    var count: Int { tags.count }

    init(_ bytes: [UInt8]) throws(StreamParseError) {
        self.bytes = bytes
        var index = 0
        let count = bytes.count
        while index < count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if Self.starts(bytes, at: index, with: "<!--") {
                index = try Self.end(of: "-->", in: bytes, from: index + 4)
            } else if Self.starts(bytes, at: index, with: "<![CDATA[") {
                index = try Self.end(of: "]]>", in: bytes, from: index + 9)
            } else if Self.starts(bytes, at: index, with: "<?") {
                index = try Self.end(of: "?>", in: bytes, from: index + 2)
            } else if Self.starts(bytes, at: index, with: "<!") || Self.starts(bytes, at: index, with: "</") {
                index = try Self.end(of: ">", in: bytes, from: index + 2)
            } else {
                // A start tag: its end is the first `>` outside a quoted attribute value.
                var position = index + 1
                var quote: UInt8?
                while position < count {
                    let byte = bytes[position]
                    if let open = quote {
                        if byte == open { quote = nil }
                    } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                        quote = byte
                    } else if byte == UInt8(ascii: ">") {
                        break
                    }
                    position += 1
                }
                guard position < count else { throw StreamParseError("the manifest ends inside a tag") }
                tags.append(Tag(range: index..<position + 1, selfClosing: bytes[position - 1] == UInt8(ascii: "/")))
                index = position + 1
            }
        }
    }

    private static func starts(_ bytes: [UInt8], at index: Int, with text: String) -> Bool {
        let pattern = Array(text.utf8)
        return index + pattern.count <= bytes.count && bytes[index..<index + pattern.count].elementsEqual(pattern)
    }

    /// The index just past `terminator`, searching from `start`.
    private static func end(of terminator: String, in bytes: [UInt8], from start: Int) throws(StreamParseError) -> Int {
        let pattern = Array(terminator.utf8)
        var index = start
        while index + pattern.count <= bytes.count {
            if bytes[index..<index + pattern.count].elementsEqual(pattern) { return index + pattern.count }
            index += 1
        }
        throw StreamParseError("the manifest ends inside a comment, CDATA section or declaration")
    }

    /// The element's qualified name, as written (`mpd:Representation`).
    func name(of tag: Tag) -> String {
        var end = tag.range.lowerBound + 1
        while end < tag.range.upperBound, !Self.isSpace(bytes[end]), bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: ">") {
            end += 1
        }
        return String(decoding: bytes[tag.range.lowerBound + 1..<end], as: UTF8.self)
    }

    /// Where the value of the attribute `name` (its local name; an unprefixed one wins, as the parser
    /// reads it) lies in `tag`, between its quotes.
    func attributeValue(_ name: String, in tag: Tag) -> Range<Int>? {
        var position = tag.range.lowerBound + 1
        let end = tag.range.upperBound - 1
        // Past the element's name.
        while position < end, !Self.isSpace(bytes[position]) { position += 1 }
        var prefixed: Range<Int>?
        while position < end {
            while position < end, Self.isSpace(bytes[position]) { position += 1 }
            let nameStart = position
            while position < end, bytes[position] != UInt8(ascii: "="), !Self.isSpace(bytes[position]) { position += 1 }
            let attribute = String(decoding: bytes[nameStart..<position], as: UTF8.self)
            while position < end, Self.isSpace(bytes[position]) { position += 1 }
            guard position < end, bytes[position] == UInt8(ascii: "=") else { return prefixed }
            position += 1
            while position < end, Self.isSpace(bytes[position]) { position += 1 }
            guard position < end, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
                return prefixed
            }
            let quote = bytes[position]
            let valueStart = position + 1
            position = valueStart
            while position < end, bytes[position] != quote { position += 1 }
            let value = valueStart..<position
            position += 1
            if attribute == name { return value }
            if prefixed == nil, attribute.hasSuffix(":" + name), !attribute.hasPrefix("xmlns") { prefixed = value }
        }
        return prefixed
    }

    /// The element's text: from the end of its start tag to the next tag (an element whose text is
    /// replaced, BaseURL or Location, holds no elements). nil for an empty element.
    func text(after tag: Tag) -> Range<Int>? {
        guard !tag.selfClosing else { return nil }
        let start = tag.range.upperBound
        var position = start
        while position < bytes.count {
            if bytes[position] == UInt8(ascii: "<") {
                // A CDATA section is part of the text.
                if bytes[position...].starts(with: Array("<![CDATA[".utf8)),
                    let close = try? Self.end(of: "]]>", in: bytes, from: position + 9)
                {
                    position = close
                    continue
                }
                return start..<position
            }
            position += 1
        }
        return nil
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }
}
