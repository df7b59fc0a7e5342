import Testing

@testable import VFetchCore

/// Racing on its own: which holder a second request races, and which transfer gives way to urgent work.
@Suite struct RacingTests {
    static let mib: Int64 = 1 << 20
    let racing = Racing(afterSeconds: 0.3, factor: 0.5, hurryGap: 0.1, block: 64 << 10)

    @Test func aStalledHolderIsRacedAndAnUnmeasuredOneIsNot() {
        #expect(racing.isStraggler(remaining: 1000, rate: 0, typicalRate: nil))
        #expect(!racing.isStraggler(remaining: Self.mib, rate: nil, typicalRate: 1_000_000))
    }

    @Test func aSlowHolderIsRacedOnlyWithFarToGo() {
        // Under half the typical rate, with more than 0.3 s to go at its own rate: a straggler.
        #expect(racing.isStraggler(remaining: 400_000, rate: 1_000_000, typicalRate: 3_000_000))
        #expect(!racing.isStraggler(remaining: 200_000, rate: 1_000_000, typicalRate: 3_000_000), "nearly done")
        #expect(!racing.isStraggler(remaining: Self.mib, rate: 2_000_000, typicalRate: 3_000_000), "not slow enough")
        #expect(!racing.isStraggler(remaining: Self.mib, rate: 1_000, typicalRate: nil), "no norm yet")
    }

    @Test func aReaderRacesItsHolderOnlyAtItsBlockAndAfterSilence() {
        #expect(racing.racesHolder(at: 100_000, waitedAt: 100_000, silence: 0.1))
        #expect(!racing.racesHolder(at: 100_000, waitedAt: 100_000, silence: 0.05), "a moment's pause")
        #expect(racing.racesHolder(at: 100_000, waitedAt: 100_000 + (64 << 10) - 1, silence: 1))
        #expect(!racing.racesHolder(at: 100_000, waitedAt: 100_000 + (64 << 10), silence: 1), "the holder is a block away")
    }

    @Test func nothingIsPreemptedWhenNothingWaits() {
        let held = [(range: 0..<Self.mib, holder: TransferID(1))]
        #expect(Racing.transferToPreempt(held: held, windows: [], urgent: false, readersWait: false) == nil)
    }

    @Test func theTransferFurthestIntoTheFileOutsideEveryWindowGoesFirst() {
        let held = [
            (range: 0..<Self.mib, holder: TransferID(1)), (range: 8 * Self.mib..<9 * Self.mib, holder: TransferID(2)),
            (range: 30 * Self.mib..<31 * Self.mib, holder: TransferID(3)), (range: 50 * Self.mib..<60 * Self.mib, holder: TransferID(4)),
        ]
        let windows = [0..<4 * Self.mib, 50 * Self.mib + 100..<54 * Self.mib]
        #expect(Racing.transferToPreempt(held: held, windows: windows, urgent: false, readersWait: true) == TransferID(3))
        #expect(Racing.transferToPreempt(held: held, windows: windows, urgent: true, readersWait: false) == TransferID(3))
    }

    @Test func urgentWorkTakesAWindowsLaterChunkButNeverItsFirstBytes() {
        let head = (range: (16 << 10)..<64 * Self.mib, holder: TransferID(1))
        let window = [(16 << 10)..<(16 << 10) + 8 * Self.mib]
        // The only transfer brings the window's first bytes: urgent work waits for a free connection.
        #expect(Racing.transferToPreempt(held: [head], windows: window, urgent: true, readersWait: false) == nil)
        // A chunk further into the window goes for urgent work, not for a reader's window.
        let chunks = [
            (range: (16 << 10)..<2 * Self.mib, holder: TransferID(1)), (range: 2 * Self.mib..<3 * Self.mib, holder: TransferID(2)),
        ]
        #expect(Racing.transferToPreempt(held: chunks, windows: window, urgent: true, readersWait: false) == TransferID(2))
        #expect(Racing.transferToPreempt(held: chunks, windows: window, urgent: false, readersWait: true) == nil)
    }
}
