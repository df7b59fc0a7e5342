import Testing

@testable import VFetchServe

struct SegmentLookaheadTests {
    let segments = (0..<10).map { "http://o/s\($0).ts" }

    @Test func aReadStartsTheNextFewNearestFirstAndOnlyOnce() {
        var lookahead = SegmentLookahead(count: 3)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        #expect(lookahead.readServed(segments[1]) == .init(start: Array(segments[2...4])))
        // The next segment: one more ahead, nothing to stop.
        #expect(lookahead.readServed(segments[2]) == .init(start: [segments[5]]))
        // Near the end: the window is what is left.
        #expect(lookahead.readServed(segments[8]).start == [segments[9]])
        #expect(lookahead.readServed(segments[9]) == .init(cancel: []))
        #expect(lookahead.readServed("http://o/unknown.ts") == .init())
    }

    @Test func theReadSegmentComesFirstItsWindowStartsOnceItIsServed() {
        var lookahead = SegmentLookahead(count: 3)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        _ = lookahead.readServed(segments[0])
        // A seek to 5: what was ahead of 0 stops at once, nothing new starts while 5 is awaited.
        #expect(lookahead.read(segments[5]) == .init(cancel: Array(segments[1...3])))
        #expect(lookahead.served(segments[0]) == .init(), "an earlier read's answer starts nothing")
        #expect(lookahead.served(segments[5]) == .init(start: Array(segments[6...8])))
        #expect(lookahead.served(segments[5]) == .init(), "once")
        // A read before the last one was served: what that one held back was never started, so
        // nothing of it is cancelled, and the new window starts whole once its own segment is served.
        #expect(lookahead.read(segments[1]).cancel == Array(segments[6...8]))
        #expect(lookahead.read(segments[2]) == .init(cancel: []))
        #expect(lookahead.served(segments[1]) == .init())
        #expect(lookahead.served(segments[2]) == .init(start: Array(segments[3...5])))
    }

    @Test func aVariantSwitchDropsTheOtherVariantsHeldBackWindow() {
        var lookahead = SegmentLookahead(count: 2)
        lookahead.learned(playlist: "low", segments: ["l0", "l1", "l2"])
        lookahead.learned(playlist: "high", segments: ["h0", "h1", "h2"])
        lookahead.learned(master: "master", variants: ["low", "high"])
        _ = lookahead.read("l0")
        #expect(lookahead.read("h0") == .init(), "low's window was never started")
        #expect(lookahead.served("l0") == .init())
        #expect(lookahead.served("h0") == .init(start: ["h1", "h2"]))
    }

    @Test func aSeekMovesTheWindowAndCancelsWhatItLeftBehind() {
        var lookahead = SegmentLookahead(count: 3)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        _ = lookahead.readServed(segments[0])
        let seek = lookahead.readServed(segments[6])
        #expect(seek.start == Array(segments[7...9]))
        #expect(seek.cancel == Array(segments[1...3]))
    }

    @Test func aVariantSwitchCancelsTheOtherVariantsWindow() {
        var lookahead = SegmentLookahead(count: 2)
        let low = (0..<5).map { "http://o/low/\($0).ts" }
        let high = (0..<5).map { "http://o/high/\($0).ts" }
        lookahead.learned(playlist: "http://o/low.m3u8", segments: low)
        lookahead.learned(playlist: "http://o/high.m3u8", segments: high)
        lookahead.learned(playlist: "http://o/audio.m3u8", segments: ["http://o/a/0.aac", "http://o/a/1.aac"])
        lookahead.learned(master: "http://o/master.m3u8", variants: ["http://o/low.m3u8", "http://o/high.m3u8"])
        #expect(lookahead.readServed(low[0]).start == [low[1], low[2]])
        #expect(lookahead.readServed("http://o/a/0.aac").start == ["http://o/a/1.aac"])
        // The switch starts the new variant's window and cancels the old one's; the audio rendition,
        // played beside either, keeps its own.
        #expect(lookahead.readServed(high[1]) == .init(start: [high[2], high[3]], cancel: [low[1], low[2]]))
        #expect(lookahead.readServed(high[2]) == .init(start: [high[4]]))
    }

    @Test func withoutAMasterPlaylistsAreIndependent() {
        var lookahead = SegmentLookahead(count: 1)
        lookahead.learned(playlist: "a", segments: ["a0", "a1"])
        lookahead.learned(playlist: "b", segments: ["b0", "b1"])
        _ = lookahead.readServed("a0")
        #expect(lookahead.readServed("b0") == .init(start: ["b1"]))
    }

    @Test func playlistsAreBoundedLeastRecentlyUsedFirst() {
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 2)
        lookahead.learned(playlist: "a", segments: ["a0", "a1"])
        lookahead.learned(playlist: "b", segments: ["b0", "b1"])
        _ = lookahead.readServed("a0")
        lookahead.learned(playlist: "c", segments: ["c0", "c1"])
        #expect(lookahead.readServed("b0") == .init(), "b was the least recently used")
        #expect(lookahead.readServed("a0").start.isEmpty, "a is still known: its window was started")
        #expect(lookahead.readServed("c0").start == ["c1"])
    }
}

extension SegmentLookahead {
    /// A read whose segment is then served whole: what it cancels, and the window it starts.
    mutating func readServed(_ url: String) -> Action {
        var action = read(url)
        action.start = served(url).start
        return action
    }
}
