import VFetchCore

/// Which of a stream's fetches (segments, init sections, keys) to request next, and what each failure
/// means: a state machine the fetcher feeds with events and whose actions it performs. No I/O, no clock
/// of its own: `now` comes in with every event.
///
/// Fetches start in play order, so the output fills from its start. Each is requested in pieces of at
/// most `pieceSize` (a first half piece, then the rest once the answer tells the length), which run on several
/// connections at once: origins and CDNs limit the rate of each response and start each with a burst,
/// so a segment in pieces comes sooner than one whole, and a connection never idles while another
/// carries a long segment.
/// How many requests the host allows is not the plan's to learn: the process's budget for the host says
/// whether a request may start (`notStarted`) and which refusals were its connection limit
/// (`refusedByHost`), and those cost no failure. A fetch that keeps failing fails the download, naming
/// the fetch, unless `skipUnavailable` lets it be skipped, and then it is reported as a gap.
package struct SegmentFetchPlan: Sendable {
    package enum State: Sendable, Equatable {
        case waiting(notBefore: Double)
        case fetching
        case done
    }

    /// One request's worth of a fetch: all of it (`range` nil), or the bytes `range` of it, counted
    /// from the fetch's first byte. `id` names it in actions and events for as long as it exists.
    package struct Piece: Sendable, Equatable {
        package var id = 0
        package var fetch: Int
        package var range: Range<Int64>?
        package var state: State
        var failures = 0
    }

    /// What the fetcher does next.
    package enum Action: Sendable, Equatable {
        /// Request piece `piece`: bytes `range` of fetch `fetch` (nil: all of it).
        case fetch(piece: Int, fetch: Int, range: Range<Int64>?)
        /// Give up the download: `fetch` failed for good.
        case fail(fetch: Int, reason: String)
    }

    package private(set) var pieces: [Piece] = []
    private var nextID = 0
    private var done: [Bool]
    private var skippedReasons: [Int: String] = [:]
    /// Fetches whose length is known: from the start (a byte range) or from a first piece's answer.
    private var lengths: [Int: Int64]
    /// Bytes of fetches an earlier run left on disk, which nobody asks for again.
    private var held: [Int: ByteRangeSet] = [:]
    /// How many requests run at once at most (`--connections`); the host's budget may allow fewer.
    package let connections: Int
    /// The size of a piece when a fetch is split; nil once the origin has ignored a range (or never split).
    package private(set) var pieceSize: Int64?
    package let retry: RetryPolicy
    package let skipUnavailable: Bool
    private var failed: Action?

    /// `lengths`: the length of fetches known in advance (byte ranges); `done`: fetches kept from an earlier run;
    /// `held`: the bytes an earlier run left of fetches of known length, of which only the rest is asked for (a
    /// fetch held whole is the caller's to keep: it has nothing left to ask).
    package init(
        count: Int, lengths: [Int: Int64] = [:], done: Set<Int> = [], held: [Int: ByteRangeSet] = [:], connections: Int,
        pieceSize: Int64? = 1 << 20, retry: RetryPolicy = RetryPolicy(), skipUnavailable: Bool = false
    ) {
        self.done = (0..<count).map(done.contains)
        self.lengths = lengths
        self.connections = max(1, connections)
        self.pieceSize = pieceSize.map { max(1, $0) }
        self.retry = retry
        self.skipUnavailable = skipUnavailable
        for fetch in 0..<count where !done.contains(fetch) {
            guard let bytes = held[fetch], !bytes.isEmpty, let length = lengths[fetch] else {
                pieces.append(made(fetch: fetch, range: nil, state: .waiting(notBefore: 0)))
                continue
            }
            self.held[fetch] = bytes
            for gap in bytes.gaps(in: 0..<length) {
                pieces += equalPieces(
                    of: fetch, gap, size: self.pieceSize ?? (gap.upperBound - gap.lowerBound), state: .waiting(notBefore: 0))
            }
        }
    }

    private mutating func made(fetch: Int, range: Range<Int64>?, state: State, failures: Int = 0) -> Piece {
        nextID += 1
        return Piece(id: nextID, fetch: fetch, range: range, state: state, failures: failures)
    }

    private func position(of id: Int) -> Int? { pieces.firstIndex { $0.id == id } }

    package var inFlight: Int { pieces.count { $0.state == .fetching } }
    package var doneCount: Int { done.count { $0 } }
    /// Every fetch is done or skipped.
    package var isFinished: Bool { pieces.isEmpty }
    /// The skipped fetches and why, in order.
    package var skipped: [(fetch: Int, reason: String)] { skippedReasons.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }

    /// How many requests it would run at once if the host were its alone: its connections, or fewer
    /// when fewer pieces are left.
    package var wanted: Int {
        var count = 0
        for piece in pieces where piece.state != .done {
            count += 1
            if count == connections { break }
        }
        return count
    }

    /// The requests to start now, the earliest waiting first, up to the connection limit; or the failure.
    package mutating func next(now: Double) -> [Action] {
        if let failed { return [failed] }
        var free = connections - inFlight
        guard free > 0 else { return [] }
        splitWholeFetches(now: now)
        var actions: [Action] = []
        for index in pieces.indices where free > 0 {
            guard case .waiting(let notBefore) = pieces[index].state, notBefore <= now else { continue }
            pieces[index].state = .fetching
            actions.append(.fetch(piece: pieces[index].id, fetch: pieces[index].fetch, range: pieces[index].range))
            free -= 1
        }
        return actions
    }

    /// Splits whole fetches not yet started: one of known length into pieces, one of unknown length into
    /// its first piece (the rest follows once its answer tells the length, `learned(length:of:)`).
    private mutating func splitWholeFetches(now: Double) {
        guard let pieceSize else { return }
        var index = 0
        while index < pieces.count {
            let piece = pieces[index]
            guard piece.range == nil, piece.failures == 0, case .waiting(let at) = piece.state, at <= now,
                (lengths[piece.fetch] ?? .max) > pieceSize
            else {
                index += 1
                continue
            }
            let split =
                if let length = lengths[piece.fetch] {
                    equalPieces(of: piece.fetch, 0..<length, size: pieceSize, state: piece.state)
                } else {
                    // Half a piece: the length comes back soon, and the rest goes out in equal pieces.
                    [made(fetch: piece.fetch, range: 0..<max(1, pieceSize / 2), state: piece.state)]
                }
            pieces.replaceSubrange(index...index, with: split)
            index += split.count
        }
    }

    /// `range` of `fetch` in pieces of equal size, at most `pieceSize` each: a piece just under a
    /// response's burst comes at once, where one just over it waits for the origin's next second.
    private mutating func equalPieces(of fetch: Int, _ range: Range<Int64>, size: Int64, state: State) -> [Piece] {
        let total = range.upperBound - range.lowerBound
        let count = max(1, (total + size - 1) / size)
        let each = (total + count - 1) / count
        var pieces: [Piece] = []
        var start = range.lowerBound
        while start < range.upperBound {
            pieces.append(made(fetch: fetch, range: start..<min(range.upperBound, start + each), state: state))
            start += each
        }
        return pieces
    }

    /// When the next waiting request may start, if that is in the future and a connection is free for it.
    package func wakeup(after now: Double) -> Double? {
        guard failed == nil, inFlight < connections else { return nil }
        return pieces.compactMap { if case .waiting(let at) = $0.state, at > now { at } else { nil } }.min()
    }

    /// The answer to a piece told the fetch's whole length: the rest of it is queued in pieces.
    package mutating func learned(length: Int64, of fetch: Int) {
        guard lengths[fetch] == nil, length >= 0 else { return }
        lengths[fetch] = length
        guard let pieceSize, let first = pieces.firstIndex(where: { $0.fetch == fetch }), let range = pieces[first].range,
            range.lowerBound == 0, pieces.count(where: { $0.fetch == fetch }) == 1
        else { return }
        if range.upperBound >= length {
            pieces[first].range = 0..<length
            return
        }
        let rest = equalPieces(of: fetch, range.upperBound..<length, size: pieceSize, state: .waiting(notBefore: 0))
        pieces.insert(contentsOf: rest, at: first + 1)
    }

    /// The origin answered a piece with the whole fetch (it ignores ranges): the fetch is complete, and no
    /// fetch is split from now on.
    package mutating func answeredWhole(_ id: Int) {
        guard let piece = position(of: id) else { return }
        pieceSize = nil
        let fetch = pieces[piece].fetch
        held[fetch] = nil
        // Whatever else of this fetch runs is not needed: the fetch is this one whole answer.
        pieces[piece].range = nil
        pieces[piece].state = .done
        pieces.removeAll { $0.fetch == fetch && $0.id != id }
    }

    /// A piece arrived whole.
    package mutating func fetched(_ id: Int) {
        guard let piece = position(of: id) else { return }
        // Its failures stay counted: the whole fetch may still be refused (`rejected`).
        pieces[piece].state = .done
    }

    /// Whether every piece of `fetch` has arrived: the fetcher then checks the whole and says `kept` or `rejected`.
    package func isComplete(_ fetch: Int) -> Bool {
        let own = pieces.filter { $0.fetch == fetch }
        guard !own.isEmpty, own.allSatisfy({ $0.state == .done }) else { return false }
        if own.count == 1, own[0].range == nil { return true }
        guard let length = lengths[fetch] else { return false }
        return own.reduce(held[fetch]?.count ?? 0) { $0 + Int64($1.range?.count ?? 0) } == length
    }

    /// The fetch is complete and kept: its pieces are forgotten.
    package mutating func kept(_ fetch: Int) {
        done[fetch] = true
        held[fetch] = nil
        pieces.removeAll { $0.fetch == fetch }
    }

    /// The whole fetch was refused after its pieces arrived (an HTML page, a failed decryption): it is asked
    /// for again, whole, after a backoff, or given up.
    package mutating func rejected(_ fetch: Int, _ failure: RequestFailure, now: Double, jitter: Double) {
        guard let first = pieces.firstIndex(where: { $0.fetch == fetch }) else { return }
        let failures = pieces.filter { $0.fetch == fetch }.map(\.failures).max() ?? 0
        pieces.removeAll { $0.fetch == fetch }
        // Asked for whole, it starts over: what an earlier run left is written over.
        held[fetch] = nil
        let whole = made(fetch: fetch, range: nil, state: .fetching, failures: failures)
        pieces.insert(whole, at: first)
        failed(whole.id, failure, now: now, jitter: jitter)
    }

    /// A request could not start: the host's budget has no room for it now. It waits for the next turn,
    /// with no failure counted.
    package mutating func notStarted(_ id: Int) {
        guard let piece = position(of: id), pieces[piece].state == .fetching else { return }
        pieces[piece].state = .waiting(notBefore: 0)
    }

    /// A request was refused at the host's connection limit (its budget judged so): it is asked for again
    /// when the host has room, with no failure counted.
    package mutating func refusedByHost(_ id: Int) { notStarted(id) }

    /// Records a failed request: it waits for its retry, or the download fails (or the fetch is skipped).
    /// `jitter` in 0..<1 spreads the retries of many requests apart.
    package mutating func failed(_ id: Int, _ failure: RequestFailure, now: Double, jitter: Double) {
        guard let piece = position(of: id), pieces[piece].state == .fetching else { return }
        var retryAfter: Double?
        switch failure {
        case .status(let status, let after) where status == 429 || status == 503:
            retryAfter = after
            if retry.refuses(retryAfter: after) {
                return give(up: piece, "HTTP \(status) with Retry-After \(Int(after ?? 0)) s, longer than the longest wait")
            }
        case .transfer(let transfer, _):
            switch transfer.verdict(fileKnown: true) {
            case .unreachable, .badURL, .permanent: return give(up: piece, Self.describe(failure))
            case .retry: break
            }
        case .status, .invalid: break
        }
        pieces[piece].failures += 1
        guard pieces[piece].failures <= retry.maxRetries else { return give(up: piece, Self.describe(failure)) }
        let delay = retry.delay(afterFailures: pieces[piece].failures - 1, retryAfter: retryAfter, jitter: jitter)
        pieces[piece].state = .waiting(notBefore: now + delay)
    }

    private mutating func give(up piece: Int, _ reason: String) {
        let fetch = pieces[piece].fetch
        skippedReasons[fetch] = reason
        pieces.removeAll { $0.fetch == fetch }
        if !skipUnavailable { failed = failed ?? .fail(fetch: fetch, reason: reason) }
    }

    static func describe(_ failure: RequestFailure) -> String {
        switch failure {
        case .status(let status, _): "HTTP \(status)"
        case .transfer(_, let message): message
        case .invalid(let reason): reason
        }
    }
}
