import Testing

@testable import VFetchCore

@Suite struct SegmentSchedulerTests {
    static let mib: Int64 = 1 << 20

    /// `#require` cannot wrap a mutating call.
    func unwrap<T>(_ value: T?, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        try #require(value, sourceLocation: sourceLocation)
    }

    func ended(_ plan: inout SegmentScheduler, _ id: TransferID, outcome: SegmentScheduler.Outcome, now: Double) -> Bool {
        plan.transferEnded(id, outcome: outcome, now: now)
    }

    func scheduler(total: Int64 = 64 * mib, ranges: Bool = true) -> SegmentScheduler {
        SegmentScheduler(total: total, rangeRequests: ranges)
    }

    @Test func theProbeHoldsTheWholeFileAndIdleConnectionsSplitTheLargestRemainder() throws {
        var plan = scheduler()
        let probe = try unwrap(plan.adopt(requestedUpTo: 64 * Self.mib, now: 0))
        let second = try unwrap(plan.assign(now: 0))
        #expect(second.range == 32 * Self.mib..<64 * Self.mib)
        let third = try unwrap(plan.assign(now: 0))
        #expect(third.range == 16 * Self.mib..<32 * Self.mib)
        #expect(plan.segmentRanges == [0..<16 * Self.mib, 16 * Self.mib..<32 * Self.mib, 32 * Self.mib..<64 * Self.mib])
        // The probe asked for everything but must stop at its new end.
        var receipt = plan.receive(probe, count: 16 * Self.mib - 10, now: 0.1)
        #expect(receipt.write == 0..<16 * Self.mib - 10 && !receipt.stop)
        receipt = plan.receive(probe, count: 100, now: 0.2)
        #expect(receipt.write == 16 * Self.mib - 10..<16 * Self.mib)
        #expect(receipt.stop)
        #expect(plan.completed.ranges == [0..<16 * Self.mib])
    }

    /// A resumed download's probe asked from the first byte not saved: it holds the gap that starts there.
    @Test func aProbeFromTheFirstMissingByteHoldsTheGapThere() throws {
        var plan = SegmentScheduler(
            total: 64 * Self.mib, rangeRequests: true, completed: ByteRangeSet([0..<10 * Self.mib, 20 * Self.mib..<30 * Self.mib]))
        #expect(plan.adopt(at: 0, requestedUpTo: 64 * Self.mib, now: 0) == nil, "saved already")
        #expect(plan.adopt(at: 11 * Self.mib, requestedUpTo: 64 * Self.mib, now: 0) == nil, "not where a gap starts")
        let probe = try unwrap(plan.adopt(at: 10 * Self.mib, requestedUpTo: 64 * Self.mib, now: 0))
        #expect(plan.adopt(at: 10 * Self.mib, requestedUpTo: 64 * Self.mib, now: 0) == nil, "held")
        let receipt = plan.receive(probe, count: 11 * Self.mib, now: 0.1)
        #expect(receipt.write == 10 * Self.mib..<20 * Self.mib && receipt.stop, "it stops where the saved bytes begin")
    }

    @Test func aTailAskedForBeforeTheLengthTakesTheEndAndTheProbeStopsThere() throws {
        var plan = scheduler(total: 8 * Self.mib + 5)
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let start = 6 * Self.mib + 5  // the last 2 MiB, not on a block boundary
        let tail = try unwrap(plan.adopt(from: start, now: 0))
        #expect(plan.segmentRanges == [0..<start, start..<8 * Self.mib + 5])
        #expect(plan.receive(tail, count: 2 * Self.mib, now: 0.1).write == start..<8 * Self.mib + 5)
        let receipt = plan.receive(probe, count: 7 * Self.mib, now: 0.1)
        #expect(receipt.write == 0..<start && receipt.stop)
        #expect(plan.isComplete)
        // Bytes already held by another tail, or a range that does not reach the end, are not given twice.
        var other = scheduler(total: 8 * Self.mib)
        _ = try unwrap(other.adopt(requestedUpTo: nil, now: 0))
        _ = try unwrap(other.adopt(from: 6 * Self.mib, now: 0))
        #expect(other.adopt(from: 6 * Self.mib, now: 0) == nil)
        _ = try unwrap(other.assign(now: 0))  // splits the head
        #expect(other.adopt(from: 1 * Self.mib, now: 0) == nil)
    }

    /// A small file over many connections: each request of a turn, settled after the turn's splits, asks
    /// only for its own part, so no byte is asked for twice and each response ends instead of being cut.
    @Test func requestsSettledAfterTheTurnsSplitsAskForDisjointParts() throws {
        var configuration = SegmentScheduler.Configuration()
        configuration.minSplitSize = 64 << 10
        configuration.learnsBursts = true  // requests of 2 MiB, as the engine asks
        var plan = SegmentScheduler(total: 2 * Self.mib, rangeRequests: true, configuration: configuration)
        _ = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        var turn: [SegmentScheduler.Assignment] = []
        for _ in 0..<8 { turn.append(try unwrap(plan.assign(now: 0))) }
        #expect(turn[0].range == Self.mib..<2 * Self.mib, "asked for before the turn's other splits")
        let settled = turn.map { plan.settledRange(of: $0.transfer) }
        let ranges = try settled.map { try unwrap($0) }.sorted { $0.lowerBound < $1.lowerBound }
        for (a, b) in zip(ranges, ranges.dropFirst()) { #expect(a.upperBound <= b.lowerBound) }
        #expect(ranges.last?.upperBound == 2 * Self.mib)
        #expect(settled[0]!.upperBound < 2 * Self.mib, "the first request ends where the next part starts")
        // Delivering all it asked for ends the response: no stop, nothing dropped.
        let receipt = plan.receive(turn[0].transfer, count: Int64(settled[0]!.count), now: 0.1)
        #expect(receipt.write == settled[0] && !receipt.stop)
        #expect(plan.settledRange(of: TransferID(999)) == nil)
    }

    @Test func splitsStopAtTheMinimumSizeAndAlignToBlocks() throws {
        var plan = scheduler(total: 3 * Self.mib + 12345)
        _ = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let second = try unwrap(plan.assign(now: 0))
        #expect(second.range!.lowerBound % (64 << 10) == 0)
        // Each part is now under 2 MiB: nothing more to split, and no one is slow yet.
        #expect(plan.assign(now: 0) == nil)
    }

    @Test func everyByteIsWrittenExactlyOnceWhileARacerOvertakes() throws {
        var plan = scheduler(total: 4 * Self.mib)
        let slow = try unwrap(plan.adopt(requestedUpTo: 4 * Self.mib, now: 0))
        let fast = try unwrap(plan.assign(now: 0)).transfer  // 2..4 MiB
        let steady = try unwrap(plan.assign(now: 0)).transfer  // 1..2 MiB; the probe keeps 0..1 MiB
        var written = ByteRangeSet()
        func deliver(_ id: TransferID, _ count: Int64, _ now: Double) -> SegmentScheduler.Receipt {
            let receipt = plan.receive(id, count: count, now: now)
            if let range = receipt.write {
                #expect(written.gaps(in: range) == [range], "byte written twice")
                written.insert(range)
            }
            return receipt
        }
        _ = plan.tick(now: 0)
        _ = deliver(slow, 100_000, 0.5)
        _ = deliver(fast, Self.mib, 0.6)
        _ = deliver(steady, Self.mib / 2, 0.6)
        #expect(plan.tick(now: 1.0).isEmpty)  // typical rate: 512 KiB/s; the probe makes 100 kB/s
        #expect(deliver(fast, Self.mib, 1.2).stop == false)  // exactly its request: ends by itself
        #expect(deliver(steady, Self.mib / 2, 1.2).stop == false)
        #expect(ended(&plan, fast, outcome: .finished, now: 1.2))
        #expect(ended(&plan, steady, outcome: .finished, now: 1.2))
        // Nothing left to split: the straggler gets raced from its current position.
        let racer = try unwrap(plan.assign(now: 1.5))
        #expect(racer.isRace)
        #expect(racer.range == 100_000..<Self.mib)
        #expect(plan.holdersPerSegment == [2])
        _ = deliver(slow, 50_000, 1.6)  // the straggler still leads
        let catchUp = deliver(racer.transfer, 200_000, 1.7)  // its first 150 000 bytes are there already
        #expect(catchUp.write == 150_000..<300_000)
        #expect(catchUp.skip == 50_000)
        let lost = deliver(slow, 10_000, 1.8)  // overtaken: stop it
        #expect(lost.write == nil && lost.stop)
        _ = plan.transferEnded(slow, outcome: .stopped, now: 1.8)
        let rest = deliver(racer.transfer, Self.mib - 300_000, 2.0)
        #expect(!rest.stop)
        #expect(plan.isComplete)
        #expect(written.ranges == [0..<4 * Self.mib])
    }

    @Test func playbackOrderFetchesTheWindowChunkByChunkFirst() throws {
        var plan = scheduler(total: 64 * Self.mib)
        plan.playback = SegmentScheduler.Playback(lookahead: 4 * Self.mib, chunk: Self.mib)
        _ = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        var ranges: [Range<Int64>] = []
        while ranges.last.map({ $0.lowerBound < 4 * Self.mib }) ?? true {
            ranges.append(try unwrap(plan.assign(now: 0)).range!)
        }
        // The probe has the first block; the rest of the 4 MiB window follows in order, each request a
        // chunk of a quarter of its distance from the window's start (at least a block, at most 1 MiB);
        // then the rest of the file, from where the last chunk ends.
        let window = ranges.dropLast()
        #expect(window.first?.lowerBound == 64 << 10)
        for (chunk, next) in zip(window, ranges.dropFirst()) {
            #expect(chunk.upperBound == next.lowerBound)
            let block: Int64 = 64 << 10
            let quarter = chunk.lowerBound / 4 / block * block
            #expect(chunk.count == min(Self.mib, max(block, quarter)))
        }
        #expect(ranges.last!.upperBound == 64 * Self.mib)
    }

    /// A player that opens a file where each connection delivers 32 KiB/s (a far CDN, a busy origin)
    /// needs its first 512 KiB: chunked by distance they come over eight connections in 2 s, where
    /// 1 MiB chunks would take 16 s on one.
    @Test func theFirstWindowComesOverSeveralConnectionsAtOnce() throws {
        var plan = scheduler(total: 64 * Self.mib)
        plan.playback = SegmentScheduler.Playback(lookahead: 8 * Self.mib, chunk: Self.mib)
        var running = [try unwrap(plan.adopt(requestedUpTo: nil, now: 0))]
        let needed = 0..<512 * Int64(1 << 10)
        var now = 0.0
        while !plan.completed.gaps(in: needed).isEmpty, now < 60 {
            while running.count < 32, let next = plan.assign(now: now) { running.append(next.transfer) }
            now += 0.125
            for id in running where plan.receive(id, count: 4 << 10, now: now).stop {
                _ = plan.transferEnded(id, outcome: .finished, now: now)
                running.removeAll { $0 == id }
            }
        }
        #expect(now <= 2.0)
    }

    @Test func startSoonSplitsAtTheOffsetAndGoesFirst() throws {
        var plan = scheduler(total: 64 * Self.mib)
        _ = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let tail = 63 * Self.mib + 12345
        plan.startSoon(at: tail)
        let next = try unwrap(plan.assign(now: 0))
        #expect(next.range == tail - tail % (64 << 10)..<64 * Self.mib)
        // A transfer about to reach the offset already: nothing to do.
        plan.startSoon(at: 1000)
        #expect(plan.segmentRanges.count == 2)
    }

    @Test func nearIsMeasuredInTimeNotBytes() throws {
        var plan = scheduler(total: 64 * Self.mib)
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        _ = plan.tick(now: 0)
        _ = plan.receive(probe, count: 4 * Self.mib, now: 1)
        _ = plan.tick(now: 1)  // 4 MiB/s
        // 1 MiB ahead at 4 MiB/s is a quarter of a second: it comes soon enough by itself.
        plan.startSoon(at: 5 * Self.mib)
        #expect(plan.segmentRanges.count == 1)
        // 8 MiB ahead is two seconds: split, to be fetched next.
        plan.startSoon(at: 12 * Self.mib)
        #expect(plan.segmentRanges == [4 * Self.mib..<12 * Self.mib, 12 * Self.mib..<64 * Self.mib])
    }

    @Test func aYoungStragglerIsRacedBeforeItsFirstTick() throws {
        var plan = scheduler(total: 4 * Self.mib)
        let ids = [
            try unwrap(plan.adopt(requestedUpTo: nil, now: 0)), try unwrap(plan.assign(now: 0)).transfer,
            try unwrap(plan.assign(now: 0)).transfer,
        ]
        _ = plan.tick(now: 0)
        for id in ids { _ = plan.receive(id, count: 256 << 10, now: 0.9) }
        _ = plan.tick(now: 1)  // typical: 256 KiB/s
        // A connection drops; its segment goes to a new transfer that lands on a slow connection.
        #expect(ended(&plan, ids[2], outcome: .failed(retryAfter: 0), now: 1.1))
        let young = try unwrap(plan.assign(now: 1.7))
        #expect(!young.isRace)
        _ = plan.receive(young.transfer, count: 20_000, now: 2.3)
        // 20 kB in 0.6 s, no tick yet: far under half the typical rate, with seconds of work left.
        let racer = try unwrap(plan.assign(now: 2.3))
        #expect(racer.isRace)
        #expect(racer.range?.lowerBound == young.range!.lowerBound + 20_000)
    }

    @Test func urgentWorkPreemptsTheTransferFurthestIntoTheFile() throws {
        var plan = scheduler(total: 64 * Self.mib)
        let first = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let second = try unwrap(plan.assign(now: 0)).transfer  // 32..64 MiB
        #expect(plan.transferToPreempt == nil)
        plan.startSoon(at: 60 * Self.mib)
        #expect(plan.transferToPreempt == second)
        plan.release(second)
        _ = plan.transferEnded(second, outcome: .stopped, now: 0)
        #expect(try unwrap(plan.assign(now: 0)).range?.lowerBound == 60 * Self.mib)
        #expect(plan.transferToPreempt == nil)
        _ = first
    }

    @Test func evenlySlowConnectionsAreNotRaced() throws {
        var plan = scheduler(total: 4 * Self.mib)
        let ids = [
            try unwrap(plan.adopt(requestedUpTo: nil, now: 0)), try unwrap(plan.assign(now: 0)).transfer,
            try unwrap(plan.assign(now: 0)).transfer,
        ]
        _ = plan.tick(now: 0)
        for id in ids { _ = plan.receive(id, count: 100_000, now: 0.5) }
        _ = plan.tick(now: 1)
        // All as slow as each other: a racer would be no faster, only duplicate bytes.
        #expect(plan.assign(now: 2) == nil)
    }

    @Test func aSlowTransferIsReplacedAndItsSegmentReassigned() throws {
        var plan = scheduler(total: 64 * Self.mib)
        var ids = [try unwrap(plan.adopt(requestedUpTo: nil, now: 0))]
        for _ in 0..<3 { ids.append(try unwrap(plan.assign(now: 0)).transfer) }
        _ = plan.tick(now: 0)
        var replaced: [TransferID] = []
        var slowWritten = ByteRangeSet()
        for second in 1...5 where replaced.isEmpty {
            for (index, id) in ids.enumerated() {
                let receipt = plan.receive(id, count: index == 3 ? 10_000 : 1_000_000, now: Double(second))
                if index == 3, let write = receipt.write { slowWritten.insert(write) }
            }
            replaced += plan.tick(now: Double(second))
        }
        #expect(replaced == [ids[3]])
        _ = plan.transferEnded(ids[3], outcome: .stopped, now: 4)
        // The released segment goes to the next free connection before any split.
        let fresh = try unwrap(plan.assign(now: 4))
        // Three seconds under 0.3x the median.
        #expect(slowWritten.count == 30_000)
        #expect(fresh.range?.lowerBound == slowWritten.ranges.last?.upperBound)
        #expect(!fresh.isRace)
    }

    /// Eight 1 MiB segments: the odd transfers fetch theirs at 2 MiB/s and end before the first tick
    /// measures them; the even ones crawl at 50 kB/s and are the only ones left. Returns the slow ones.
    func onlyStragglersLeft(_ plan: inout SegmentScheduler) throws -> [TransferID] {
        var ids = [try unwrap(plan.adopt(requestedUpTo: nil, now: 0))]
        for _ in 0..<7 { ids.append(try unwrap(plan.assign(now: 0)).transfer) }
        #expect(plan.segmentRanges.count == 8)
        _ = plan.tick(now: 0)
        for (index, id) in ids.enumerated() where index % 2 == 1 {
            #expect(plan.receive(id, count: Self.mib, now: 0.5).write?.count == Int(Self.mib))
            #expect(ended(&plan, id, outcome: .finished, now: 0.5))
        }
        let slow = ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        for id in slow { _ = plan.receive(id, count: 50_000, now: 0.9) }
        return slow
    }

    @Test func stragglersLeftAloneAtTheEndAreRaced() throws {
        var plan = scheduler(total: 8 * Self.mib)
        let slow = try onlyStragglersLeft(&plan)
        #expect(plan.tick(now: 1).isEmpty)  // the four that ended made 2 MiB/s
        // Nothing left to split: every free connection races a straggler.
        var raced: [Int64] = []
        while let racer = plan.assign(now: 1) {
            #expect(racer.isRace)
            raced.append(racer.range!.lowerBound)
        }
        #expect(raced.count == slow.count)
        #expect(raced.allSatisfy { $0 % Self.mib == 50_000 })
        #expect(plan.holdersPerSegment == [2, 2, 2, 2])
    }

    @Test func stragglersLeftAloneAtTheEndAreReplaced() throws {
        var plan = scheduler(total: 8 * Self.mib)
        let slow = try onlyStragglersLeft(&plan)
        var replaced: [TransferID] = []
        for second in 1...3 {
            if second > 1 { for id in slow { _ = plan.receive(id, count: 50_000, now: Double(second) - 0.1) } }
            // From the second tick on, the slow ones are the only rates measured.
            replaced += plan.tick(now: Double(second))
        }
        #expect(replaced == slow.sorted())
        for id in slow { _ = plan.transferEnded(id, outcome: .stopped, now: 3) }
        let fresh = try unwrap(plan.assign(now: 3))
        #expect(!fresh.isRace)
        #expect(fresh.range?.lowerBound == 150_000)
    }

    @Test func failuresBackOffAndRunOutOfRetries() throws {
        var config = SegmentScheduler.Configuration()
        config.retry = RetryPolicy(maxRetries: 2, baseDelay: 1, maxDelay: 10)
        var plan = SegmentScheduler(total: 1000, rangeRequests: true, configuration: config)
        var id = try unwrap(plan.assign(now: 0)).transfer
        #expect(ended(&plan, id, outcome: .failed(retryAfter: 5), now: 0))
        #expect(plan.assign(now: 4.9) == nil, "Retry-After is honoured")
        id = try unwrap(plan.assign(now: 5)).transfer
        #expect(ended(&plan, id, outcome: .failed(retryAfter: nil), now: 5))
        #expect(plan.assign(now: 5.4) == nil, "at least half the backoff")
        id = try unwrap(plan.assign(now: 7)).transfer
        #expect(ended(&plan, id, outcome: .failed(retryAfter: nil), now: 7) == false)
        #expect(plan.retries == 3)
    }

    @Test func progressResetsTheRetryCount() throws {
        var config = SegmentScheduler.Configuration()
        config.retry = RetryPolicy(maxRetries: 1, baseDelay: 0.01, maxDelay: 0.01)
        var plan = SegmentScheduler(total: 100, rangeRequests: true, configuration: config)
        for attempt in 0..<10 {
            let assignment = try unwrap(plan.assign(now: Double(attempt)))
            #expect(assignment.range?.lowerBound == Int64(attempt * 10))
            _ = plan.receive(assignment.transfer, count: 10, now: Double(attempt))
            #expect(ended(&plan, assignment.transfer, outcome: .failed(retryAfter: nil), now: Double(attempt)))
        }
        // Ten failures with one retry allowed, yet every attempt moved on: the file is complete.
        #expect(plan.isComplete)
        #expect(plan.completed.ranges == [0..<100])
    }

    @Test func withoutRangesAFailureRestartsFromZero() throws {
        var plan = scheduler(total: 1000, ranges: false)
        let first = try unwrap(plan.assign(now: 0))
        #expect(first.range == nil)
        _ = plan.receive(first.transfer, count: 400, now: 0)
        #expect(plan.assign(now: 0) == nil, "one connection only")
        #expect(ended(&plan, first.transfer, outcome: .failed(retryAfter: 0), now: 0))
        #expect(plan.completed.isEmpty)
        let again = try unwrap(plan.assign(now: 10))
        #expect(plan.receive(again.transfer, count: 1000, now: 10).write == 0..<1000)
        #expect(plan.isComplete)
    }

    @Test func unknownLengthEndsWhenTheStreamEnds() throws {
        var plan = SegmentScheduler(total: nil, rangeRequests: true)
        #expect(!plan.rangeRequests)
        let only = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        #expect(plan.receive(only, count: 5000, now: 0).write == 0..<5000)
        #expect(!plan.isComplete)
        #expect(ended(&plan, only, outcome: .finished, now: 1))
        #expect(plan.isComplete && plan.total == 5000)
    }

    @Test func anEarlyEndIsAFailureNotSuccess() throws {
        var plan = scheduler(total: 1000)
        let only = try unwrap(plan.assign(now: 0))
        _ = plan.receive(only.transfer, count: 600, now: 0)
        #expect(ended(&plan, only.transfer, outcome: .finished, now: 0))
        #expect(plan.retries == 1)
        #expect(try unwrap(plan.assign(now: 100)).range == 600..<1000)
    }

    @Test func resumesOnlyTheGaps() {
        let done = ByteRangeSet([0..<100, 300..<400])
        var plan = SegmentScheduler(total: 500, rangeRequests: true, completed: done)
        #expect(plan.segmentRanges == [100..<300, 400..<500])
        #expect(plan.assign(now: 0)?.range == 100..<300)
        #expect(plan.assign(now: 0)?.range == 400..<500)
    }

    @Test func anEmptyFileIsCompleteAtOnce() {
        var plan = scheduler(total: 0)
        #expect(plan.isComplete)
        #expect(plan.adopt(requestedUpTo: 0, now: 0) == nil)
    }

    @Test func backoffGrowsAndHonoursRetryAfter() {
        let policy = RetryPolicy(maxRetries: 5, baseDelay: 0.5, maxDelay: 4)
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 1) == 0.5)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 1) == 2)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 0) == 1)
        #expect(policy.delay(afterFailures: 10, retryAfter: nil, jitter: 1) == 4)
        #expect(policy.delay(afterFailures: 1, retryAfter: 7, jitter: 0.3) == 7)
    }

    @Test func fewerConnectionsStopThoseNotAnsweredThenTheNewest() {
        let transfers = [(TransferID(1), true), (TransferID(5), false), (TransferID(3), true), (TransferID(4), true)]
            .map { (id: $0.0, answered: $0.1) }
        let plan = SegmentScheduler(total: 64 << 20, rangeRequests: true)
        #expect(plan.transfersToStop(transfers, keeping: 2) == [TransferID(4), TransferID(5)])
        #expect(plan.transfersToStop(transfers, keeping: 4).isEmpty)
    }

    /// Chunks of 64 KiB near a reader: an origin has sent each whole at once, so none is cut when the count
    /// drops (cutting one loses its bytes and is asked for again); the large requests go.
    @Test func fewerConnectionsNeverCutARequestAlmostSent() throws {
        var plan = SegmentScheduler(total: 64 << 20, rangeRequests: true)
        plan.playback = SegmentScheduler.Playback(lookahead: 4 << 20, chunk: 1 << 20)
        plan.playback?.positions = [0]
        let adopted = plan.adopt(requestedUpTo: nil, now: 0)
        let probe = try #require(adopted)
        _ = plan.receive(probe, count: 64 << 10, now: 0.01)
        var assigned: [SegmentScheduler.Assignment] = []
        for _ in 0..<4 {
            let next = plan.assign(now: 0.01)
            assigned.append(try #require(next))
        }
        let small = assigned.filter { $0.range!.count <= 128 << 10 }.map(\.transfer)
        #expect(small.count >= 2)
        let all = ([probe] + assigned.map(\.transfer)).map { (id: $0, answered: false) }
        let stopped = plan.transfersToStop(all, keeping: 0)
        #expect(Set(stopped) == Set(all.map(\.id)).subtracting(small), "\(stopped) against the small \(small)")
    }

    @Test func theSplitFloorIsAMebibyteLessForSmallFilesAndNeverUnder64KiB() {
        typealias Configuration = SegmentScheduler.Configuration
        #expect(Configuration.minSplitSize(length: 1 << 30, connections: 32) == 1 << 20)
        #expect(Configuration.minSplitSize(length: nil, connections: 32) == 1 << 20)
        #expect(Configuration.minSplitSize(length: 8 << 20, connections: 16) == 256 << 10)
        #expect(Configuration.minSplitSize(length: 100_000, connections: 32) == 64 << 10)
        #expect(Configuration.minSplitSize(length: 1 << 30, connections: 32, asked: 4 << 20) == 4 << 20)
        #expect(Configuration.minSplitSize(length: 1 << 30, connections: 32, asked: 1000) == 64 << 10)
    }
}
