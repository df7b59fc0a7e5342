/// Decides which bytes each connection asks for, and which bytes of what arrives get written.
///
/// A value-type state machine: the I/O owner tells it what happened (`receive`, `transferEnded`,
/// `tick`) and does what it answers, so every decision can be tested without sockets. It passes on
/// what transfers do to `ResponseBursts`, which sizes requests, and to `TransferRates`, which says how
/// fast each goes.
///
/// Every missing byte belongs to exactly one segment. A segment is held by zero, one or (while
/// raced) two transfers. Holders only ever deliver bytes at or before the segment's `next`
/// offset, so the first bytes to arrive at `next` are written and the same byte is never written twice.
package struct SegmentScheduler: Sendable {
    /// Which of `transfers` give their segments back when only `limit` may stay. One with at most `nearlySent`
    /// bytes left of its request stays, beside the limit: an origin sends a response that small at once, so
    /// cutting it loses bytes already on their way (to be asked for again) and frees its connection no sooner
    /// than it ends. Of the others, `limit` stay: those not answered yet go first (they cost the least), then
    /// the newest (the oldest are furthest into their segments). `sparingNearlySent` false: none stays beside the
    /// limit (connections handed to another source, such as a mirror, must be free now).
    package func transfersToStop(
        _ transfers: [(id: TransferID, answered: Bool)], keeping limit: Int, sparingNearlySent: Bool = true
    ) -> [TransferID] {
        let nearlySent = Set(
            transfers.map(\.id).filter { id in
                sparingNearlySent && self.transfers[id].map { $0.requestEnd - $0.position <= Self.nearlySent } ?? false
            })
        let rest = transfers.filter { !nearlySent.contains($0.id) }
        return rest.sorted { ($0.answered ? 0 : 1, $0.id) < ($1.answered ? 0 : 1, $1.id) }
            .dropFirst(max(0, limit)).map(\.id)
    }

    /// A request with this little left is not cut (see `transfersToStop`): nginx sends up to 2 MiB of each
    /// response at once, and even at 100 KiB/s its first 100 KiB.
    static let nearlySent: Int64 = 128 << 10

    struct Segment {
        let id: Int
        var next: Int64
        var end: Int64
        var holders: [TransferID] = []
        /// Its failures, and when it may be asked for again.
        var retries: Retries
        /// Asked for by `startSoon`: goes to the next free connection before any other idle segment.
        var urgent = false
        /// A reader waits right where its silent holder is: a fresh request races the holder (see `hurry`).
        var raceSoon = false
        var remaining: Int64 { end - next }
        var range: Range<Int64> { next..<end }
    }

    struct Transfer {
        var segment: Int?
        var position: Int64
        var requestEnd: Int64
        var wrote = false
        var startedAt: Double
    }

    /// Playback order (see `Playback`); nil: the file in any order.
    package var playback: Playback?

    /// The file's length; nil while unknown (a chunked response), set when the only transfer finishes.
    package private(set) var total: Int64?
    /// False when the server cannot serve ranges: one transfer of the whole file, restarted from 0 on failure.
    package let rangeRequests: Bool
    package let configuration: Configuration
    package private(set) var completed: ByteRangeSet
    /// Failed transfers so far.
    package private(set) var retries = 0
    /// The server's `Retry-After` that made `transferEnded` give up, asking for longer than `retry.maxRetryAfter`.
    package private(set) var refusedRetryAfter: Double?
    /// What every response of this origin sends at once before it pauses: requests ask for no more.
    package private(set) var bursts: ResponseBursts
    /// How fast each transfer goes, and what is typical: which to race, which to replace.
    var rates: TransferRates
    /// When to race a holder, and which transfer gives way to urgent work.
    let racing: Racing

    // Internal, not private: the readers' entry points (SegmentScheduler+Readers.swift) use them.
    var segments: [Segment] = []
    var transfers: [TransferID: Transfer] = [:]
    private var orphans: [TransferID] = []
    private var nextTransferID = 0
    private var nextSegmentID = 0
    private var finishedUnknownLength = false

    package init(
        total: Int64?, rangeRequests: Bool, completed: ByteRangeSet = ByteRangeSet(),
        configuration: Configuration = Configuration()
    ) {
        self.total = total
        self.rangeRequests = rangeRequests && total != nil
        self.configuration = configuration
        bursts = ResponseBursts(
            rangeRequests: self.rangeRequests, learns: configuration.learnsBursts,
            firstRequestSize: configuration.firstRequestSize, gap: configuration.burstGap,
            minimum: configuration.minimumBurst, alignment: configuration.alignment)
        rates = TransferRates(
            slowFactor: configuration.slowFactor, slowSeconds: configuration.slowSeconds, replacesSlow: self.rangeRequests)
        racing = Racing(
            afterSeconds: configuration.raceAfterSeconds, factor: configuration.raceFactor, hurryGap: configuration.hurryGap,
            block: configuration.alignment)
        if self.rangeRequests, let total {
            self.completed = completed
            for gap in completed.gaps(in: 0..<total) { addSegment(gap) }
        } else {
            self.completed = ByteRangeSet()
            if total != 0 { addSegment(0..<(total ?? .max)) }
        }
    }

    package var isComplete: Bool {
        total == nil ? finishedUnknownLength : segments.isEmpty
    }

    /// Makes a transfer that already asked for the bytes from `offset` to the end of the file (`--playback-order`'s
    /// tail, asked for before the length was known) the holder of them; nil when they are taken or done.
    package mutating func adopt(from offset: Int64, now: Double) -> TransferID? {
        guard let total, offset < total,
            let index = segments.firstIndex(where: { $0.next <= offset && offset < $0.end }),
            segments[index].end == total
        else { return nil }
        var piece = index
        if offset > segments[index].next {
            piece = split(index, at: offset)  // whoever holds the first part stops at `offset`
        } else if !segments[index].holders.isEmpty {
            return nil
        }
        let id = makeTransferID()
        hold(piece, by: id, requestEnd: total, now: now)
        return id
    }

    /// Makes a transfer that is already running (the probe, whose bytes start at `offset`) the holder
    /// of the segment that starts there; nil when none does or it is held.
    package mutating func adopt(at offset: Int64 = 0, requestedUpTo requestEnd: Int64?, now: Double) -> TransferID? {
        guard let index = segments.firstIndex(where: { $0.next == offset && $0.holders.isEmpty }) else { return nil }
        let id = makeTransferID()
        hold(index, by: id, requestEnd: requestEnd ?? .max, now: now)
        return id
    }

    /// The next request to start on a free connection, or nil when there is nothing worth starting.
    ///
    /// In order: a race where a reader waits at its holder, an idle segment `startSoon` asked for, one in
    /// a playback window, a cut of the window into chunks, any idle segment, the second half of the
    /// largest segment, a race of a straggler.
    package mutating func assign(now: Double) -> Assignment? {
        if let index = segments.firstIndex(where: { $0.raceSoon }) {
            segments[index].raceSoon = false
            if segments[index].holders.count == 1 { return start(on: index, now: now, isRace: true) }
        }
        let windows = playbackWindows
        let windowsOnly = playback?.windowsOnly == true
        func rank(_ index: Int) -> Int? {
            if segments[index].urgent { return 0 }
            if windows.contains(where: { $0.overlaps(segments[index].range) }) { return 1 }
            return windowsOnly ? nil : 2
        }
        let idle = segments.indices.compactMap { index -> (index: Int, rank: Int)? in
            guard segments[index].holders.isEmpty, segments[index].retries.notBefore <= now, let rank = rank(index) else { return nil }
            return (index, rank)
        }
        let first = idle.min { ($0.rank, segments[$0.index].next) < ($1.rank, segments[$1.index].next) }
        // A window still to be cut into chunks goes before idle work outside every window.
        let windowCut = first.map { $0.rank < 2 } == true || !rangeRequests ? nil : playbackCut(windows)
        if let pick = first, windowCut == nil {
            segments[pick.index].urgent = false
            var index = pick.index
            // A reader waiting (rank 0) or near gets chunks too: each comes in a response's first burst, where one
            // large request would wait for a throttled origin's next second.
            // A waiting reader's window is the one holding the byte it waits for, not another reader's further on.
            let window =
                pick.rank == 0
                ? windows.first { $0.contains(segments[index].next) } : windows.first { $0.overlaps(segments[index].range) }
            if pick.rank <= 1, let window {
                // Start where the reader needs bytes, not before.
                if let cut = cut(index, at: window.lowerBound, roundingUp: false) { index = cut }
                endRequest(index, in: window)
            }
            return start(on: index, now: now, isRace: false)
        }
        if let cut = windowCut, let index = segments.firstIndex(where: { $0.next < cut && cut < $0.end }) {
            let piece = split(index, at: cut)
            if let window = windows.first(where: { $0.contains(cut) }) { endRequest(piece, in: window) }
            return start(on: piece, now: now, isRace: false)
        }
        guard rangeRequests, !windowsOnly else { return nil }
        let held = segments.indices.filter { !segments[$0].holders.isEmpty }
        if let largest = held.max(by: { segments[$0].remaining < segments[$1].remaining }),
            let mid = splitPoint(of: segments[largest])
        {
            return start(on: split(largest, at: mid), now: now, isRace: false)
        }
        let straggler = held.filter { index in
            let segment = segments[index]
            return segment.holders.count == 1
                && racing.isStraggler(
                    remaining: segment.remaining, rate: rates.rate(of: segment.holders[0], now: now), typicalRate: rates.typicalSoFar)
        }.max { segments[$0].remaining < segments[$1].remaining }
        if let straggler { return start(on: straggler, now: now, isRace: true) }
        return nil
    }

    /// The range transfer `id` asks for once the other assignments of the same turn have split its
    /// segment: it ends where its segment now ends. A request sent before those splits would ask past
    /// them, and a server that sends each response's first chunk at once (nginx's `limit_rate`, CDNs)
    /// sends those bytes too, to be dropped: for a small file opened over many connections, most of it
    /// twice. Nil without range requests.
    package mutating func settledRange(of id: TransferID) -> Range<Int64>? {
        guard rangeRequests, var transfer = transfers[id], let segmentID = transfer.segment,
            let segment = segments.first(where: { $0.id == segmentID })
        else { return nil }
        transfer.requestEnd = min(transfer.requestEnd, segment.end)
        transfers[id] = transfer
        return transfer.position..<transfer.requestEnd
    }

    /// Accounts for `count` bytes that transfer `id` just received, and says which of them to write.
    package mutating func receive(_ id: TransferID, count: Int64, now: Double) -> Receipt {
        guard var transfer = transfers[id], let segmentID = transfer.segment,
            let index = segments.firstIndex(where: { $0.id == segmentID })
        else { return Receipt(write: nil, stop: true) }
        let chunk = transfer.position..<(transfer.position + count)
        let freshRequest = bursts.received(id, count: count, left: transfer.requestEnd - chunk.upperBound, now: now)
        rates.received(id, count: count)
        transfer.position = chunk.upperBound
        var segment = segments[index]
        var receipt = Receipt(write: nil, stop: false)
        // Holders never run ahead of `next`, so only the chunk's tail can be new.
        let start = max(chunk.lowerBound, segment.next)
        let write = start..<max(start, min(chunk.upperBound, segment.end))
        if !write.isEmpty {
            receipt.skip = write.lowerBound - chunk.lowerBound
            segment.next = write.upperBound
            completed.insert(write)
            transfer.wrote = true
            receipt.write = write
        } else if transfer.wrote, segment.holders.count > 1 {
            receipt.stop = true  // overtaken by a racer: the other holder is faster
        }
        if transfer.position >= segment.end { receipt.stop = transfer.position < transfer.requestEnd }
        if freshRequest { receipt.stop = true }
        transfers[id] = transfer
        segments[index] = segment
        if segment.remaining == 0, total != nil {
            segments.remove(at: index)
            for holder in segment.holders where holder != id {
                transfers[holder]?.segment = nil
                orphans.append(holder)
            }
            transfers[id]?.segment = nil
        } else if receipt.stop {
            detach(id)
        }
        return receipt
    }

    /// Notes the responses that paused since their last chunk (see `ResponseBursts`), and returns those that
    /// paused after their burst with more than a burst still to come: a fresh request gets it sooner.
    /// Abort them, then call `transferEnded`. Call it on every turn of the loop: a pause is over by the
    /// time its next chunk shows it.
    package mutating func restartPaused(now: Double) -> [TransferID] {
        let transfers = self.transfers
        let restart = bursts.restartPaused(now: now) { id in
            transfers[id].flatMap { transfer in transfer.segment.map { _ in transfer.requestEnd - transfer.position } }
        }
        for id in restart { detach(id) }
        return restart
    }

    /// Whole segments from now on: an origin that fast on one connection has no burst worth a request's
    /// round trip, and short requests would wait behind the long one in each turn of the I/O loop.
    package mutating func requestWholeSegments() { bursts.requestWholeSegments() }

    /// Transfers whose segment was finished by another holder: abort them, then call `transferEnded`.
    package mutating func takeOrphans() -> [TransferID] {
        defer { orphans.removeAll() }
        return orphans
    }

    /// Must be called once for every transfer when it is over. Returns false when a segment ran out of retries,
    /// or the server asked it to wait longer than the policy waits (`refusedRetryAfter`).
    package mutating func transferEnded(_ id: TransferID, outcome: Outcome, now: Double) -> Bool {
        guard let transfer = transfers.removeValue(forKey: id) else { return true }
        rates.ended(id, now: now)
        let index = transfer.segment.flatMap { segmentID in segments.firstIndex { $0.id == segmentID } }
        // All it asked for, when it asked for a burst's worth; otherwise the server ended the body early
        // without an error: as good as a failure.
        let whole = outcome == .finished && transfer.position >= transfer.requestEnd
        bursts.ended(id, whole: whole && index != nil && total != nil)
        if total == nil, outcome == .finished {
            total = transfer.position
            completed = ByteRangeSet([0..<transfer.position])
            segments.removeAll()
            finishedUnknownLength = true
            return true
        }
        guard let index else { return true }
        segments[index].holders.removeAll { $0 == id }
        let failed: Bool
        let retryAfter: Double?
        switch outcome {
        case .failed(let after):
            failed = true
            retryAfter = after
        case .finished:
            failed = !whole
            retryAfter = nil
        case .stopped:
            failed = false
            retryAfter = nil
        }
        guard failed else { return true }
        retries += 1
        guard segments[index].holders.isEmpty else { return true }
        if !rangeRequests {
            segments[index].next = 0
            completed = ByteRangeSet()
        }
        let verdict = segments[index].retries.failed(
            retryAfter: retryAfter, now: now, jitter: Double.random(in: 0..<1), afterProgress: transfer.wrote)
        switch verdict {
        case .retry: return true
        case .exhausted: return false
        case .waitTooLong(let wait):
            refusedRetryAfter = wait
            return false
        }
    }

    /// Measures each transfer's rate once a second; returns those far slower than their peers, to be replaced.
    package mutating func tick(now: Double) -> [TransferID] {
        let (transfers, segments) = (self.transfers, self.segments)
        let slow = rates.tick(now: now) { id in
            transfers[id]?.segment.flatMap { segmentID in segments.first { $0.id == segmentID }?.remaining }
        }
        for id in slow { detach(id) }
        return slow
    }

    /// Takes a transfer off its segment, which waits for the next free connection; the engine then stops it.
    package mutating func release(_ id: TransferID) { detach(id) }

    /// Missing byte ranges that no transfer is fetching, in file order; for progress maps and tests.
    package var segmentRanges: [Range<Int64>] {
        segments.map { $0.next..<$0.end }.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// The number of transfers holding each segment, in file order; for tests.
    package var holdersPerSegment: [Int] {
        segments.sorted { $0.next < $1.next }.map(\.holders.count)
    }

    // MARK: - Private

    private mutating func makeTransferID() -> TransferID {
        nextTransferID += 1
        return TransferID(nextTransferID)
    }

    private mutating func addSegment(_ range: Range<Int64>) {
        nextSegmentID += 1
        segments.append(
            Segment(id: nextSegmentID, next: range.lowerBound, end: range.upperBound, retries: Retries(policy: configuration.retry)))
    }

    private mutating func start(on index: Int, now: Double, isRace: Bool) -> Assignment {
        let id = makeTransferID()
        let segment = segments[index]
        let end = bursts.nextRequestSize.map { min(segment.end, segment.next + $0) } ?? segment.end
        hold(index, by: id, requestEnd: end, now: now, asking: end - segment.next)
        let range = rangeRequests ? segment.next..<end : nil
        return Assignment(transfer: id, range: range, isRace: isRace)
    }

    /// `asking`: the request was sized by the bursts (see `ResponseBursts.started`).
    private mutating func hold(_ index: Int, by id: TransferID, requestEnd: Int64, now: Double, asking: Int64? = nil) {
        segments[index].holders.append(id)
        transfers[id] = Transfer(segment: segments[index].id, position: segments[index].next, requestEnd: requestEnd, startedAt: now)
        bursts.started(id, asking: asking)
        rates.started(id, now: now)
    }

    /// Releases a transfer's claim; its segment waits for the next free connection.
    private mutating func detach(_ id: TransferID) {
        guard let segmentID = transfers[id]?.segment else { return }
        transfers[id]?.segment = nil
        if let index = segments.firstIndex(where: { $0.id == segmentID }) {
            segments[index].holders.removeAll { $0 == id }
        }
    }

    /// Splits segment `index` at `offset` (on a block boundary) when that leaves both parts non-empty;
    /// returns the index of the new second part.
    mutating func cut(_ index: Int, at offset: Int64, roundingUp: Bool) -> Int? {
        let point = offset.aligned(to: configuration.alignment, roundingUp: roundingUp)
        guard point > segments[index].next, point < segments[index].end else { return nil }
        return split(index, at: point)
    }

    /// Ends segment `index` at `point`; what followed becomes a new, idle segment, whose index it returns.
    mutating func split(_ index: Int, at point: Int64) -> Int {
        let tail = point..<segments[index].end
        segments[index].end = point
        addSegment(tail)
        return segments.count - 1
    }

    private func splitPoint(of segment: Segment) -> Int64? {
        guard segment.remaining >= 2 * configuration.minSplitSize else { return nil }
        let middle = segment.next + segment.remaining / 2
        let aligned = middle - middle % configuration.alignment
        return aligned > segment.next + configuration.minSplitSize / 2 ? aligned : middle
    }
}
