import Testing

@testable import VFetchCore

@Suite struct ConnectionTableTests {
    @Test func aNewConnectionOverCapacityClosesTheLongestIdleOne() {
        var table = ConnectionTable<Int>(capacity: 3)
        #expect(table.accepted(1, now: 0).isEmpty)
        #expect(table.accepted(2, now: 1).isEmpty)
        #expect(table.accepted(3, now: 2).isEmpty)
        table.busy(1)
        // 1 is busy (a player reading): 2 has waited longest.
        let first = table.accepted(4, now: 3)
        #expect(first == [2])
        table.idle(1, now: 4)
        // 1 is idle again but only since 4: 3 goes.
        let second = table.accepted(5, now: 5)
        #expect(second == [3])
        #expect(table.count == 3)
    }

    @Test func whenEveryOtherConnectionIsBusyTheNewOneIsClosed() {
        var table = ConnectionTable<Int>(capacity: 2)
        _ = table.accepted(1, now: 0)
        _ = table.accepted(2, now: 0)
        table.busy(1)
        table.busy(2)
        let closing = table.accepted(3, now: 1)
        #expect(closing == [3])
        table.closed(1)
        let next = table.accepted(4, now: 2)
        #expect(next.isEmpty)
    }

    @Test func thousandsOfSilentSocketsNeverKeepAPlayerOut() {
        var table = ConnectionTable<Int>(capacity: 100)
        for id in 0..<1100 { _ = table.accepted(id, now: Double(id)) }
        let closing = table.accepted(5000, now: 2000)
        table.busy(5000)
        #expect(!closing.contains(5000))
        for id in 6000..<7000 {
            let closed = table.accepted(id, now: Double(id))
            #expect(!closed.contains(5000), "the player's connection stays")
        }
    }
}
