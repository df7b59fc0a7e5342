/// A set of byte offsets, kept as sorted, disjoint, non-adjacent half-open ranges.
///
/// Downloads fill a file in a few long runs, so the set stays small and an insert
/// that extends a run is cheap.
package struct ByteRangeSet: Equatable, Sendable {
    package private(set) var ranges: [Range<Int64>] = []

    package init() {}

    package init(_ ranges: some Sequence<Range<Int64>>) {
        for range in ranges { insert(range) }
    }

    /// The number of bytes in the set.
    package var count: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    package var isEmpty: Bool { ranges.isEmpty }

    package mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        // The first run that ends at or after the new range's start can merge with it.
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < range.lowerBound { low = mid + 1 } else { high = mid }
        }
        var merged = range
        var end = low
        while end < ranges.count, ranges[end].lowerBound <= merged.upperBound {
            merged = min(merged.lowerBound, ranges[end].lowerBound)..<max(merged.upperBound, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(low..<end, with: [merged])
    }

    package func contains(_ offset: Int64) -> Bool {
        ranges.contains { $0.contains(offset) }
    }

    /// The parts of `whole` that are not in the set, in order.
    package func gaps(in whole: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var cursor = whole.lowerBound
        for range in ranges where range.upperBound > cursor {
            if range.lowerBound >= whole.upperBound { break }
            if range.lowerBound > cursor { result.append(cursor..<range.lowerBound) }
            cursor = max(cursor, range.upperBound)
        }
        if cursor < whole.upperBound { result.append(cursor..<whole.upperBound) }
        return result
    }

    /// A map of `width` characters for progress displays, one per slice of `0..<total`:
    /// "█" all of the slice is in the set, "▓" half or more, "░" some, "·" none.
    package func map(total: Int64, width: Int) -> String {
        guard width > 0 else { return "" }
        // `total * cell / width` in 128 bits: a manifest on disk may claim a length near Int64.max,
        // whose product with the cell number does not fit in 64. The quotient is at most `total`.
        func edge(_ cell: Int) -> Int64 {
            Int64(width).dividingFullWidth(total.multipliedFullWidth(by: Int64(cell))).quotient
        }
        return String(
            (0..<width).map { cell -> Character in
                let slice = edge(cell)..<edge(cell + 1)
                guard !slice.isEmpty else { return total == 0 || contains(slice.lowerBound) ? "█" : "·" }
                let covered = ranges.reduce(Int64(0)) { sum, range in
                    sum + max(0, min(range.upperBound, slice.upperBound) - max(range.lowerBound, slice.lowerBound))
                }
                // Half or more, without doubling `covered`, which could overflow for such a slice.
                let uncovered = Int64(slice.count) - covered
                return uncovered == 0 ? "█" : covered >= uncovered ? "▓" : covered > 0 ? "░" : "·"
            })
    }
}
