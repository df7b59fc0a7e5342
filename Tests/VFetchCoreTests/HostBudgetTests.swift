import Testing

@testable import VFetchCore

@Suite struct HostBudgetTests {
    /// Opens transfers for `download` until the budget says no; returns how many opened.
    @discardableResult
    static func openAll(_ budget: inout HostBudget, _ download: Int, now: Double) -> Int {
        var opened = 0
        while budget.open(download, now: now) { opened += 1 }
        return opened
    }

    @Test func aRefusalWithNothingWorkingIsAFailureAndBesideOthersTheHostsLimit() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        let refusedAlone = budget.refused(1, working: 0, retryAfter: nil, now: 0)
        #expect(!refusedAlone)
        #expect(budget.ceiling.value == nil)
        for _ in 0..<4 {
            let opened = budget.open(1, now: 0)
            #expect(opened)
        }
        budget.closed(1, cut: false, now: 0.5)
        let besideOthers = budget.refused(1, working: 3, retryAfter: 30, now: 1)
        #expect(besideOthers)
        #expect(budget.ceiling.value == 3)
        let held = budget.report(1, wanted: 8, working: 3, now: 2)
        #expect(held == 3)
        let heldBack = budget.open(1, now: 2)
        #expect(!heldBack)
        // Retry-After holds the count until it has passed, then one more is tried.
        let stillHeld = budget.report(1, wanted: 8, working: 3, now: 20)
        #expect(stillHeld == 3)
        let oneMore = budget.report(1, wanted: 8, working: 3, now: 31.5)
        #expect(oneMore == 4)
        let probed = budget.open(1, now: 31.5)
        #expect(probed)
        // An answer that crossed the refusal shows the host allows more.
        budget.accepted(1, working: 6)
        #expect(budget.ceiling.value == 6)
    }

    @Test func refusalsAreCountedOverEveryDownloadOfTheHost() {
        var budget = HostBudget()
        budget.join(1, maximum: 16)
        budget.join(2, maximum: 16)
        for _ in 0..<3 { _ = budget.open(1, now: 0) }
        _ = budget.open(2, now: 0)
        _ = budget.report(1, wanted: 16, working: 3, now: 0)
        _ = budget.report(2, wanted: 16, working: 1, now: 0)
        // The second's one working transfer and the first's three: the host allows four.
        let refused = budget.refused(2, working: 1, retryAfter: nil, now: 0)
        #expect(refused)
        #expect(budget.ceiling.value == 4)
        #expect(budget.fairShares() == [1: 2, 2: 2])
    }

    @Test func sharesAreMaxMinFair() {
        var budget = HostBudget()
        for download in 1...3 { budget.join(download, maximum: 32) }
        _ = budget.report(1, wanted: 4, working: 0, now: 0)
        _ = budget.report(2, wanted: 32, working: 0, now: 0)
        _ = budget.report(3, wanted: 32, working: 0, now: 0)
        // What the first does not want is left to the others.
        #expect(budget.fairShares() == [1: 4, 2: 14, 3: 14])
        budget.leave(1)
        #expect(budget.fairShares() == [2: 16, 3: 16])
        // A download with nothing to fetch leaves the whole of it to the others.
        _ = budget.report(3, wanted: 0, working: 0, now: 0)
        #expect(budget.allowance(for: 2, now: 0) == 32)
        // What no download wants is room to try more: a download alone may always try the whole budget.
        var alone = HostBudget()
        alone.join(1, maximum: 32)
        let allowed = alone.report(1, wanted: 4, working: 4, now: 0)
        #expect(allowed == 32)
        // The host's budget is the largest maximum among its downloads, not their sum.
        budget.join(4, maximum: 64)
        #expect(budget.capacity == 64)
    }

    /// The host allows four, and so do the process's two downloads: whatever order they open and close
    /// transfers in, the host never has more than four at once from this process.
    @Test func twoDownloadsNeverHoldMoreThanTheCapacityBetweenThem() {
        var budget = HostBudget()
        budget.join(1, maximum: 4)
        budget.join(2, maximum: 4)
        var open = [1: 0, 2: 0]
        var closing: [Double] = []
        var generator = SplitMix(seed: 7)
        var now = 0.0
        for step in 0..<5_000 {
            now += 0.01
            closing.removeAll { $0 <= now }
            let download = 1 + Int(generator.next() % 2)
            _ = budget.report(download, wanted: Int(generator.next() % 5), working: open[download]!, now: now)
            switch generator.next() % 3 {
            case 0 where open[download]! > 0:
                // A cut transfer counts at the host until it sees the close.
                let cut = generator.next() % 2 == 0
                open[download]! -= 1
                if cut { closing.append(now + budget.closeDelay) }
                budget.closed(download, cut: cut, now: now)
            default:
                if budget.open(download, now: now) { open[download]! += 1 }
            }
            #expect(open[1]! + open[2]! + closing.count <= 4, "step \(step)")
        }
    }

    @Test func aNewcomerWaitsUntilTheOthersGiveBackTheirExtraConnections() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        #expect(Self.openAll(&budget, 1, now: 0) == 8)
        budget.join(2, maximum: 8)
        // The second's share is 4, but all 8 are held: the first must give 4 back before the second opens one.
        var allowed = budget.report(2, wanted: 8, working: 0, now: 0)
        #expect(allowed == 0)
        let secondHeldBack = budget.open(2, now: 0)
        #expect(!secondHeldBack)
        allowed = budget.report(1, wanted: 8, working: 8, now: 0)
        #expect(allowed == 4)
        for _ in 0..<4 { budget.closed(1, cut: false, now: 0) }
        #expect(Self.openAll(&budget, 2, now: 0) == 4)
        let firstHeldBack = budget.open(1, now: 0)
        #expect(!firstHeldBack)
    }

    /// A player waits on its first request: on a host that has refused nothing it goes at once, past the
    /// budget, and no more than that.
    @Test func aPlayersFirstRequestGoesAtOnce() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        Self.openAll(&budget, 1, now: 0)
        budget.join(2, maximum: 8, urgent: true)
        let first = budget.open(2, now: 0)
        #expect(first)
        let second = budget.open(2, now: 0)
        #expect(!second)
    }

    @Test func transfersCutAreAnothersOnlyOnceTheyHadTimeToClose() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        #expect(Self.openAll(&budget, 1, now: 0) == 8)
        budget.join(2, maximum: 8)
        _ = budget.report(2, wanted: 8, working: 0, now: 1)
        for _ in 0..<4 { budget.closed(1, cut: true, now: 1) }
        // The host may still count the four responses just cut.
        #expect(Self.openAll(&budget, 2, now: 1.05) == 0)
        #expect(Self.openAll(&budget, 2, now: 1.2) == 4)
    }

    /// Alone on its host, a download reopens at once what it cut: nothing else would take the room.
    @Test func aDownloadAloneReopensWhatItCutAtOnce() {
        var budget = HostBudget()
        budget.join(1, maximum: 4)
        #expect(Self.openAll(&budget, 1, now: 0) == 4)
        budget.closed(1, cut: true, now: 1)
        #expect(Self.openAll(&budget, 1, now: 1) == 1)
        // Beside another download, the cut one counts until the host has seen it close.
        budget.join(2, maximum: 4)
        _ = budget.report(2, wanted: 0, working: 0, now: 2)
        budget.closed(1, cut: true, now: 2)
        #expect(Self.openAll(&budget, 1, now: 2) == 0)
        #expect(Self.openAll(&budget, 1, now: 2.2) == 1)
    }

    /// Once a host has refused, a player's first request waits too: it would be refused as well.
    @Test func onAHostThatRefusedAPlayersFirstRequestWaitsForRoom() {
        var budget = HostBudget()
        budget.join(1, maximum: 8)
        for _ in 0..<6 { _ = budget.open(1, now: 0) }
        let limited = budget.refused(1, working: 6, retryAfter: nil, now: 0)
        #expect(limited)
        budget.join(2, maximum: 8, urgent: true)
        var allowed = budget.report(2, wanted: 8, working: 0, now: 0.5)
        #expect(allowed == 0)
        for _ in 0..<3 { budget.closed(1, cut: false, now: 1) }
        allowed = budget.report(2, wanted: 8, working: 0, now: 1.2)
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
