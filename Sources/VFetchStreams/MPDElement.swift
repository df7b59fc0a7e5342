import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// One element of an XML document, read into a small tree: its local name, its attributes, its
/// children in document order and its text.
///
/// Names drop their namespace prefix (`mpd:Period` is `Period`), since MPDs use the default
/// namespace `urn:mpeg:dash:schema:mpd:2011` or a prefix of their choosing; an unprefixed attribute
/// wins over a prefixed one of the same local name.
struct MPDElement: Sendable, Equatable {
    var name: String
    var attributes: [String: String]
    var children: [MPDElement]
    var text: String

    /// The largest document read: real MPDs, even SegmentList ones for long films, are far smaller.
    static let maxBytes = 16 << 20
    /// The most elements a document may hold, so that a document of `<a/>`s cannot cost gigabytes.
    static let maxElements = 1_000_000
    /// The deepest nesting read. An MPD's own elements go 7 deep (MPD, Period, AdaptationSet,
    /// Representation, SegmentTemplate, SegmentTimeline, S); the tree is read, rewritten and freed by
    /// recursion, which this keeps safe on a small stack (serve's threads overflowed at 10,000).
    static let maxDepth = 64

    init(name: String, attributes: [String: String] = [:], children: [MPDElement] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    subscript(attribute: String) -> String? { attributes[attribute] }

    /// The first child named `name`.
    func child(_ name: String) -> MPDElement? { children.first { $0.name == name } }

    /// The children named `name`, in order.
    func children(_ name: String) -> [MPDElement] { children.filter { $0.name == name } }

    /// The element without its children named `name`.
    func without(_ name: String) -> MPDElement {
        var copy = self
        copy.children.removeAll { $0.name == name }
        return copy
    }

    /// An attribute that is a whole number (`S@r`, which may be -1); nil when absent.
    func integer(_ attribute: String) throws(StreamParseError) -> Int64? {
        guard let text = attributes[attribute] else { return nil }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)) else {
            throw StreamParseError("\(name.prefix(40))@\(attribute) is \"\(text.prefix(40))\", not a whole number")
        }
        return value
    }

    /// An attribute that is a whole number not below 0 (`@timescale`, `S@t`, `@startNumber`); nil when absent.
    func unsigned(_ attribute: String) throws(StreamParseError) -> Int64? {
        guard let value = try integer(attribute) else { return nil }
        guard value >= 0 else { throw StreamParseError("\(name.prefix(40))@\(attribute) is \(value), below 0") }
        return value
    }

    /// Reads an XML document with Foundation's `XMLParser` (libxml2), external entities off. A
    /// document in another encoding than UTF-8 is converted to it first (`XMLEncoding`).
    ///
    /// A document type declaration is refused outright: an MPD has none, and it is where XXE and
    /// billion laughs live. (Foundation's XMLParser on Linux registers no entity declaration, so
    /// libxml2 expands none.)
    ///
    /// `textNodes` keeps mixed content in order (`a<br/>b`), each run of text a child named `#text`, as
    /// TTML's paragraphs need; an MPD has none that matters.
    static func parse(_ bytes: some Collection<UInt8>, textNodes: Bool = false) throws(StreamParseError) -> MPDElement {
        try checkSize(bytes.count)
        if let converted = try XMLEncoding.utf8(bytes) { return try parseUTF8(converted, textNodes: textNodes) }
        return try parseUTF8(bytes, textNodes: textNodes)
    }

    private static func checkSize(_ count: Int) throws(StreamParseError) {
        guard count <= maxBytes else {
            throw StreamParseError("the manifest is \(count) bytes, more than the \(maxBytes >> 20) MiB vfetch reads")
        }
    }

    private static func parseUTF8(_ bytes: some Collection<UInt8>, textNodes: Bool) throws(StreamParseError) -> MPDElement {
        try checkSize(bytes.count)
        // libxml2 in recovery mode (as Foundation runs it) hands on names with invalid UTF-8, and
        // Foundation traps on them.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw StreamParseError("the manifest is not UTF-8 text")
        }
        let data = Data(bytes)
        // A login or error page where the manifest should be: say so, not "not well-formed".
        let head = String(decoding: data.prefix(512), as: UTF8.self).lowercased()
        if head.contains("<html") || head.contains("<!doctype html") {
            throw StreamParseError("an HTML page, not a DASH manifest")
        }
        if data.range(of: Data("<!DOCTYPE".utf8)) != nil {
            throw StreamParseError("the manifest declares a document type (<!DOCTYPE), which vfetch refuses")
        }
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let builder = TreeBuilder(textNodes: textNodes)
        parser.delegate = builder
        let parsed = parser.parse()
        if let refusal = builder.refusal { throw StreamParseError(refusal) }
        guard parsed, let root = builder.root else {
            throw StreamParseError("not well-formed XML (line \(parser.lineNumber), column \(parser.columnNumber))")
        }
        return root
    }
}

/// Builds the tree from XMLParser's events. Used on one thread, for one parse.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    var root: MPDElement?
    /// Why the parse was stopped on purpose.
    var refusal: String?
    private var open: [MPDElement] = []
    private var count = 0
    private let textNodes: Bool

    init(textNodes: Bool) {
        self.textNodes = textNodes
    }

    private func refuse(_ parser: XMLParser, _ reason: String) {
        if refusal == nil { refusal = reason }
        parser.abortParsing()
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String]
    ) {
        count += 1
        guard count <= MPDElement.maxElements else {
            return refuse(parser, "the manifest has more than \(MPDElement.maxElements) elements")
        }
        guard open.count < MPDElement.maxDepth else {
            return refuse(parser, "the manifest nests elements more than \(MPDElement.maxDepth) deep")
        }
        var local: [String: String] = [:]
        for (name, value) in attributes where name != "xmlns" && !name.hasPrefix("xmlns:") {
            let localName = Self.localName(name)
            if localName == name || local[localName] == nil { local[localName] = value }
        }
        open.append(MPDElement(name: Self.localName(elementName), attributes: local))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard let element = open.popLast() else { return }
        if open.isEmpty {
            if root == nil { root = element }
        } else {
            open[open.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !open.isEmpty else { return }
        open[open.count - 1].text += string
        guard textNodes else { return }
        if open[open.count - 1].children.last?.name == "#text" {
            open[open.count - 1].children[open[open.count - 1].children.count - 1].text += string
        } else {
            open[open.count - 1].children.append(MPDElement(name: "#text", text: string))
        }
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        guard !open.isEmpty else { return }
        open[open.count - 1].text += String(decoding: block, as: UTF8.self)
    }

    // A manifest needs no document type: any entity in one is an attack (XXE, billion laughs).

    func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
        refuse(parser, "the manifest refers to the entity &\(name.prefix(40));, which vfetch does not expand")
        return nil
    }

    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        refuse(parser, "the manifest declares the entity \(name.prefix(40)), which vfetch does not expand")
    }

    func parser(
        _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
    ) {
        refuse(parser, "the manifest declares the external entity \(name.prefix(40)), which vfetch does not load")
    }

    func parser(
        _ parser: XMLParser, foundUnparsedEntityDeclarationWithName name: String, publicID: String?, systemID: String?,
        notationName: String?
    ) {
        refuse(parser, "the manifest declares the external entity \(name.prefix(40)), which vfetch does not load")
    }

    private static func localName(_ name: String) -> String {
        guard let colon = name.lastIndex(of: ":") else { return name }
        return String(name[name.index(after: colon)...])
    }
}
