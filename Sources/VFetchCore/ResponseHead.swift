/// The status line and headers of one HTTP response, as they arrive line by line.
///
/// A transfer that follows redirects sees several responses; `add(line:)` starts over at
/// each status line, so what is left at the end is the final response.
package struct ResponseHead: Sendable, Equatable {
    package private(set) var status = 0
    private var fields: [(name: String, value: String)] = []

    package init() {}

    package init(status: Int, headers: [(String, String)]) {
        self.status = status
        self.fields = headers.map { (name: $0.0.lowercased(), value: $0.1) }
    }

    /// Feeds one raw header line (CR LF included or not). Returns true at the blank line that ends a header block.
    @discardableResult
    package mutating func add(line raw: String) -> Bool {
        let line = raw.trimmingTrailingNewline()
        if line.isEmpty { return true }
        if line.hasPrefix("HTTP/") {
            self = ResponseHead()
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            fields.append((name: name, value: value))
        }
        return false
    }

    /// The value of the first header named `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        let key = name.lowercased()
        return fields.first { $0.name == key }?.value
    }

    package var isRedirect: Bool { (300..<400).contains(status) && header("location") != nil }

    /// What names this version of the resource in an `If-Range`: a strong ETag, else `Last-Modified`; nil
    /// when neither (a weak ETag never proves two copies byte for byte equal).
    package var rangeValidator: String? {
        if let etag = header("etag"), !etag.isEmpty, !etag.hasPrefix("W/") { return etag }
        return header("last-modified")
    }

    package static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool {
        lhs.status == rhs.status && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }

    func trimmingTrailingNewline() -> String {
        var result = Substring(self)
        while let last = result.last, last == "\r" || last == "\n" || last == "\r\n" { result.removeLast() }
        return String(result)
    }
}
