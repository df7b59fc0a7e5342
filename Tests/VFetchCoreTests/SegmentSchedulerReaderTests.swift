import Testing

@testable import VFetchCore

/// The player cache's readers: windows at their positions, seeks, and `windowsOnly` prefetch.
@Suite struct SegmentSchedulerReaderTests {
    static let mib: Int64 = 1 << 20

    func unwrap<T>(_ value: T?, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        try #require(value, sourceLocation: sourceLocation)
    }

    func scheduler(windowsOnly: Bool = false) -> SegmentScheduler {
        var plan = SegmentScheduler(total: 64 * Self.mib, rangeRequests: true)
        plan.playback = SegmentScheduler.Playback(lookahead: 4 * Self.mib, chunk: Self.mib, windowsOnly: windowsOnly)
        return plan
    }

    @Test func aReaderInTheMiddleGetsItsWindowChunkByChunkBeforeTheRest() throws {
        var plan = scheduler()
        _ = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        plan.playback?.positions = [40 * Self.mib + 100]
        #expect(plan.playbackWindows == [40 * Self.mib + 100..<44 * Self.mib + 100])
        var starts: [Int64] = []
        for _ in 0..<6 { starts.append(try unwrap(plan.assign(now: 0)).range!.lowerBound) }
        // Cut at the reader's block, then block by block near the reader, each on its own connection.
        #expect(starts == (0..<6).map { 40 * Self.mib + Int64($0) * (64 << 10) })
    }

    /// The probe was cut where the reader's first bytes ended and the reader waits for the next: a throttled
    /// origin sends each response's first burst at once (nginx at 100 KiB/s: 100 KiB), so the bytes it waits
    /// for are asked for in small chunks over several connections, not in one request that would stall.
    @Test func theBytesAReaderWaitsForComeInChunksNotOneLargeRequest() throws {
        var plan = scheduler()
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let cut: Int64 = 64 << 10
        _ = plan.receive(probe, count: cut, now: 0.01)
        plan.release(probe)
        _ = plan.transferEnded(probe, outcome: .stopped, now: 0.01)
        plan.playback?.positions = [cut]
        plan.startSoon(at: cut)
        var ranges: [Range<Int64>] = []
        for _ in 0..<4 { ranges.append(try unwrap(plan.assign(now: 0.02)).range!) }
        #expect(ranges.first?.lowerBound == cut)
        #expect(ranges.allSatisfy { $0.count <= 128 << 10 }, "\(ranges)")
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
    }

    @Test func aSeekMovesTheWindowAndPreemptsWorkOutsideIt() throws {
        var plan = scheduler()
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        plan.playback?.positions = [0]
        var window: [TransferID] = [probe]
        var next = try unwrap(plan.assign(now: 0))
        while next.range!.lowerBound < 4 * Self.mib {
            window.append(next.transfer)
            next = try unwrap(plan.assign(now: 0))
        }
        let background = next  // the rest of the file, split
        #expect(background.range!.lowerBound > 4 * Self.mib)
        #expect(plan.transferToPreempt == nil, "every chunk of the window has a transfer")
        // The reader seeks to 20 MiB: the window there has no transfer, so one outside it must go,
        // and the one furthest into the file goes first.
        plan.playback?.positions = [20 * Self.mib]
        let victim = try unwrap(plan.transferToPreempt)
        #expect(!window.contains(victim) || victim == window.last)
        plan.release(victim)
        _ = plan.transferEnded(victim, outcome: .stopped, now: 0.1)
        let atSeek = try unwrap(plan.assign(now: 0.1))
        #expect(atSeek.range!.lowerBound == 20 * Self.mib)
    }

    @Test func theTransferBringingAWindowsFirstBytesIsNeverPreempted() throws {
        var plan = scheduler()  // no reader: the window starts at the first missing byte
        let head = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        _ = plan.receive(head, count: 16 << 10, now: 0.01)
        // The head says where the index is while it is the only transfer (the tail's request has not
        // answered): the index waits for a free connection rather than take the head's.
        plan.startSoon(at: 60 * Self.mib, exactly: true)
        #expect(plan.transferToPreempt == nil)
        let index = try unwrap(plan.assign(now: 0.02))
        #expect(index.range?.lowerBound == 60 * Self.mib)
        // Urgent work again, with a transfer further in: that one goes.
        plan.startSoon(at: 40 * Self.mib, exactly: true)
        #expect(plan.transferToPreempt == index.transfer)
    }

    @Test func windowsOnlyFetchesNothingBeyondTheReadersWindows() throws {
        var plan = scheduler(windowsOnly: true)
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        // No reader: the probe stops at its first block, nothing else starts.
        plan.trimToWindows()
        #expect(plan.assign(now: 0) == nil)
        let receipt = plan.receive(probe, count: 64 << 10, now: 0.1)
        #expect(receipt.write == 0..<(64 << 10) && receipt.stop)
        _ = plan.transferEnded(probe, outcome: .stopped, now: 0.1)
        // A reader at 30 MiB: exactly its window is fetched, chunk by chunk, then nothing more.
        plan.playback?.positions = [30 * Self.mib]
        var ranges: [Range<Int64>] = []
        while let assignment = plan.assign(now: 0.2) { ranges.append(assignment.range!) }
        #expect(ranges.first?.lowerBound == 30 * Self.mib)
        #expect(ranges.map(\.upperBound).max() == 34 * Self.mib)
        // The window whole, in chunks that grow from a block to at most 1 MiB (the last one cut by its end).
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        #expect(zip(sorted, sorted.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        #expect(zip(sorted, sorted.dropFirst()).dropLast().allSatisfy { $0.count <= $1.count })
        #expect(sorted.first?.count == 64 << 10 && sorted.allSatisfy { $0.count <= Self.mib })
    }

    @Test func aBlockedReaderInAnIdleSegmentStartsAtItsOwnOffset() throws {
        var plan = SegmentScheduler(total: 64 * Self.mib, rangeRequests: true)
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        let second = try unwrap(plan.assign(now: 0))
        plan.release(second.transfer)
        _ = plan.transferEnded(second.transfer, outcome: .stopped, now: 0)
        plan.startSoon(at: 50 * Self.mib + 7)
        #expect(try unwrap(plan.assign(now: 0)).range == 50 * Self.mib..<64 * Self.mib)
        _ = probe
    }

    /// A reader waits for the very byte its holder fetches next, and the holder went silent: that response
    /// is past its burst (nginx then sends a second's worth a second later), so a fresh request races it
    /// from there, once, and whichever delivers first writes the bytes.
    @Test func aReaderWaitingAtItsHoldersNextByteGetsAFreshRequestRacingIt() throws {
        var plan = scheduler()
        let probe = try unwrap(plan.adopt(requestedUpTo: nil, now: 0))
        plan.playback?.positions = [0]
        _ = plan.receive(probe, count: 100_000, now: 0.01)  // the burst, then silence
        plan.hurry(100_000, now: 0.05)
        #expect(try unwrap(plan.assign(now: 0.05)).isRace == false, "a holder silent for a moment is not raced")
        plan.hurry(100_000, now: 0.15)
        let race = try unwrap(plan.assign(now: 0.15))
        #expect(race.isRace && race.range?.lowerBound == 100_000)
        plan.hurry(100_000, now: 0.4)
        #expect(try unwrap(plan.assign(now: 0.4)).isRace == false, "one race at a time")
        let fresh = plan.receive(race.transfer, count: 30_000, now: 0.41)
        #expect(fresh.write == 100_000..<130_000)
        let late = plan.receive(probe, count: 10_000, now: 1.0)
        #expect(late.write == nil)
    }
}
