/// What one document may still cost as it is read, across all of its tracks: the segments it lists
/// and the bytes of the URLs it makes. A hostile `S@r` or tiny `@duration` must not loop for ever or
/// fill memory, nor a template that repeats a long id, nor a long base URL under many short URIs.
struct SegmentBudget {
    static let maxSegments = 1_000_000
    /// The longest URL a document may make: longer ones no server takes (nginx's and Apache's
    /// request lines stop at 8 KiB), and a template or a base URL that makes them is an attack.
    static let maxURLBytes = 8 << 10
    /// The bytes of all the URLs a document makes: 128 a segment at the most segments. (An 8 KiB
    /// base URL under a million one-letter URIs would make 8 GiB.)
    static let maxTotalURLBytes = 128 << 20

    private(set) var remaining = maxSegments
    private var remainingURLBytes = maxTotalURLBytes

    mutating func take(_ count: Int) throws(StreamParseError) {
        guard count >= 0, count <= remaining else {
            throw StreamParseError("the manifest lists more than \(Self.maxSegments) segments")
        }
        remaining -= count
    }

    /// Takes the bytes of one more URL the document made, unless they are more than it has left.
    mutating func takeURL(bytes: Int) -> Bool {
        guard bytes <= remainingURLBytes else { return false }
        remainingURLBytes -= bytes
        return true
    }
}
