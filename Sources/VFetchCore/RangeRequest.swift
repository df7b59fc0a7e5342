/// What a client's `Range` header asks of a file of known length (RFC 9110, single ranges).
package enum RangeRequest: Equatable, Sendable {
    /// No header, or one we may ignore (several ranges, another unit, an invalid one): the whole file, 200.
    case whole
    /// One satisfiable range: 206 with this part.
    case part(Range<Int64>)
    /// Syntactically valid but outside the file: 416.
    case unsatisfiable

    package init(header: String?, length: Int64) {
        guard let header = header?.trimmingWhitespace, !header.isEmpty else {
            self = .whole
            return
        }
        // RFC 9110 14.2: a server may ignore any Range header; an invalid one or another unit is
        // ignored, and several ranges are answered with the whole file.
        let parts = header.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].trimmingWhitespace.lowercased() == "bytes",
            !parts[1].contains(","), let request = Self.parse(parts[1], length: length)
        else {
            self = .whole
            return
        }
        self = request
    }

    /// One range-spec; nil when it is not valid.
    private static func parse(_ spec: Substring, length: Int64) -> RangeRequest? {
        let bounds = spec.trimmingWhitespace.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return nil }
        let first = bounds[0].isEmpty ? nil : Int64(bounds[0])
        let last = bounds[1].isEmpty ? nil : Int64(bounds[1])
        if !bounds[0].isEmpty, first == nil || first! < 0 { return nil }
        if !bounds[1].isEmpty, last == nil || last! < 0 { return nil }
        switch (first, last) {
        case (let first?, let last?):
            guard first <= last else { return nil }
            // `last` may be as large as Int64 allows: compare before adding one.
            return first < length ? .part(first..<(last >= length - 1 ? length : last + 1)) : .unsatisfiable
        case (let first?, nil):
            return first < length ? .part(first..<length) : .unsatisfiable
        case (nil, let suffix?):
            // The last `suffix` bytes.
            return suffix > 0 && length > 0 ? .part(max(0, length - suffix)..<length) : .unsatisfiable
        case (nil, nil):
            return nil
        }
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: Substring {
        let trimmed = drop { $0 == " " || $0 == "\t" }
        var end = trimmed.endIndex
        while end > trimmed.startIndex, trimmed[trimmed.index(before: end)] == " " || trimmed[trimmed.index(before: end)] == "\t" {
            end = trimmed.index(before: end)
        }
        return Substring(trimmed[trimmed.startIndex..<end])
    }
}
