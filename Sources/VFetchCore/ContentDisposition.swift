/// A `Content-Disposition` header value, parsed as RFC 6266 says: a disposition type, then `;`-separated
/// parameters whose values are tokens or quoted strings (with backslash escapes, so a quoted `;` is part of
/// the value), and `filename*` as an RFC 8187 extended value, `charset'language'percent-encoded`.
///
/// Lenient where servers are sloppy, as browsers are: a missing disposition type, spaces around `=`, and
/// an unquoted value with spaces, which runs to the next `;`.
package struct ContentDisposition: Sendable, Equatable {
    /// `attachment`, `inline`, …, lowercased; empty when the header starts with a parameter.
    package var type: String
    /// Parameter values by lowercased name, quoted strings unescaped; the first of a repeated name wins.
    package var parameters: [String: String]

    package init(_ value: String) {
        type = ""
        parameters = [:]
        for (index, item) in Self.items(of: value).enumerated() {
            guard let equals = item.firstIndex(of: "=") else {
                if index == 0 { type = String(item).trimmingSpaces().lowercased() }
                continue
            }
            let name = String(item[..<equals]).trimmingSpaces().lowercased()
            let raw = String(item[item.index(after: equals)...]).trimmingSpaces()
            guard !name.isEmpty, parameters[name] == nil else { continue }
            parameters[name] = raw.hasPrefix("\"") ? Self.unquoted(raw) : raw
        }
    }

    /// The file name the server suggests: `filename*` when it decodes, otherwise `filename`.
    package var fileName: String? {
        parameters["filename*"].flatMap(Self.decodedExtendedValue) ?? parameters["filename"]
    }

    /// `attachment` with a file name (RFC 6266 4.3): `filename` in plain ASCII for every client (other
    /// characters, `"` and `\` as `_`), and the exact name in `filename*` (UTF-8, RFC 8187) when that differs.
    package static func attachment(fileName: String) -> String {
        let ascii = String(
            String.UnicodeScalarView(
                fileName.unicodeScalars.map { (0x20..<0x7F).contains($0.value) && $0 != "\"" && $0 != "\\" ? $0 : "_" }))
        guard ascii != fileName else { return "attachment; filename=\"\(ascii)\"" }
        var encoded = ""
        for byte in fileName.utf8 {
            if Self.attributeCharacters.contains(byte) {
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                encoded += "%" + String(Self.hexDigits[Int(byte >> 4)]) + String(Self.hexDigits[Int(byte & 0xF)])
            }
        }
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''" + encoded
    }

    private static let hexDigits = Array("0123456789ABCDEF")

    /// RFC 8187 `attr-char`: what `filename*` carries as itself, not percent-encoded.
    private static let attributeCharacters = Set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$&+-.^_`|~".utf8)

    /// The `;`-separated items of a header value; a `;` inside a quoted string does not separate.
    static func items(of value: String) -> [Substring] {
        var items: [Substring] = []
        var start = value.startIndex
        var quoted = false
        var escaped = false
        for index in value.indices {
            let character = value[index]
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";", !quoted {
                items.append(value[start..<index])
                start = value.index(after: index)
            }
        }
        items.append(value[start...])
        return items
    }

    /// The content of a quoted string: what lies between the quotes, each `\x` read as `x`. Anything after
    /// the closing quote is ignored; an unclosed string runs to the end.
    static func unquoted(_ value: String) -> String {
        var result = ""
        var escaped = false
        for character in value.dropFirst() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                break
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// An RFC 8187 `ext-value` decoded: UTF-8 or ISO-8859-1; nil for another charset, a malformed value
    /// or bytes that are not text in the charset named.
    static func decodedExtendedValue(_ value: String) -> String? {
        let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        var bytes: [UInt8] = []
        var encoded = pieces[2].utf8[...]
        while let byte = encoded.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = encoded.popFirst().flatMap(Self.hexValue), let low = encoded.popFirst().flatMap(Self.hexValue)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        switch pieces[0].lowercased() {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            // Latin-1's bytes are the first 256 code points.
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
