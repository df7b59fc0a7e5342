import Testing

@testable import VFetchCore

@Suite struct HostBudgetTests {
    @Test func aRefusalWithNothingWorkingIsAFailureAndBesideOthersTheHostsLimit() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        let refusedAlone = budget.refused(1, working: 0, retryAfter: nil, now: 0)
        #expect(!refusedAlone)
        #expect(budget.ceiling.value == nil)
        let besideOthers = budget.refused(1, working: 3, retryAfter: 30, now: 1)
        #expect(besideOthers)
        #expect(budget.ceiling.value == 3)
        let held = budget.report(1, wanted: 8, open: 3, working: 3, now: 2)
        #expect(held == 3)
        // Retry-After holds the count until it has passed, then one more is tried.
        let stillHeld = budget.report(1, wanted: 8, open: 3, working: 3, now: 20)
        #expect(stillHeld == 3)
        let oneMore = budget.report(1, wanted: 8, open: 3, working: 3, now: 31.5)
        #expect(oneMore == 4)
        // An answer that crossed the refusal shows the host allows more.
        budget.accepted(1, working: 6)
        #expect(budget.ceiling.value == 6)
    }

    @Test func refusalsAreCountedOverEveryDownloadOfTheHost() {
        var budget = HostBudget()
        budget.join(1, maximum: 16)
        budget.join(2, maximum: 16)
        _ = budget.report(1, wanted: 16, open: 3, working: 3, now: 0)
        _ = budget.report(2, wanted: 16, open: 1, working: 1, now: 0)
        // The second's one working transfer and the first's three: the host allows four.
        let refused = budget.refused(2, working: 1, retryAfter: nil, now: 0)
        #expect(refused)
        #expect(budget.ceiling.value == 4)
        #expect(budget.fairShares() == [1: 2, 2: 2])
    }

    @Test func sharesAreMaxMinFair() {
        var budget = HostBudget()
        for download in 1...3 { budget.join(download, maximum: 32) }
        _ = budget.report(1, wanted: 4, open: 0, working: 0, now: 0)
        _ = budget.report(2, wanted: 32, open: 0, working: 0, now: 0)
        _ = budget.report(3, wanted: 32, open: 0, working: 0, now: 0)
        // What the first does not want is left to the others.
        #expect(budget.fairShares() == [1: 4, 2: 14, 3: 14])
        budget.leave(1)
        #expect(budget.fairShares() == [2: 16, 3: 16])
        // What no download wants is room to try more: a download alone may always try the whole budget.
        var alone = HostBudget()
        alone.join(1, maximum: 32)
        let allowed = alone.report(1, wanted: 4, open: 4, working: 4, now: 0)
        #expect(allowed == 32)
        // The host's budget is the largest maximum among its downloads, not their sum.
        budget.join(4, maximum: 64)
        #expect(budget.capacity == 64)
    }

    @Test func aNewcomerWaitsUntilTheOthersGiveBackTheirExtraConnections() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        var allowed = budget.report(1, wanted: 8, open: 8, working: 8, now: 0)
        #expect(allowed == 8)
        budget.join(2, maximum: 8)
        // The second's share is 4, but all 8 are held: the first must give 4 back. On a host that refused
        // nothing the second's probe goes at once (a player may wait on it), but no more than that.
        allowed = budget.report(2, wanted: 8, open: 0, working: 0, now: 0)
        #expect(allowed == 1)
        allowed = budget.report(1, wanted: 8, open: 8, working: 8, now: 0)
        #expect(allowed == 4)
        allowed = budget.report(1, wanted: 8, open: 4, working: 4, now: 0)
        #expect(allowed == 4)
        allowed = budget.report(2, wanted: 8, open: 0, working: 0, now: 0)
        #expect(allowed == 4)
    }

    @Test func connectionsGivenBackAreAnothersOnlyOnceTheyHadTimeToClose() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        budget.join(2, maximum: 8)
        _ = budget.report(1, wanted: 8, open: 8, working: 8, now: 0)
        budget.gaveBack(1, open: 4, working: 4, now: 1)
        // The host may still count the four responses just aborted.
        var allowed = budget.report(2, wanted: 8, open: 1, working: 1, now: 1.05)
        #expect(allowed == 1)
        allowed = budget.report(2, wanted: 8, open: 1, working: 1, now: 1.2)
        #expect(allowed == 4)
    }

    /// Once a host has refused, a newcomer waits even for its first connection: it would be refused too.
    @Test func onAHostThatRefusedANewcomersProbeWaitsForRoom() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        _ = budget.report(1, wanted: 8, open: 6, working: 6, now: 0)
        let limited = budget.refused(1, working: 6, retryAfter: nil, now: 0)
        #expect(limited)
        budget.join(2, maximum: 8)
        var allowed = budget.report(2, wanted: 8, open: 0, working: 0, now: 0.5)
        #expect(allowed == 0)
        budget.gaveBack(1, open: 3, working: 3, now: 1)
        allowed = budget.report(2, wanted: 8, open: 0, working: 0, now: 1.2)
        #expect(allowed == 3)
    }

    @Test func aControllerHeldBackByTheBudgetWantsMoreAndTakesItWhenGiven() {
        var controller = ConnectionController(.init(maximum: 16), now: 0, bytesDone: 0)
        // The solo probe ends with only 4 allowed: the controller holds 4 but wants its maximum.
        var limit = controller.update(bytesDone: 1000, delivering: 1, allowed: 4, now: 0.1)
        #expect(limit == 4)
        #expect(controller.wanted == 16)
        limit = controller.update(bytesDone: 2000, delivering: 4, allowed: 12, now: 0.2)
        #expect(limit == 12)
        // Fewer allowed: fewer held at once.
        limit = controller.update(bytesDone: 3000, delivering: 12, allowed: 2, now: 0.3)
        #expect(limit == 2)
    }
}
