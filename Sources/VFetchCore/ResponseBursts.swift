/// Learns what every response of an origin sends at once before it pauses, and sizes requests by it.
///
/// nginx's `limit_rate` sends a response's first chunk (up to 2 MiB) undelayed, then pauses; CDNs allow a
/// burst. A fresh request on a kept-alive connection gets a fresh burst, so requests ask for no more than
/// the burst, one after another, and a long response that paused past its burst is better asked for again.
///
/// A value-type state machine: the scheduler tells it what each response did (`started`, `received`,
/// `ended`, `restartPaused`) and it answers how large a request should be and which to ask for afresh.
package struct ResponseBursts: Sendable {
    /// What one response did, as far as its burst goes.
    struct Response {
        var received: Int64 = 0
        var lastChunkAt: Double?
        /// Whether the response paused yet (its burst is over).
        var paused = false
        /// It asks for twice `requestSize`, to see whether larger requests pause.
        var probesSize = false
    }

    /// The burst, once three responses agreed on it (see `noteBurst`).
    package private(set) var burst: Int64?
    /// The most a request asks for while the burst is unknown; nil: as much as it can.
    package private(set) var requestSize: Int64?
    private var samples: [Int64] = []
    /// Responses of `requestSize` that came whole without a pause since the size last changed.
    private var wholeResponses = 0
    /// A larger request paused: `requestSize` stays.
    private var requestSizeSettled = false
    private var pausesCheckedAt = -Double.infinity
    private var responses: [TransferID: Response] = [:]
    private let rangeRequests: Bool
    private let learns: Bool
    private let gap: Double
    private let minimum: Int64
    private let alignment: Int64

    /// Without `learns` (or range requests), requests ask for all they can from the start. A pause of at
    /// least `gap`, after at least `minimum` bytes, ends a response's burst; bursts round down to `alignment`.
    package init(rangeRequests: Bool, learns: Bool, firstRequestSize: Int64, gap: Double, minimum: Int64, alignment: Int64) {
        self.rangeRequests = rangeRequests
        self.learns = learns
        self.gap = gap
        self.minimum = minimum
        self.alignment = alignment
        requestSize = rangeRequests && learns ? firstRequestSize : nil
    }

    /// The most the next request asks for; nil: as much as it can. After three whole responses of
    /// `requestSize`, one request at a time asks for twice as much, to see whether it pauses.
    package var nextRequestSize: Int64? {
        burst ?? (probesNext ? requestSize.map { 2 * $0 } : requestSize)
    }

    private var probesNext: Bool {
        burst == nil && !requestSizeSettled && wholeResponses >= 3 && !responses.values.contains(where: \.probesSize)
    }

    /// A response starts that asks for `asking` bytes, sized by `nextRequestSize`; nil: sized otherwise
    /// (a probe or tail that was running before).
    package mutating func started(_ id: TransferID, asking: Int64?) {
        responses[id] = Response(probesSize: asking.map { probesNext && $0 > requestSize ?? 0 } ?? false)
    }

    /// A response delivered `count` bytes and has `left` to go; returns whether to stop it for a fresh
    /// request: it is past its burst, so throttled now, and the rest comes sooner asked for again.
    package mutating func received(_ id: TransferID, count: Int64, left: Int64, now: Double) -> Bool {
        guard var response = responses[id] else { return false }
        if !response.paused, let last = response.lastChunkAt, now - last >= gap {
            response.paused = true
            noteBurst(of: response)
        }
        response.lastChunkAt = now
        response.received += count
        responses[id] = response
        return wantsFreshRequest(response, left: left)
    }

    /// When the response last delivered bytes; nil before its first.
    package func lastChunk(of id: TransferID) -> Double? { responses[id]?.lastChunkAt }

    /// Notes the responses that paused since their last chunk, and returns those that paused after their
    /// burst with more than a burst still to come (`left`; nil for a response no longer asked for):
    /// a fresh request gets the rest sooner. Call it on every turn: a pause is over by the time its next
    /// chunk shows it.
    package mutating func restartPaused(now: Double, left: (TransferID) -> Int64?) -> [TransferID] {
        // Pauses last `gap` at least: look a few times as often, not on every turn.
        guard now - pausesCheckedAt >= gap / 4 else { return [] }
        pausesCheckedAt = now
        let silent = responses.compactMap { id, response -> (id: TransferID, response: Response, left: Int64)? in
            guard let left = left(id), let last = response.lastChunkAt, now - last >= gap else { return nil }
            return (id, response, left)
        }
        for (id, response, _) in silent where !response.paused {
            responses[id]?.paused = true
            noteBurst(of: response)
        }
        return silent.filter { wantsFreshRequest($0.response, left: $0.left) }.map(\.id).sorted()
    }

    /// The response is over; `whole` when it brought all it asked for. A whole response of `requestSize`
    /// that never paused counts towards larger requests; the one that asked for twice as much doubles it.
    package mutating func ended(_ id: TransferID, whole: Bool) {
        guard let response = responses.removeValue(forKey: id), whole, !response.paused, let size = requestSize,
            response.received >= size
        else { return }
        if response.probesSize {
            requestSize = size >= 32 << 20 ? nil : 2 * size  // no burst in sight: fewer, longer requests
            wholeResponses = 0
        } else {
            wholeResponses += 1
        }
    }

    /// Requests ask for all they can from now on: an origin that fast on one connection has no burst
    /// worth a request's round trip.
    package mutating func requestWholeSegments() {
        requestSize = nil
        requestSizeSettled = true
    }

    private func wantsFreshRequest(_ response: Response, left: Int64) -> Bool {
        guard let burst, rangeRequests else { return false }
        return response.received >= burst && left > burst
    }

    /// Keeps the bytes a response sent before its first pause. Three within 40% of their median make
    /// the burst, the smallest of them, so requests end before the pause: how much of the first chunk
    /// the server's socket took varies, while a loss stall pauses a response anywhere.
    private mutating func noteBurst(of response: Response) {
        if response.probesSize { requestSizeSettled = true }
        guard learns, response.received >= minimum else { return }
        samples = Array((samples + [response.received]).suffix(8))
        let median = samples.sorted()[samples.count / 2]
        let agreeing = samples.filter { abs(Double($0 - median)) <= 0.4 * Double(median) }
        guard agreeing.count >= 3, let smallest = agreeing.min() else { return }
        burst = max(minimum, smallest - smallest % alignment)
    }
}
