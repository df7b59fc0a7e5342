/// A parsed `Content-Range` header: `bytes FIRST-LAST/TOTAL` or `bytes */TOTAL`.
package struct ContentRange: Equatable, Sendable {
    /// The bytes in the body, half-open; nil for `bytes */TOTAL`.
    package var range: Range<Int64>?
    /// The full length of the file; nil when the server says `*`.
    package var total: Int64?

    package init(range: Range<Int64>?, total: Int64?) {
        self.range = range
        self.total = total
    }

    package init?(_ header: String) {
        let value = header.trimmingSpaces()
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).trimmingSpaces()
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let length = Int64(halves[1]), length >= 0 else { return nil }
            total = length
        }
        if halves[0] == "*" {
            range = nil
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first >= 0, last >= first
        else { return nil }
        if let total, last >= total { return nil }
        // With `*` for the total nothing else bounds `last`, and `last + 1` must fit in an Int64.
        guard last < Int64.max else { return nil }
        range = first..<(last + 1)
    }
}
