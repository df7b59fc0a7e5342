import Testing

@testable import VFetchCore

@Suite struct TransferFailureTests {
    @Test(arguments: [
        (TransferFailure.unresolved, false, false, false, TransferFailure.Verdict.unreachable),
        (.unresolved, true, true, true, .unreachable),
        (.notConnected, false, false, false, .unreachable),  // the probe could not connect: nobody is there
        (.notConnected, true, false, true, .hostLimit),  // an extra connection refused beside working ones
        (.notConnected, true, false, false, .retry),
        (.reset, true, false, true, .hostLimit),
        (.reset, true, true, true, .retry),  // a response cut after it was accepted is a failure of its range
        (.badURL, true, false, true, .badURL),
        (.permanent, true, false, true, .permanent),
        (.transient, true, false, true, .retry),
    ])
    func verdict(failure: TransferFailure, fileKnown: Bool, answered: Bool, othersWork: Bool, expected: TransferFailure.Verdict) {
        #expect(failure.verdict(fileKnown: fileKnown, answered: answered) { othersWork } == expected)
    }
}
