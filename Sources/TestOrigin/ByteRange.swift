/// A parsed single-range `Range` header (RFC 9110 §14.1.2).
public enum ByteRangeRequest: Equatable, Sendable {
    /// `bytes=a-b` or, with `last == nil`, `bytes=a-`.
    case from(first: Int, last: Int?)
    /// `bytes=-n`: the last n bytes.
    case suffix(length: Int)

    /// Parses `value`; nil for anything this origin ignores (bad syntax, other units, several ranges),
    /// in which case the whole body is answered, as RFC 9110 allows.
    public init?(header value: String) {
        let trimmed = value.trimmingSpaces()
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmingSpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash].trimmingSpaces()
        let lastText = spec[spec.index(after: dash)...].trimmingSpaces()
        if firstText.isEmpty {
            guard let length = Self.number(lastText) else { return nil }
            self = .suffix(length: length)
        } else {
            guard let first = Self.number(firstText) else { return nil }
            if lastText.isEmpty {
                self = .from(first: first, last: nil)
            } else {
                guard let last = Self.number(lastText), last >= first else { return nil }
                self = .from(first: first, last: last)
            }
        }
    }

    /// The byte offsets to send from a body of `total` bytes, or nil when unsatisfiable (416).
    public func resolve(total: Int) -> Range<Int>? {
        switch self {
        case .from(let first, let last):
            guard first < total else { return nil }
            return first..<(min(last ?? (total - 1), total - 1) + 1)
        case .suffix(let length):
            guard length > 0, total > 0 else { return nil }
            return max(0, total - length)..<total
        }
    }

    private static func number(_ text: String) -> Int? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }),
            let end = lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(self[start...end])
    }
}
