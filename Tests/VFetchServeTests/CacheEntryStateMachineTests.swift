import Testing
import VFetchCore

@testable import VFetchEngine
@testable import VFetchServe

/// Openers and waiters are numbers here: the machine hands back whatever the caller gave it.
typealias Machine = CacheEntry.StateMachine<Int, Int>

@Suite struct CacheEntryStateMachineTests {
    let start = ContinuousClock.now
    let url = "http://origin/movie.mp4"

    func machine(prefetch: ReaderDemand.Prefetch = .full, maxBytes: Int64 = 1 << 30) -> Machine {
        Machine(url: url, settings: .init(prefetch: prefetch, maxBytes: maxBytes, revalidateAfter: .seconds(60)))
    }

    func remote(length: Int64? = 1000) -> RemoteInfo {
        RemoteInfo(
            url: url, finalURL: url, length: length, acceptsRanges: true, etag: "\"v1\"", lastModified: nil,
            contentType: "video/mp4", outputPath: "/cache/entry", resumedBytes: 0)
    }

    func fetch(_ version: Int, prefetch: ReaderDemand.Prefetch = .full, positions: [Int: Int64] = [:]) -> Machine.FetchStart {
        Machine.FetchStart(version: version, url: url, publicOnly: false, prefetch: prefetch, positions: positions)
    }

    func opened(_ version: Int, length: Int64? = 1000) -> Machine.Opened {
        Machine.Opened(remote: remote(length: length), version: version)
    }

    /// A machine whose first fetch has probed the file and written `written`.
    func filling(_ written: ByteRangeSet = ByteRangeSet(), prefetch: ReaderDemand.Prefetch = .full) -> Machine {
        var machine = machine(prefetch: prefetch)
        _ = machine.open(url: url, publicOnly: false, opener: 0, now: start)
        _ = machine.probeAnswered(remote(), version: 1, now: start)
        _ = machine.bytesLanded(written, version: 1)
        return machine
    }

    func complete() -> Machine {
        var machine = filling()
        _ = machine.fetchEnded(version: 1, error: nil, now: start)
        return machine
    }

    // MARK: - Probing and filling

    @Test func theFirstReaderStartsAFetchWhoseProbeAnswersEveryOpener() {
        var machine = machine()
        #expect(machine.open(url: url, publicOnly: false, opener: 1, now: start) == .startFetch(fetch(1)))
        #expect(machine.open(url: url, publicOnly: false, opener: 2, now: start) == .wait, "one fetch at a time")
        #expect(machine.isFetching && machine.remote == nil && machine.version == 1)
        #expect(machine.probeAnswered(remote(), version: 1, now: start) == .answer([1, 2], opened(1), narrow: false))
        #expect(machine.remote == remote())
        #expect(machine.open(url: url, publicOnly: false, opener: 3, now: start) == .answer(opened(1)))
    }

    @Test func theLatestRequestSaysWhatTheNextFetchAsks() {
        var machine = machine()
        let signed = url + "?sig=2"
        guard case .startFetch(let start) = machine.open(url: signed, publicOnly: true, opener: 1, now: start) else {
            Issue.record("no fetch started")
            return
        }
        #expect(start.url == signed && start.publicOnly)
    }

    @Test func bytesWakeOnlyTheReadersTheyCover() {
        var machine = filling()
        let (first, arrived) = machine.readerArrived(at: 0)
        #expect(arrived == .setPosition(0, reader: first))
        #expect(machine.wait(for: 0, waiter: 10) == .fetchFirst(0, starting: nil))
        #expect(machine.bytesLanded(ByteRangeSet([0..<100]), version: 1) == .landed(wake: [10], growth: 100))
        #expect(machine.presentBytes(from: 40) == 60)
        #expect(machine.wait(for: 99, waiter: 11) == .ready)
        #expect(machine.readerMoved(first, to: 100) == .setPosition(100, reader: first))
        #expect(machine.wait(for: 100, waiter: 12) == .fetchFirst(100, starting: nil))
        #expect(machine.bytesLanded(ByteRangeSet([0..<100]), version: 1) == .landed(wake: [], growth: 0))
    }

    @Test func aSeekFarAwayGoesFirstAndWaitsForItsOwnBytes() {
        var machine = filling(ByteRangeSet([0..<100]))
        let (first, _) = machine.readerArrived(at: 0)
        // The player seeks: its connection closes and another asks for the far end.
        #expect(machine.readerLeft(first) == .leave(reader: first, idleCheck: nil))
        let (second, arrived) = machine.readerArrived(at: 900)
        #expect(arrived == .setPosition(900, reader: second))
        #expect(machine.presentBytes(from: 900) == 0)
        #expect(machine.wait(for: 900, waiter: 20) == .fetchFirst(900, starting: nil))
        #expect(machine.bytesLanded(ByteRangeSet([0..<200]), version: 1) == .landed(wake: [], growth: 100))
        #expect(machine.bytesLanded(ByteRangeSet([0..<200, 900..<950]), version: 1) == .landed(wake: [20], growth: 50))
        #expect(machine.present == [0..<200, 900..<950])
    }

    @Test func aFileLargerThanTheCacheIsFetchedOnlyForReaders() {
        var machine = machine(maxBytes: 500)
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        #expect(machine.probeAnswered(remote(), version: 1, now: start) == .answer([1], opened(1), narrow: true))
        #expect(machine.allow(.readersOnly) == .wake, "already narrowed")
    }

    // MARK: - Complete

    @Test func aCompletedFetchServesEveryByte() {
        var machine = filling(ByteRangeSet([0..<400]))
        #expect(machine.wait(for: 500, waiter: 1) == .fetchFirst(500, starting: nil))
        #expect(
            machine.fetchEnded(version: 1, error: nil, now: start)
                == .ended(wake: [1], failure: nil, openers: [], opened: .success(opened(1))))
        #expect(machine.isComplete && !machine.isFetching && !machine.isInUse)
        #expect(machine.presentBytes(from: 990) == 10 && machine.presentBytes(from: 1000) == 0)
        #expect(machine.wait(for: 999, waiter: 2) == .ready)
        #expect(machine.wait(for: 1000, waiter: 3) == .refuse, "past the end")
        #expect(machine.open(url: url, publicOnly: false, opener: 4, now: start + .seconds(59)) == .answer(opened(1)))
    }

    @Test func aCompleteEntryIsCheckedAgainAfterAMinuteButNotUnderItsReaders() {
        var machine = complete()
        let later = start + .seconds(61)
        let (reader, action) = machine.readerArrived(at: 0)
        #expect(action == .none, "no fetch to tell")
        #expect(machine.open(url: url, publicOnly: false, opener: 1, now: later) == .answer(opened(1)))
        #expect(machine.readerLeft(reader) == .none)
        #expect(machine.open(url: url, publicOnly: false, opener: 2, now: later) == .startFetch(fetch(2)))
        #expect(machine.version == 2 && machine.present.isEmpty, "nothing served until the probe answers")
        #expect(!machine.needsFileOnDisk(endingFetch: 2, with: .connectFailed("refused")), "this run knew it complete")
    }

    @Test func anUnreachableOriginLeavesACompleteEntryPlayable() {
        var machine = complete()
        let later = start + .seconds(61)
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: later)
        #expect(machine.wait(for: 0, waiter: 2) == .fetchFirst(0, starting: nil))
        #expect(
            machine.fetchEnded(version: 2, error: .connectFailed("refused"), now: later)
                == .ended(wake: [2], failure: .connectFailed("refused"), openers: [1], opened: .success(opened(2))))
        #expect(machine.isComplete)
        #expect(machine.open(url: url, publicOnly: false, opener: 3, now: later + .seconds(59)) == .answer(opened(2)))
    }

    @Test func aFileCompletedByAnEarlierRunIsServedOfflineFromItsManifest() {
        var machine = machine()
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        #expect(machine.needsFileOnDisk(endingFetch: 1, with: .connectFailed("refused")))
        #expect(!machine.needsFileOnDisk(endingFetch: 1, with: .httpStatus(404, url: url)))
        #expect(!machine.needsFileOnDisk(endingFetch: 2, with: .connectFailed("refused")), "not this fetch")
        #expect(
            machine.fetchEnded(version: 1, error: .connectFailed("refused"), fileOnDisk: remote(), now: start)
                == .ended(wake: [], failure: .connectFailed("refused"), openers: [1], opened: .success(opened(1))))
        #expect(machine.isComplete)
    }

    // MARK: - Failures

    @Test func anOriginFailureBeforeTheProbeFailsEveryOpener() {
        var machine = machine()
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        _ = machine.open(url: url, publicOnly: false, opener: 2, now: start)
        let error = DownloadError.httpStatus(404, url: url)
        #expect(
            machine.fetchEnded(version: 1, error: error, now: start)
                == .ended(wake: [], failure: error, openers: [1, 2], opened: .failure(error)))
        #expect(!machine.isInUse)
        #expect(machine.open(url: url, publicOnly: false, opener: 3, now: start) == .startFetch(fetch(2)), "asked again")
    }

    @Test func anOriginFailureWithReadersWaitingFailsThemAndKeepsTheBytes() {
        var machine = filling(ByteRangeSet([0..<300]))
        let (reader, _) = machine.readerArrived(at: 300)
        #expect(machine.wait(for: 300, waiter: 1) == .fetchFirst(300, starting: nil))
        #expect(machine.wait(for: 700, waiter: 2) == .fetchFirst(700, starting: nil))
        let error = DownloadError.transferFailed("connection reset")
        #expect(
            machine.fetchEnded(version: 1, error: error, now: start)
                == .ended(wake: [1, 2], failure: error, openers: [], opened: .failure(error)))
        #expect(machine.remote == remote() && machine.present == [0..<300], "what it wrote is still served")
        #expect(machine.version == 1 && machine.isInUse)
        // A reader at a missing byte starts the next fetch, told where every reader reads.
        #expect(machine.wait(for: 300, waiter: 3) == .fetchFirst(300, starting: fetch(2, positions: [reader: 300])))
        #expect(machine.present.isEmpty, "the new fetch may find another file")
        // The failed fetch's late reports change nothing.
        #expect(machine.bytesLanded(ByteRangeSet([0..<1000]), version: 1) == .none)
        #expect(machine.probeAnswered(remote(), version: 1, now: start) == .none)
        #expect(machine.fetchEnded(version: 1, error: nil, now: start) == .none)
    }

    @Test func aFetchThatEndsWithoutAProbeAnswerOpensNothing() {
        var machine = machine()
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        let noAnswer = DownloadError.badResponse("no answer from the origin")
        #expect(
            machine.fetchEnded(version: 1, error: nil, now: start)
                == .ended(wake: [], failure: nil, openers: [1], opened: .failure(noAnswer)))
        #expect(!machine.isComplete)
    }

    // MARK: - Readers leaving

    @Test func aReaderThatLeavesDuringProbingStopsTheFetchOnlyIfNobodyComesBack() {
        var machine = filling(prefetch: .window)
        _ = machine.fetchEnded(version: 1, error: .interrupted, now: start)
        let (first, _) = machine.readerArrived(at: 0)
        #expect(machine.wait(for: 0, waiter: 1) == .fetchFirst(0, starting: fetch(2, prefetch: .window, positions: [first: 0])))
        guard case .leave(first, let check?) = machine.readerLeft(first) else {
            Issue.record("no idle check")
            return
        }
        let (second, _) = machine.readerArrived(at: 0)
        #expect(machine.idleCheck(generation: check) == .none, "a reader came back")
        guard case .leave(second, let again?) = machine.readerLeft(second) else {
            Issue.record("no idle check")
            return
        }
        #expect(machine.idleCheck(generation: again) == .cancel)
        // The waiter of the reader that left is still answered when the fetch ends.
        #expect(
            machine.fetchEnded(version: 2, error: .interrupted, now: start)
                == .ended(wake: [1], failure: .interrupted, openers: [], opened: .failure(.interrupted)))
    }

    @Test func anOpenerThatLeftDuringProbingIsStillAnswered() {
        // Its connection ignores the answer; the machine does not track connections.
        var machine = machine(prefetch: .none)
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        #expect(machine.probeAnswered(remote(), version: 1, now: start) == .answer([1], opened(1), narrow: false))
    }

    @Test func withFullPrefetchTheFetchOutlivesItsReaders() {
        var machine = filling()
        let (reader, _) = machine.readerArrived(at: 0)
        #expect(machine.readerLeft(reader) == .leave(reader: reader, idleCheck: nil))
        #expect(machine.readerLeft(reader) == .none, "left already")
        #expect(machine.readerMoved(reader, to: 10) == .none, "left already")
        #expect(machine.isFetching)
    }

    @Test func anIdleCheckAfterTheFetchEndedDoesNothing() {
        var machine = filling(prefetch: .none)
        let (reader, _) = machine.readerArrived(at: 0)
        guard case .leave(_, let check?) = machine.readerLeft(reader) else {
            Issue.record("no idle check")
            return
        }
        _ = machine.fetchEnded(version: 1, error: nil, now: start)
        #expect(machine.idleCheck(generation: check) == .none)
    }

    // MARK: - The cache's size

    @Test func aFullCacheStopsTheFetchAndServesOnlyWhatItHas() {
        var machine = filling(ByteRangeSet([0..<100]))
        #expect(machine.allow(.nothing) == .cancel)
        #expect(machine.refuses(at: 500) && !machine.refuses(at: 50))
        #expect(machine.wait(for: 500, waiter: 1) == .refuse)
        #expect(machine.wait(for: 50, waiter: 2) == .ready)
        _ = machine.fetchEnded(version: 1, error: .interrupted, now: start)
        #expect(machine.open(url: url, publicOnly: false, opener: 3, now: start) == .answer(opened(1)), "no new fetch")
        #expect(machine.allow(.prefetch) == .none, "nothing runs")
        #expect(machine.open(url: url, publicOnly: false, opener: 4, now: start) == .startFetch(fetch(2)))
    }

    @Test func aFullCacheDuringTheProbeAnswersOpenersWithWhatWasKnown() {
        var machine = machine()
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start)
        _ = machine.allow(.nothing)
        #expect(
            machine.fetchEnded(version: 1, error: .interrupted, now: start)
                == .ended(wake: [], failure: .interrupted, openers: [1], opened: .failure(.interrupted)),
            "no probe answer: nothing to serve")
    }

    @Test func aNearlyFullCacheNarrowsTheFetchOnce() {
        var machine = filling()
        #expect(machine.allow(.readersOnly) == .narrow)
        #expect(machine.allow(.readersOnly) == .wake)
        #expect(machine.allow(.prefetch) == .wake)
        _ = machine.fetchEnded(version: 1, error: .interrupted, now: start)
        _ = machine.allow(.readersOnly)
        #expect(machine.wait(for: 0, waiter: 1) == .fetchFirst(0, starting: fetch(2, prefetch: .none)))
    }

    // MARK: - Evicting

    @Test func anEntryInUseIsNeverEvicted() {
        var machine = complete()
        let (reader, _) = machine.readerArrived(at: 0)
        #expect(machine.evict() == .keep, "a reader reads it")
        _ = machine.readerLeft(reader)
        _ = machine.open(url: url, publicOnly: false, opener: 1, now: start + .seconds(61))
        #expect(machine.evict() == .keep, "a fetch writes it")
        _ = machine.fetchEnded(version: 2, error: .interrupted, now: start)
        #expect(machine.evict() == .removeFiles)
        #expect(machine.present.isEmpty && machine.remote == nil)
    }

    @Test func aReaderHoldingAnEvictedEntryStartsAfresh() {
        var machine = complete()
        #expect(machine.evict() == .removeFiles)
        #expect(machine.wait(for: 0, waiter: 1) == .fetchFirst(0, starting: fetch(2)))
        #expect(machine.evict() == .keep)
    }

    @Test(arguments: [Int64(0), 99, 100, 999])
    func aReaderArrivingMidFetchIsToldToTheFetch(offset: Int64) {
        var machine = filling(ByteRangeSet([0..<100]))
        let (reader, action) = machine.readerArrived(at: offset)
        #expect(action == .setPosition(offset, reader: reader))
        #expect(machine.readers == [reader: offset])
    }
}
