import Testing

@testable import VFetchServe

struct SegmentLookaheadTests {
    let segments = (0..<10).map { "http://o/s\($0).ts" }

    @Test func aReadStartsTheNextFewNearestFirstAndOnlyOnce() {
        var lookahead = SegmentLookahead(count: 3)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        #expect(lookahead.read(segments[1]) == .init(start: Array(segments[2...4])))
        // The next segment: one more ahead, nothing to stop.
        #expect(lookahead.read(segments[2]) == .init(start: [segments[5]]))
        // Near the end: the window is what is left.
        #expect(lookahead.read(segments[8]).start == [segments[9]])
        #expect(lookahead.read(segments[9]) == .init(cancel: []))
        #expect(lookahead.read("http://o/unknown.ts") == .init())
    }

    @Test func aSeekMovesTheWindowAndCancelsWhatItLeftBehind() {
        var lookahead = SegmentLookahead(count: 3)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        _ = lookahead.read(segments[0])
        let seek = lookahead.read(segments[6])
        #expect(seek.start == Array(segments[7...9]))
        #expect(seek.cancel == Array(segments[1...3]))
    }

    @Test func theWindowWaitsForTheSegmentReadToBeWhole() {
        var lookahead = SegmentLookahead(count: 2)
        lookahead.learned(playlist: "http://o/v.m3u8", segments: segments)
        _ = lookahead.read(segments[0])
        // A seek to a segment not fetched yet: what it left behind stops at once, nothing starts beside it.
        #expect(lookahead.read(segments[6], whole: false) == .init(cancel: [segments[1], segments[2]]))
        #expect(lookahead.whole(segments[0]) == .init(), "nothing waited for it")
        #expect(lookahead.whole(segments[6]) == .init(start: [segments[7], segments[8]]))
        #expect(lookahead.whole(segments[6]) == .init(), "once")
        // A window that moved on while it waited starts only what is still ahead of the player.
        _ = lookahead.read(segments[2], whole: false)
        _ = lookahead.read(segments[3])
        #expect(lookahead.whole(segments[2]) == .init(start: [segments[4]]))
    }

    @Test func aVariantSwitchCancelsTheOtherVariantsWindow() {
        var lookahead = SegmentLookahead(count: 2)
        let low = (0..<5).map { "http://o/low/\($0).ts" }
        let high = (0..<5).map { "http://o/high/\($0).ts" }
        lookahead.learned(playlist: "http://o/low.m3u8", segments: low)
        lookahead.learned(playlist: "http://o/high.m3u8", segments: high)
        lookahead.learned(playlist: "http://o/audio.m3u8", segments: ["http://o/a/0.aac", "http://o/a/1.aac"])
        lookahead.learned(master: "http://o/master.m3u8", variants: ["http://o/low.m3u8", "http://o/high.m3u8"])
        #expect(lookahead.read(low[0]).start == [low[1], low[2]])
        #expect(lookahead.read("http://o/a/0.aac").start == ["http://o/a/1.aac"])
        // The switch starts the new variant's window and cancels the old one's; the audio rendition,
        // played beside either, keeps its own.
        #expect(lookahead.read(high[1]) == .init(start: [high[2], high[3]], cancel: [low[1], low[2]]))
        #expect(lookahead.read(high[2]) == .init(start: [high[4]]))
    }

    @Test func withoutAMasterPlaylistsAreIndependent() {
        var lookahead = SegmentLookahead(count: 1)
        lookahead.learned(playlist: "a", segments: ["a0", "a1"])
        lookahead.learned(playlist: "b", segments: ["b0", "b1"])
        _ = lookahead.read("a0")
        #expect(lookahead.read("b0") == .init(start: ["b1"]))
    }

    @Test func playlistsAreBoundedLeastRecentlyUsedFirst() {
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 2)
        lookahead.learned(playlist: "a", segments: ["a0", "a1"])
        lookahead.learned(playlist: "b", segments: ["b0", "b1"])
        _ = lookahead.read("a0")
        lookahead.learned(playlist: "c", segments: ["c0", "c1"])
        #expect(lookahead.read("b0") == .init(), "b was the least recently used")
        #expect(lookahead.read("a0").start.isEmpty, "a is still known: its window was started")
        #expect(lookahead.read("c0").start == ["c1"])
    }

    @Test func aSegmentIsKnownWhileAPlaylistListingItIsRemembered() {
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 2)
        lookahead.learned(playlist: "a", segments: ["s0", "a1"])
        lookahead.learned(playlist: "b", segments: ["s0", "b1"])
        #expect(lookahead.isSegment("s0") && lookahead.isSegment("a1") && !lookahead.isSegment("a"))
        lookahead.learned(playlist: "c", segments: ["c0"])  // a goes
        #expect(!lookahead.isSegment("a1") && lookahead.isSegment("s0"), "b still lists s0")
        lookahead.learned(playlist: "b", segments: ["b1"])  // b again, without s0
        #expect(!lookahead.isSegment("s0") && lookahead.isSegment("b1"))
    }
}

struct SegmentLookaheadMemoryTests {
    /// `count` segment URLs of about 1 KiB each under `prefix`.
    func segments(_ prefix: String, count: Int = 100) -> [String] {
        (0..<count).map { "http://o/\(prefix)/" + String(repeating: "x", count: 1000) + "/\($0).ts" }
    }

    @Test func theListsKeptStayWithinTheirByteBudgetLeastRecentlyUsedFirst() {
        // Three lists of about 100 KiB each where two fit (three quarters of 300 KiB): the oldest goes.
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 16, maxBytes: 300 << 10)
        let (a, b, c) = (segments("a"), segments("b"), segments("c"))
        lookahead.learned(playlist: "a", segments: a)
        lookahead.learned(playlist: "b", segments: b)
        _ = lookahead.read(a[0])
        lookahead.learned(playlist: "c", segments: c)
        #expect(lookahead.bytes <= 300 << 10, "\(lookahead.bytes)")
        #expect(lookahead.read(b[0]) == .init(), "b was the least recently used")
        #expect(lookahead.read(a[1]).start == [a[2]])
        #expect(lookahead.read(c[0]).start == [c[1]])
    }

    @Test func aListLargerThanTheBudgetIsNotKeptAndTheOthersStay() {
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 16, maxBytes: 256 << 10)
        let small = segments("small", count: 10)
        lookahead.learned(playlist: "small", segments: small)
        lookahead.learned(playlist: "huge", segments: segments("huge", count: 1000))
        #expect(lookahead.bytes <= 256 << 10, "\(lookahead.bytes)")
        #expect(lookahead.read(segments("huge", count: 1000)[0]) == .init())
        #expect(lookahead.read(small[0]).start == [small[1]])
    }

    @Test func aMastersVariantsCountInTheBudget() {
        var lookahead = SegmentLookahead(count: 1, maxPlaylists: 16, maxBytes: 256 << 10)
        for number in 0..<10 { lookahead.learned(master: "m\(number)", variants: segments("m\(number)", count: 20)) }
        #expect(lookahead.bytes <= 256 << 10, "\(lookahead.bytes)")
    }

    @Test func theDefaultBudgetIsSmall() {
        #expect(SegmentLookahead().maxBytes <= 64 << 20)
    }
}
