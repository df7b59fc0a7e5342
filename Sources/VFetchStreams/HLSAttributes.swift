/// An HLS attribute list, `NAME=VALUE,NAME="quoted, value",…` (RFC 8216 4.2), read into its values.
///
/// Reading never fails: a malformed pair is skipped, an unterminated quoted string runs to the end
/// of the line, and the first of two attributes with one name wins. The typed accessors return nil
/// for a value that is absent or does not parse, so each tag decides what a missing value means.
struct HLSAttributes {
    private var values: [Substring: Substring] = [:]

    init(_ text: Substring) {
        let comma = UInt8(ascii: ",")
        let quote = UInt8(ascii: "\"")
        var rest = text
        while let equals = rest.utf8.firstIndex(of: UInt8(ascii: "=")) {
            let name = rest[..<equals].trimmingSpaces
            rest = rest[rest.utf8.index(after: equals)...]
            let value: Substring
            if rest.utf8.first == quote {
                // A quoted string holds commas; it ends at the next quote (there are no escapes).
                let body = rest[rest.utf8.index(after: rest.startIndex)...]
                let close = body.utf8.firstIndex(of: quote) ?? body.endIndex
                value = body[..<close]
                rest = body[close...]
            } else {
                let end = rest.utf8.firstIndex(of: comma) ?? rest.endIndex
                value = rest[..<end].trimmingSpaces
                rest = rest[end...]
            }
            if !name.isEmpty, values[name] == nil { values[name] = value }
            // The next attribute follows the next comma; anything before it (after a closing quote) is junk.
            guard let next = rest.utf8.firstIndex(of: comma) else { break }
            rest = rest[rest.utf8.index(after: next)...]
        }
    }

    /// The value as written, without the quotes of a quoted string.
    subscript(name: Substring) -> Substring? { values[name] }

    /// A non-negative decimal integer (`BANDWIDTH=1280000`); nil if it does not fit in an `Int`.
    func integer(_ name: Substring) -> Int? {
        guard let value = values[name], let number = Int(value), number >= 0 else { return nil }
        return number
    }

    /// A finite, non-negative decimal floating-point number (`FRAME-RATE=29.970`).
    func decimal(_ name: Substring) -> Double? {
        guard let value = values[name], let number = Double(value), number.isFinite, number >= 0 else { return nil }
        return number
    }

    /// A decimal resolution, `1920x1080`.
    func resolution(_ name: Substring) -> (width: Int, height: Int)? {
        guard let value = values[name] else { return nil }
        let sides = value.split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, let width = Int(sides[0]), let height = Int(sides[1]), width >= 0, height >= 0 else {
            return nil
        }
        return (width, height)
    }

    /// An enumerated string's yes/no (`DEFAULT=YES`); absent means no.
    func flag(_ name: Substring) -> Bool { values[name] == "YES" }

    /// A hexadecimal sequence (`IV=0x0000…01`) as a big-endian integer of `byteCount` bytes, padded
    /// with zeros on the left; nil when it is not hexadecimal or does not fit.
    func hexadecimal(_ name: Substring, byteCount: Int) -> [UInt8]? {
        guard let value = values[name], value.hasPrefix("0x") || value.hasPrefix("0X") else { return nil }
        var digits = value.dropFirst(2).utf8.map { $0 }
        guard !digits.isEmpty, digits.count <= byteCount * 2 else { return nil }
        digits.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: byteCount * 2 - digits.count), at: 0)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Substring {
    /// The text without spaces or tabs at either end.
    var trimmingSpaces: Substring {
        let utf8 = self.utf8
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        // A space or tab is one byte and one scalar: both ends fall between scalars.
        return self[first..<utf8.index(after: last)]
    }
}
