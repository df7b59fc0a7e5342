import Foundation

/// The character encoding of an XML document (an MPD), as XML 1.0 Appendix F finds it: a byte order
/// mark, else the first bytes of a UTF-16 `<?xml`, else the declaration's `encoding`, else UTF-8.
///
/// The parsers read UTF-8: a document in another encoding is converted once, and its declaration
/// (which would name the old encoding) dropped. ffmpeg (libxml2) reads these; packagers on Windows
/// still write `ISO-8859-1` and UTF-16 with a BOM.
enum XMLEncoding {
    /// The encodings read besides UTF-8, by the lowercased names a declaration gives them.
    private static let named: [String: String.Encoding] = [
        "iso-8859-1": .isoLatin1, "latin1": .isoLatin1, "iso_8859-1": .isoLatin1, "l1": .isoLatin1,
        "windows-1252": .windowsCP1252, "cp1252": .windowsCP1252, "us-ascii": .ascii, "ascii": .ascii,
        "iso-8859-2": .isoLatin2, "windows-1250": .windowsCP1250, "windows-1251": .windowsCP1251,
        "utf-16": .utf16, "utf-16le": .utf16LittleEndian, "utf-16be": .utf16BigEndian,
    ]

    /// The document in UTF-8, or nil when it is UTF-8 already (it is then used as it is, unchecked here).
    static func utf8(_ bytes: some Collection<UInt8>) throws(StreamParseError) -> [UInt8]? {
        let head = Array(bytes.prefix(1024))
        let encoding: String.Encoding
        var skip = 0
        switch head.prefix(4) {
        case let start where start.starts(with: [0xEF, 0xBB, 0xBF]): return nil
        case let start where start.starts(with: [0xFF, 0xFE]): (encoding, skip) = (.utf16LittleEndian, 2)
        case let start where start.starts(with: [0xFE, 0xFF]): (encoding, skip) = (.utf16BigEndian, 2)
        case [0x3C, 0x00, 0x3F, 0x00]: encoding = .utf16LittleEndian
        case [0x00, 0x3C, 0x00, 0x3F]: encoding = .utf16BigEndian
        default:
            guard let name = declaredEncoding(head), !["utf-8", "utf8"].contains(name) else { return nil }
            guard let known = named[name], ![.utf16, .utf16LittleEndian, .utf16BigEndian].contains(known) else {
                throw StreamParseError("the manifest is in \(name.prefix(40)), an encoding vfetch does not read")
            }
            encoding = known
        }
        guard var text = String(bytes: bytes.dropFirst(skip), encoding: encoding) else {
            throw StreamParseError("the manifest is not valid text in its encoding (\(encoding))")
        }
        // The declaration names the old encoding: without one, the text is read as what it now is, UTF-8.
        if text.hasPrefix("<?xml"), let end = text.range(of: "?>") { text.removeSubrange(..<end.upperBound) }
        return Array(text.utf8)
    }

    /// The start of a document as text, for a look at what it is (`StreamFormat.detect`).
    static func prefixText(_ bytes: some Collection<UInt8>) -> String {
        let head = Array(bytes.prefix(1024))
        let even = head.count & ~1  // a UTF-16 prefix cut between its two bytes
        if let converted = try? utf8(head.prefix(even)) { return String(decoding: converted, as: UTF8.self) }
        return String(decoding: head, as: UTF8.self)
    }

    /// The lowercased `encoding` of an ASCII `<?xml … ?>` declaration at the start.
    private static func declaredEncoding(_ head: [UInt8]) -> String? {
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let declaration = String(decoding: head[..<end], as: UTF8.self)
        guard let key = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[key.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote }).lowercased()
    }
}
