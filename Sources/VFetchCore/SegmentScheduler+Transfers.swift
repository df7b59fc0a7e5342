/// Names one HTTP transfer (one request on one connection) for the scheduler.
package struct TransferID: Hashable, Sendable, Comparable, CustomStringConvertible {
    package let rawValue: Int
    package init(_ rawValue: Int) { self.rawValue = rawValue }
    package static func < (lhs: TransferID, rhs: TransferID) -> Bool { lhs.rawValue < rhs.rawValue }
    package var description: String { "#\(rawValue)" }
}

/// What the scheduler and the engine say of a transfer: the request to start, what to write of each
/// chunk it delivers, how it ended.
extension SegmentScheduler {
    /// A request to start: a new transfer asking for `range` (nil: the whole file, without Range).
    package struct Assignment: Equatable, Sendable {
        package var transfer: TransferID
        package var range: Range<Int64>?
        package var isRace: Bool
    }

    /// What to do with a chunk a transfer delivered.
    package struct Receipt: Equatable, Sendable {
        /// The file bytes of the chunk to write; nil: drop the chunk.
        package var write: Range<Int64>?
        /// How many bytes at the start of the chunk come before `write`.
        package var skip: Int64 = 0
        /// The transfer has delivered all it should: abort it.
        package var stop: Bool
    }

    package enum Outcome: Equatable, Sendable {
        /// The server sent all that was asked.
        case finished
        /// The request failed; retry after at least `retryAfter` seconds if given.
        case failed(retryAfter: Double?)
        /// The engine stopped it on the scheduler's word (split point reached, race lost, too slow).
        case stopped
    }
}
