import Testing

@testable import VFetchCore

/// What an origin sends before it pauses, learned from the responses' chunks and pauses alone.
@Suite struct ResponseBurstsTests {
    static let mib: Int64 = 1 << 20

    func bursts(rangeRequests: Bool = true, learns: Bool = true) -> ResponseBursts {
        ResponseBursts(
            rangeRequests: rangeRequests, learns: learns, firstRequestSize: 2 * Self.mib, gap: 0.3, minimum: 256 << 10,
            alignment: 64 << 10)
    }

    /// Response `id` delivers `bytes` in 64 KiB chunks over 0.02 s from `start`, with nothing left to go.
    func deliver(_ bursts: inout ResponseBursts, _ id: Int, _ bytes: Int64, from start: Double) {
        let chunks = bytes / (64 << 10)
        for index in 0..<chunks {
            let now = start + 0.02 * Double(index) / Double(chunks)
            let fresh = bursts.received(TransferID(id), count: 64 << 10, left: 0, now: now)
            #expect(!fresh, "nothing left to ask for")
        }
    }

    /// Response `id` starts, asking for `asking` bytes (nil: not sized by the bursts), and delivers `bytes`.
    func respond(_ bursts: inout ResponseBursts, _ id: Int, _ bytes: Int64, asking: Int64? = nil, from start: Double = 0) {
        bursts.started(TransferID(id), asking: asking)
        deliver(&bursts, id, bytes, from: start)
    }

    /// Three responses of the current size that come whole without a pause.
    func threeWhole(_ bursts: inout ResponseBursts, from first: Int) throws {
        let size = try #require(bursts.requestSize)
        for id in first..<first + 3 {
            respond(&bursts, id, size, asking: size)
            bursts.ended(TransferID(id), whole: true)
        }
    }

    @Test func requestsAskForTheFirstSizeOnlyWhenLearningWithRanges() {
        #expect(bursts().nextRequestSize == 2 * Self.mib)
        #expect(bursts(rangeRequests: false).nextRequestSize == nil)
        #expect(bursts(learns: false).nextRequestSize == nil)
    }

    @Test func threeResponsesPausingAfterTheSameBytesMakeTheBurst() {
        var bursts = bursts()
        for id in 1...3 { respond(&bursts, id, Self.mib, asking: 2 * Self.mib) }
        #expect(bursts.restartPaused(now: 0.2) { _ in Self.mib }.isEmpty)
        #expect(bursts.burst == nil, "0.2 s is no pause yet")
        #expect(bursts.restartPaused(now: 0.5) { _ in Self.mib }.isEmpty, "no more than a burst to go")
        #expect(bursts.burst == Self.mib)
        #expect(bursts.nextRequestSize == Self.mib)
    }

    @Test func aPauseSeenByTheNextChunkCounts() {
        var bursts = bursts()
        for id in 1...3 {
            respond(&bursts, id, Self.mib, asking: 2 * Self.mib)
            _ = bursts.received(TransferID(id), count: 64 << 10, left: 0, now: 1)
        }
        #expect(bursts.burst == Self.mib)
    }

    @Test func burstsOfSomewhatDifferentSizesGiveTheSmallest() {
        var bursts = bursts()
        // How much of nginx's first chunk the socket took varies from response to response.
        let sizes: [Int64] = [2 * Self.mib, 3 * Self.mib / 2, 15 * Self.mib / 8]
        for (id, size) in sizes.enumerated() { respond(&bursts, id, size, asking: 2 * Self.mib) }
        _ = bursts.restartPaused(now: 0.5) { _ in 0 }
        #expect(bursts.burst == 3 * Self.mib / 2)
    }

    @Test func oneStalledResponseIsNoBurst() {
        var bursts = bursts()
        respond(&bursts, 1, Self.mib, asking: 2 * Self.mib)
        _ = bursts.restartPaused(now: 1) { _ in Self.mib }
        #expect(bursts.burst == nil)
        #expect(bursts.nextRequestSize == 2 * Self.mib)
    }

    @Test func pausesUnderTheMinimumOrWithoutLearningAreNoBurst() {
        var small = bursts()
        for id in 1...3 { respond(&small, id, 128 << 10, asking: 2 * Self.mib) }
        _ = small.restartPaused(now: 1) { _ in 0 }
        #expect(small.burst == nil)
        var blind = bursts(learns: false)
        for id in 1...3 { respond(&blind, id, Self.mib, asking: 2 * Self.mib) }
        _ = blind.restartPaused(now: 1) { _ in 0 }
        #expect(blind.burst == nil)
    }

    @Test func aLongResponsePastItsBurstWantsAFreshRequest() {
        var bursts = bursts()
        for id in 1...4 { respond(&bursts, id, Self.mib) }
        // The first has more than a burst to go, the next two no more; the fourth is no longer asked for.
        let left: [TransferID: Int64] = [TransferID(1): 10 * Self.mib, TransferID(2): Self.mib, TransferID(3): Self.mib]
        let restarted = bursts.restartPaused(now: 0.5) { left[$0] }
        #expect(bursts.burst == Self.mib)
        #expect(restarted == [TransferID(1)])
        // A chunk past the burst says so too, while more than a burst is left.
        bursts.started(TransferID(5), asking: nil)
        let withinBurst = bursts.received(TransferID(5), count: Self.mib / 2, left: 4 * Self.mib, now: 1)
        let aBurstToGo = bursts.received(TransferID(5), count: Self.mib / 2, left: Self.mib, now: 1)
        let pastBurst = bursts.received(TransferID(5), count: 64 << 10, left: 2 * Self.mib, now: 1)
        #expect(!withinBurst && !aBurstToGo && pastBurst)
    }

    @Test func withoutRangesNothingIsAskedForAgain() {
        var bursts = bursts(rangeRequests: false)
        for id in 1...3 { respond(&bursts, id, Self.mib) }
        #expect(bursts.restartPaused(now: 0.5) { _ in 10 * Self.mib }.isEmpty)
        #expect(bursts.burst == Self.mib)
    }

    @Test func pausesAreLookedForAFewTimesAGapNotEveryTurn() {
        var bursts = bursts()
        for id in 1...4 { respond(&bursts, id, Self.mib, from: 0.08) }
        let left: (TransferID) -> Int64? = { _ in 10 * Self.mib }
        #expect(bursts.restartPaused(now: 0.35, left: left).isEmpty)  // 0.25 s of silence
        #expect(bursts.restartPaused(now: 0.4, left: left).isEmpty)  // too soon to look again
        #expect(bursts.restartPaused(now: 0.45, left: left).count == 4)
    }

    @Test func wholeResponsesDoubleTheSizeOnceALargerOneDoesNotPause() throws {
        var bursts = bursts()
        try threeWhole(&bursts, from: 1)
        #expect(bursts.nextRequestSize == 4 * Self.mib)
        bursts.started(TransferID(4), asking: 4 * Self.mib)
        #expect(bursts.nextRequestSize == 2 * Self.mib, "one size probe at a time")
        deliver(&bursts, 4, 4 * Self.mib, from: 0)
        bursts.ended(TransferID(4), whole: true)
        #expect(bursts.requestSize == 4 * Self.mib)
        #expect(bursts.nextRequestSize == 4 * Self.mib, "three whole ones again before the next probe")
    }

    @Test func aLargerRequestThatPausesKeepsTheSize() throws {
        var bursts = bursts()
        try threeWhole(&bursts, from: 1)
        bursts.started(TransferID(4), asking: 4 * Self.mib)
        deliver(&bursts, 4, 2 * Self.mib, from: 0)
        deliver(&bursts, 4, 2 * Self.mib, from: 0.6)  // nginx at 4 MiB/s: 2 MiB at once, then a pause
        bursts.ended(TransferID(4), whole: true)
        try threeWhole(&bursts, from: 5)
        #expect(bursts.nextRequestSize == 2 * Self.mib)
    }

    @Test func aShortOrIncompleteResponseTeachesNothing() throws {
        var bursts = bursts()
        try threeWhole(&bursts, from: 1)
        // Cut short by a split: asked for less than the probe size.
        bursts.started(TransferID(4), asking: Self.mib)
        #expect(bursts.nextRequestSize == 4 * Self.mib, "a request cut to 1 MiB probes nothing")
        bursts.started(TransferID(5), asking: 4 * Self.mib)
        deliver(&bursts, 5, 4 * Self.mib, from: 0)
        bursts.ended(TransferID(5), whole: false)
        #expect(bursts.requestSize == 2 * Self.mib)
    }

    @Test func sizesDoubleUpTo32MiBThenRequestsAskForAll() throws {
        var bursts = bursts()
        var id = 0
        var sizes: [Int64?] = []
        while let size = bursts.requestSize {
            try threeWhole(&bursts, from: id)
            id += 3
            bursts.started(TransferID(id), asking: 2 * size)
            deliver(&bursts, id, 2 * size, from: 0)
            bursts.ended(TransferID(id), whole: true)
            id += 1
            sizes.append(bursts.requestSize)
        }
        #expect(sizes == [4 * Self.mib, 8 * Self.mib, 16 * Self.mib, 32 * Self.mib, nil])
        #expect(bursts.nextRequestSize == nil)
    }

    @Test func anOriginFastOnOneConnectionGetsWholeSegments() throws {
        var bursts = bursts()
        try threeWhole(&bursts, from: 1)
        bursts.requestWholeSegments()
        #expect(bursts.nextRequestSize == nil)
        #expect(bursts.requestSize == nil)
    }
}
