/// Ranges in JSON as the outputs write them: `[start, end]` pairs (`end` exclusive for a `Range`, the last
/// value for a `ClosedRange`). Decoding refuses a pair that is not two bounds in order.
extension KeyedEncodingContainer {
    package mutating func encode<Bound: Encodable>(pairs ranges: [Range<Bound>], forKey key: Key) throws {
        try encode(ranges.map { [$0.lowerBound, $0.upperBound] }, forKey: key)
    }

    package mutating func encode<Bound: Encodable>(pairs ranges: [ClosedRange<Bound>], forKey key: Key) throws {
        try encode(ranges.map { [$0.lowerBound, $0.upperBound] }, forKey: key)
    }

    /// One range as a pair, or `null`.
    package mutating func encode<Bound: Encodable>(pair range: Range<Bound>?, forKey key: Key) throws {
        try encode(range.map { [$0.lowerBound, $0.upperBound] }, forKey: key)
    }
}

extension KeyedDecodingContainer {
    package func decodePairs<Bound: Decodable & Comparable>(_: Range<Bound>.Type, forKey key: Key) throws -> [Range<Bound>] {
        try bounds(forKey: key).map { $0.lowerBound..<$0.upperBound }
    }

    package func decodePairs<Bound: Decodable & Comparable>(_: ClosedRange<Bound>.Type, forKey key: Key) throws -> [ClosedRange<Bound>] {
        try bounds(forKey: key)
    }

    /// One pair, nil when `null` or absent.
    package func decodePairIfPresent<Bound: Decodable & Comparable>(_: Range<Bound>.Type, forKey key: Key) throws -> Range<Bound>? {
        guard let pair = try decodeIfPresent([Bound].self, forKey: key) else { return nil }
        let range = try Self.range(pair, key, in: self)
        return range.lowerBound..<range.upperBound
    }

    private func bounds<Bound: Decodable & Comparable>(forKey key: Key) throws -> [ClosedRange<Bound>] {
        try decode([[Bound]].self, forKey: key).map { try Self.range($0, key, in: self) }
    }

    private static func range<Bound: Comparable>(_ pair: [Bound], _ key: Key, in container: Self) throws -> ClosedRange<Bound> {
        guard pair.count == 2, pair[0] <= pair[1] else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not [start, end] in order")
        }
        return pair[0]...pair[1]
    }
}
