/// Where the bytes of one response belong in its fetch, and when to stop reading it: the fetcher feeds
/// it the size of each chunk as it arrives and writes what it says where it says. No I/O.
///
/// A fetch is the whole of a resource or the bytes `range` of it. A 206 sends the bytes a piece asked
/// for; a 200 sends the resource from its first byte, whatever was asked: only the fetch's bytes are
/// kept, and reading stops at their end. Every byte received counts against `limit`, those skipped
/// before the range's start too, and so does every byte's place in the fetch: a 200 for a range that
/// ends past the limit is refused before its body, and an endless body is cut at the limit.
package struct ResponseWindow: Sendable, Equatable {
    /// What to do with the next chunk.
    package enum Step: Sendable, Equatable {
        /// Write the chunk's bytes `slice` (offsets into the chunk) at `offset` of the fetch. `done`: the
        /// bytes wanted are all in; whatever else the response would send is not needed.
        case keep(slice: Range<Int>, at: Int64, done: Bool)
        /// Stop reading: the response goes past what a fetch may have.
        case refuse(String)
    }

    /// The resource offset of the response's first byte.
    private let start: Int64
    /// The resource's bytes wanted from this response; nil: all it sends.
    private let wanted: Range<Int64>?
    /// The resource offset of the fetch's first byte.
    private let base: Int64
    package let limit: Int64
    /// Response bytes read so far.
    package private(set) var received: Int64 = 0
    /// The end of what was kept, as an offset in the fetch.
    package private(set) var keptEnd: Int64 = 0

    /// A response whose first byte is byte `start` of the resource, of which it should give `wanted`
    /// (nil: everything it sends), for a fetch that starts at byte `base` of the resource; or why it cannot
    /// be used at all.
    package static func opening(start: Int64, wanted: Range<Int64>?, base: Int64, limit: Int64) -> Result<ResponseWindow, Refusal> {
        if let wanted {
            guard wanted.lowerBound >= start, wanted.lowerBound >= base else {
                return .failure(Refusal("the answer starts after the bytes asked for"))
            }
            // Reaching the range's end means receiving everything before it.
            if wanted.upperBound - start > limit || wanted.upperBound - base > limit {
                return .failure(
                    Refusal("\(wanted.upperBound - start) bytes to read for the range, more than a segment may have (\(limit))"))
            }
        }
        return .success(ResponseWindow(start: start, wanted: wanted, base: base, limit: limit))
    }

    /// Why a response cannot be used.
    package struct Refusal: Error, Sendable, Equatable {
        package let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Every byte wanted has arrived (a response that wants everything is complete when it ends).
    package var isComplete: Bool { wanted.map { start + received >= $0.upperBound } ?? true }

    /// The next `count` bytes of the response arrived.
    package mutating func take(_ count: Int) -> Step {
        let first = start + received
        let last = first + Int64(count)
        let from = max(first, wanted?.lowerBound ?? first)
        let to = max(from, min(last, wanted?.upperBound ?? last))
        let done = wanted.map { last >= $0.upperBound } ?? false
        received += Int64(count)
        if to - base > limit || (!done && received > limit) {
            return .refuse("more than \(limit) bytes, more than a segment may have")
        }
        guard to > from else { return .keep(slice: 0..<0, at: keptEnd, done: done) }
        keptEnd = max(keptEnd, to - base)
        return .keep(slice: Int(from - first)..<Int(to - first), at: from - base, done: done)
    }
}
