import Testing

@testable import VFetchStreams

/// Where a response's bytes go and when reading stops: the bound on every body a segment fetch receives.
@Suite struct ResponseWindowTests {
    static let limit: Int64 = 256 << 20

    @Test func aWholeFileForARangeFarPastTheLimitIsRefusedBeforeItsBody() {
        // `#EXT-X-BYTERANGE:100@9000000000000000000` answered 200: the range's bytes come after 9 EB of others.
        let range: Range<Int64> = 9_000_000_000_000_000_000..<9_000_000_000_000_000_100
        let opened = ResponseWindow.opening(start: 0, wanted: range, base: range.lowerBound, limit: Self.limit)
        #expect(throws: ResponseWindow.Refusal.self) { try opened.get() }
        // Just inside the limit, the bytes before the range counting too, it can be used.
        let inside: Range<Int64> = Self.limit - 100..<Self.limit
        #expect((try? ResponseWindow.opening(start: 0, wanted: inside, base: inside.lowerBound, limit: Self.limit).get()) != nil)
        let past: Range<Int64> = Self.limit - 99..<Self.limit + 1
        #expect((try? ResponseWindow.opening(start: 0, wanted: past, base: past.lowerBound, limit: Self.limit).get()) == nil)
    }

    @Test func aWholeFileForARangeKeepsOnlyTheRangeAndStopsAtItsEnd() throws {
        var window = try ResponseWindow.opening(start: 0, wanted: 10..<25, base: 10, limit: 100).get()
        #expect(window.take(8) == .keep(slice: 0..<0, at: 0, done: false))
        #expect(window.take(8) == .keep(slice: 2..<8, at: 0, done: false))
        #expect(window.take(8) == .keep(slice: 0..<8, at: 6, done: false))
        #expect(window.take(8) == .keep(slice: 0..<1, at: 14, done: true))
        #expect(window.isComplete)
        #expect(window.keptEnd == 15)
    }

    @Test func anEndlessBodyIsCutAtTheLimit() throws {
        var window = try ResponseWindow.opening(start: 0, wanted: nil, base: 0, limit: 100).get()
        #expect(window.take(60) == .keep(slice: 0..<60, at: 0, done: false))
        #expect(window.take(40) == .keep(slice: 0..<40, at: 60, done: false))
        guard case .refuse = window.take(1) else {
            Issue.record("a body past the limit is read on")
            return
        }
    }

    @Test func aPieceIsPlacedInItsFetchAndMayNotEndPastTheLimit() throws {
        // Bytes 40..<50 of a fetch that is bytes 1000..<2000 of the resource, as a 206 sends them.
        var window = try ResponseWindow.opening(start: 1040, wanted: 1040..<1050, base: 1000, limit: 100).get()
        #expect(window.take(10) == .keep(slice: 0..<10, at: 40, done: true))
        #expect(window.isComplete)
        // A piece of a fetch longer than the limit: refused for where it lies, not for its own size.
        let far = ResponseWindow.opening(start: 1095, wanted: 1095..<1105, base: 1000, limit: 100)
        #expect(throws: ResponseWindow.Refusal.self) { try far.get() }
        // A short answer is not complete.
        var short = try ResponseWindow.opening(start: 0, wanted: 0..<10, base: 0, limit: 100).get()
        _ = short.take(4)
        #expect(!short.isComplete)
    }
}
