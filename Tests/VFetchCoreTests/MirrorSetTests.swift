import Testing

@testable import VFetchCore

@Suite struct MirrorSetTests {
    let primary = "https://a.example/f"
    let b = "https://b.example/f"
    let c = "https://c.example/f"

    @Test func mirrorsAreSampledFromBytesThePrimaryWroteAndTrustedOnlyWhenTheyMatch() {
        var set = MirrorSet(primary: primary, mirrors: [b, primary, c, b])
        #expect(set.sources.map(\.url) == [primary, b, c])
        // Nothing to compare with yet: no sample, no segment for a mirror.
        #expect(set.samplesToFetch(written: ByteRangeSet(), total: 1 << 20).isEmpty)
        #expect(set.sourceForSegment(running: [5, 0, 0], room: [8, 8, 8]) == 0)
        let written = ByteRangeSet([0..<(40 << 10), (100 << 10)..<(300 << 10)])
        let samples = set.samplesToFetch(written: written, total: 1 << 20)
        #expect(samples.map(\.source) == [1, 2])
        #expect(samples.allSatisfy { $0.range == (236 << 10)..<(300 << 10) })
        // Asked once: not again while the samples run.
        #expect(set.samplesToFetch(written: written, total: 1 << 20).isEmpty)
        #expect(set.sampled(1, .same) == nil)
        #expect(set.sampled(2, .different("other bytes at 241664")) == "other bytes at 241664")
        #expect(set.isDropped(2))
        #expect(set.usable == [0, 1])
        // The least busy trusted source with room takes the next segment; never the dropped one.
        #expect(set.sourceForSegment(running: [3, 1, 0], room: [8, 8, 8]) == 1)
        #expect(set.sourceForSegment(running: [3, 8, 0], room: [8, 8, 8]) == 0)
        #expect(set.sourceForSegment(running: [8, 8, 0], room: [8, 8, 8]) == nil)
    }

    @Test func trustedSourcesShareTheConnectionsEvenly() {
        var set = MirrorSet(primary: primary, mirrors: [b, c])
        #expect(set.shares(limit: 8) == [8, 0, 0])
        _ = set.samplesToFetch(written: ByteRangeSet([0..<(1 << 20)]), total: 1 << 20)
        _ = set.sampled(1, .same)
        #expect(set.shares(limit: 8) == [4, 4, 0])
        _ = set.sampled(2, .same)
        #expect(set.shares(limit: 8) == [3, 3, 3])
        set.drop(1, "gone")
        #expect(set.shares(limit: 8) == [4, 0, 4])
        #expect(set.shares(limit: 1) == [1, 0, 1])
    }

    @Test func aSmallFileIsSampledWhole() {
        var set = MirrorSet(primary: primary, mirrors: [b])
        #expect(set.samplesToFetch(written: ByteRangeSet([0..<500]), total: 1000).isEmpty)
        #expect(set.samplesToFetch(written: ByteRangeSet([0..<1000]), total: 1000).map(\.range) == [0..<1000])
    }

    @Test func aMirrorWhoseRequestsKeepFailingIsDroppedAndAFinishedRequestForgivesIt() {
        var set = MirrorSet(primary: primary, mirrors: [b], maxFailures: 3)
        _ = set.samplesToFetch(written: ByteRangeSet([0..<(1 << 20)]), total: 1 << 20)
        // A failed sample proves nothing: the mirror is sampled again.
        #expect(set.sampled(1, .failed("connection refused")) == nil)
        #expect(set.sources[1].state == .unproven)
        #expect(set.samplesToFetch(written: ByteRangeSet([0..<(1 << 20)]), total: 1 << 20).count == 1)
        #expect(set.sampled(1, .same) == nil)
        #expect(set.failed(1, "reset") == nil)
        set.finished(1)
        #expect(set.failed(1, "reset") == nil)
        #expect(set.failed(1, "reset") == nil)
        #expect(set.failed(1, "reset") == "reset, 3 times")
        #expect(set.isDropped(1))
        #expect(set.failed(1, "reset") == nil)
        // The primary is never dropped here: its segments' retries judge it.
        #expect(set.failed(0, "reset") == nil)
        #expect(set.usable == [0])
    }

    @Test func anyURLThatIsNoMirrorsIsThePrimarysRedirect() {
        let set = MirrorSet(primary: primary, mirrors: [b])
        #expect(set.source(of: b) == 1)
        #expect(set.source(of: "https://cdn.example/signed") == 0)
    }
}
