import Testing

@testable import VFetchCore

@Suite struct TransferFailureTests {
    @Test(arguments: [
        (TransferFailure.unresolved, false, TransferFailure.Verdict.unreachable),
        (.unresolved, true, .unreachable),
        (.notConnected, false, .unreachable),  // the probe could not connect: nobody is there
        (.notConnected, true, .retry),
        (.reset, true, .retry),
        (.badURL, true, .badURL),
        (.permanent, true, .permanent),
        (.transient, true, .retry),
    ])
    func verdict(failure: TransferFailure, fileKnown: Bool, expected: TransferFailure.Verdict) {
        #expect(failure.verdict(fileKnown: fileKnown) == expected)
    }

    /// Only a connection refused or reset may be the host's limit; the budget decides whether it was.
    @Test func onlyARefusedOrResetConnectionMayBeTheHostsLimit() {
        let candidates = [TransferFailure.unresolved, .notConnected, .reset, .badURL, .permanent, .transient].filter(\.mayBeHostLimit)
        #expect(candidates == [.notConnected, .reset])
    }
}
