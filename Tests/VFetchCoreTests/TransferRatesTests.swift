import Testing

@testable import VFetchCore

/// Each transfer's rate, the download's typical rate and the transfers too slow to keep, from the
/// transfers' bytes and the ticks alone.
@Suite struct TransferRatesTests {
    static let mib: Int64 = 1 << 20

    func rates(replacesSlow: Bool = true) -> TransferRates {
        TransferRates(slowFactor: 0.3, slowSeconds: 3, replacesSlow: replacesSlow)
    }

    /// Transfers 1...`count` start at `now`, and the clock starts.
    func started(_ count: Int, now: Double = 0) -> TransferRates {
        var rates = rates()
        for id in 1...count { rates.started(TransferID(id), now: now) }
        _ = rates.tick(now: now) { _ in 64 * Self.mib }
        return rates
    }

    /// Each of `bytes` (per transfer 1, 2, ...) arrives, then a tick at `now`, every transfer with `left` to go.
    func second(_ rates: inout TransferRates, _ bytes: [Int64], now: Double, left: Int64 = 64 * mib) -> [TransferID] {
        for (index, count) in bytes.enumerated() { rates.received(TransferID(index + 1), count: count) }
        return rates.tick(now: now) { _ in left }
    }

    @Test func theFirstTickStartsTheClockAndTicksComeASecondApart() {
        var rates = rates()
        rates.started(TransferID(1), now: 0)
        rates.received(TransferID(1), count: Self.mib)
        #expect(rates.tick(now: 0) { _ in Self.mib }.isEmpty)
        #expect(rates.rate(of: TransferID(1)) == nil)
        rates.received(TransferID(1), count: Self.mib)
        _ = rates.tick(now: 0.5) { _ in Self.mib }
        #expect(rates.rate(of: TransferID(1)) == nil, "half a second is no tick")
        _ = rates.tick(now: 2) { _ in Self.mib }
        #expect(rates.rate(of: TransferID(1)) == Double(Self.mib), "all its bytes over the two seconds since the first tick")
    }

    @Test func aTransferYoungerThanTheTickIsMeasuredSinceItStarted() {
        var rates = started(1)
        rates.started(TransferID(2), now: 0.5)
        rates.received(TransferID(2), count: Self.mib / 4)
        #expect(rates.rate(of: TransferID(2), now: 0.9) == nil, "under half a second old")
        #expect(rates.rate(of: TransferID(2), now: 1) == Double(Self.mib / 2))
        _ = rates.tick(now: 1) { _ in Self.mib }
        #expect(rates.rate(of: TransferID(2)) == nil, "it did not live through the tick")
        #expect(rates.rate(of: TransferID(3), now: 1) == nil)
    }

    @Test func theTypicalRateIsTheMedianOfThreeOrMoreAndDecays() {
        var two = started(2)
        _ = second(&two, [Self.mib, Self.mib], now: 1)
        #expect(two.typical == nil, "two rates are no norm")
        var rates = started(3)
        _ = second(&rates, [Self.mib, 2 * Self.mib, 3 * Self.mib], now: 1)
        #expect(rates.typical == Double(2 * Self.mib))
        _ = second(&rates, [Self.mib / 4, Self.mib / 4, Self.mib / 4], now: 2)
        #expect(rates.typical == 0.8 * Double(2 * Self.mib), "a slower median only wears it down")
    }

    @Test func fewMeasuredAmongManyNewTransfersAreNoNorm() {
        var rates = started(3)
        for id in 4...7 { rates.started(TransferID(id), now: 0.5) }
        _ = second(&rates, [Self.mib, Self.mib, Self.mib], now: 1)
        #expect(rates.typical == nil, "three rates among seven transfers")
    }

    @Test func transfersThatEndedCountTowardsTheTypicalRate() {
        var rates = started(3)
        for id in 1...3 {
            rates.received(TransferID(id), count: Self.mib)
            rates.ended(TransferID(id), now: 0.5)
        }
        #expect(rates.typical == nil)
        #expect(rates.typicalSoFar == Double(2 * Self.mib), "before a tick: the median of those that ended")
        _ = rates.tick(now: 1) { _ in Self.mib }
        #expect(rates.typical == Double(2 * Self.mib))
    }

    @Test func aTransferUnder64KiBMeasuresTheRoundTripNotTheRate() {
        var rates = started(3)
        for id in 1...3 {
            rates.received(TransferID(id), count: 60_000)
            rates.ended(TransferID(id), now: 0.5)
        }
        #expect(rates.typicalSoFar == nil)
    }

    @Test func aTransferFarBelowTheNormForThreeTicksIsReplaced() {
        var rates = started(4)
        var slow: [TransferID] = []
        for second in 1...3 {
            #expect(slow.isEmpty, "second \(second)")
            slow = self.second(&rates, [Self.mib, Self.mib, Self.mib, 10_000], now: Double(second))
        }
        #expect(slow == [TransferID(4)])
    }

    @Test func aSlowTransferAboutToFinishOrWithoutRangesIsKept() {
        var nearlyDone = started(4)
        var noRanges = rates(replacesSlow: false)
        for id in 1...4 { noRanges.started(TransferID(id), now: 0) }
        _ = noRanges.tick(now: 0) { _ in Self.mib }
        for second in 1...5 {
            // Two seconds of its own rate left: finishing beats starting over.
            #expect(self.second(&nearlyDone, [Self.mib, Self.mib, Self.mib, 10_000], now: Double(second), left: 20_000).isEmpty)
            #expect(self.second(&noRanges, [Self.mib, Self.mib, Self.mib, 10_000], now: Double(second)).isEmpty)
        }
        #expect(noRanges.typical == nil)
    }

    @Test func aTransferHoldingNoSegmentIsNotMeasured() {
        var rates = started(2)
        rates.received(TransferID(1), count: Self.mib)
        rates.received(TransferID(2), count: Self.mib)
        _ = rates.tick(now: 1) { $0 == TransferID(1) ? Self.mib : nil }
        #expect(rates.rate(of: TransferID(1)) == Double(Self.mib))
        #expect(rates.rate(of: TransferID(2)) == nil)
    }
}
