/// What one document may still cost as it is read, across all of its tracks: the segments it lists
/// and the bytes of the URLs it makes. A hostile `S@r` or tiny `@duration` must not loop for ever or
/// fill memory, nor a template that repeats a long id, nor a long base URL under many short URIs.
///
/// Every reader and rewrite starts from `SegmentBudget()`, the production limits; tests pass smaller
/// ones, so that a few kilobytes of input prove what would otherwise take a hundred megabytes.
package struct SegmentBudget: Sendable {
    package static let maxSegments = 1_000_000
    /// The longest URL a document may make: longer ones no server takes (nginx's and Apache's
    /// request lines stop at 8 KiB), and a template or a base URL that makes them is an attack.
    package static let maxURLBytes = 8 << 10
    /// The bytes of all the URLs a document makes: 128 a segment at the most segments. (An 8 KiB
    /// base URL under a million one-letter URIs would make 8 GiB.)
    package static let maxTotalURLBytes = 128 << 20

    /// The limits this budget started with, for messages.
    package let maxSegments: Int
    package let maxTotalURLBytes: Int
    private(set) var remaining: Int
    private var remainingURLBytes: Int

    package init(maxSegments: Int = Self.maxSegments, maxTotalURLBytes: Int = Self.maxTotalURLBytes) {
        self.maxSegments = maxSegments
        self.maxTotalURLBytes = maxTotalURLBytes
        remaining = maxSegments
        remainingURLBytes = maxTotalURLBytes
    }

    /// The total URL bytes in a message: in MiB when whole ones, as the production limit is.
    var totalURLBytesText: String {
        maxTotalURLBytes % (1 << 20) == 0 ? "\(maxTotalURLBytes >> 20) MiB" : "\(maxTotalURLBytes) bytes"
    }

    mutating func take(_ count: Int) throws(StreamParseError) {
        guard takeSegments(count) else {
            throw StreamParseError("the manifest lists more than \(maxSegments) segments")
        }
    }

    /// Takes `count` more segments, unless they are more than it has left.
    mutating func takeSegments(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        remaining -= count
        return true
    }

    /// Takes the bytes of one more URL the document made, unless they are more than it has left.
    mutating func takeURL(bytes: Int) -> Bool {
        guard bytes <= remainingURLBytes else { return false }
        remainingURLBytes -= bytes
        return true
    }
}
