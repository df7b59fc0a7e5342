import Foundation
import Testing

@testable import VFetchStreams

/// Playlists written to hurt: each is refused (or read) at a cost bounded by its size, whether
/// `get` reads it or `vfetch serve` rewrites it.
@Suite struct HLSHostileInputTests {
    /// A playlist URL of 8,000 characters: every relative URI in it resolves to 8 KB.
    static let longURL = URL(string: "https://cdn.example.com/\(String(repeating: "p", count: 8_000))/index.m3u8")!

    /// A budget of 1 MiB of URLs: what would take the production 128 MiB, in a small input.
    static let smallBudget = SegmentBudget(maxTotalURLBytes: 1 << 20)

    /// `text` read and rewritten, on a thread of its own: the number of segments or tracks, the rewritten bytes.
    static func parseAndRewrite(_ text: String, url: URL, budget: SegmentBudget = SegmentBudget()) async
        -> [Result<Int, StreamParseError>]
    {
        await onOwnThread {
            let parsed = Result { () throws(StreamParseError) in
                switch try HLSPlaylist.parse(text, url: url, budget: budget) {
                case .master(let catalog): catalog.tracks.count
                case .media(let list): list.segments.count
                }
            }
            let rewritten = Result { () throws(StreamParseError) in
                try StreamRewrite.rewrite(Array(text.utf8), format: .hls, url: url, budget: budget) {
                    "http://127.0.0.1/media?url=" + $0
                }.bytes.count
            }
            return [parsed, rewritten]
        }
    }

    /// One-letter URIs under the long URL (a million of them made 8 GB): 200 are 1.6 MB, past a
    /// budget of 1 MiB of URL bytes (the production one, 128 MiB, is the same check at 20,000 URIs).
    /// The same letter over and over is one URL to the parser, not to the rewrite, which writes each.
    @Test func theURLsOfAPlaylistHaveABudget() async throws {
        let letters = "abcdefghijklmnopqrstuvwxyz".map(String.init)
        let media = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + (0..<200).map { "#EXTINF:1,\n\(letters[$0 % 26])\n" }.joined()
        for result in await Self.parseAndRewrite(media, url: Self.longURL, budget: Self.smallBudget) {
            #expect(throws: StreamParseError.self) { try result.get() }
            if case .failure(let error) = result {
                #expect(error.description.hasSuffix(": the playlist's URLs are more than 1 MiB in all"))
            }
        }
        // Within the production budget, the same playlist reads.
        for result in await Self.parseAndRewrite(media, url: Self.longURL) {
            #expect(try result.get() > 0)
        }
        let same = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + String(repeating: "#EXTINF:1,\na\n", count: 200)
        let results = await Self.parseAndRewrite(same, url: Self.longURL, budget: Self.smallBudget)
        #expect(try results[0].get() == 200)
        #expect(throws: StreamParseError.self) { try results[1].get() }
    }

    /// The parsers and rewrites use the production limits unless a test passes others.
    @Test func theProductionBudgetIsTheDefault() {
        #expect(SegmentBudget.maxSegments == 1_000_000)
        #expect(SegmentBudget.maxURLBytes == 8 << 10)
        #expect(SegmentBudget.maxTotalURLBytes == 128 << 20)
        let budget = SegmentBudget()
        #expect(budget.maxSegments == SegmentBudget.maxSegments && budget.remaining == SegmentBudget.maxSegments)
        #expect(budget.maxTotalURLBytes == SegmentBudget.maxTotalURLBytes)
        #expect(budget.totalURLBytesText == "128 MiB")
    }

    /// A media playlist's segments come out of the same budget: one more than it allows is refused
    /// on its line (the production million is `theProductionBudgetIsTheDefault`'s).
    @Test func theSegmentsOfAPlaylistHaveABudget() throws {
        let url = URL(string: "https://cdn.example.com/index.m3u8")!
        let text = "#EXTM3U\n" + String(repeating: "#EXTINF:1\na\n", count: 1_001)
        #expect(throws: StreamParseError("line 2003: more than 1000 segments")) {
            try HLSPlaylist.parse(text, url: url, budget: SegmentBudget(maxSegments: 1_000))
        }
        guard case .media(let list) = try HLSPlaylist.parse(text, url: url, budget: SegmentBudget(maxSegments: 1_001))
        else {
            Issue.record("not a media playlist")
            return
        }
        #expect(list.segments.count == 1_001)
    }

    /// A URI longer than any server takes is refused before it is resolved, and named in a few words.
    @Test func aURLLongerThanTheLongestIsRefused() async throws {
        let uri = String(repeating: "u", count: 1 << 20)
        let text = "#EXTM3U\n#EXTINF:1,\n\(uri)\n"
        let url = URL(string: "https://cdn.example.com/index.m3u8")!
        let refusal = StreamParseError("line 3: the URI \"\(uri.prefix(80))\" is longer than 8192 bytes")
        for result in await Self.parseAndRewrite(text, url: url) {
            #expect(throws: refusal) { try result.get() }
        }
        // A playlist whose own URL is that long resolves no relative URI.
        let long = URL(string: "https://cdn.example.com/\(String(repeating: "p", count: 9_000))/index.m3u8")!
        for result in await Self.parseAndRewrite("#EXTM3U\n#EXTINF:1,\na.ts\n", url: long) {
            #expect(throws: StreamParseError("line 3: the URI \"a.ts\" resolves to a URL longer than 8192 bytes")) {
                try result.get()
            }
        }
    }

    /// 400,000 `EXT-X-KEY` lines before a segment took 69 s: each key looked through all those
    /// before it. 20,000 here would take seconds that way (200 million looks); now each line is read once.
    @Test func manyKeysForOneSegmentReadInLinearTime() async throws {
        let drm = "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://k\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n"
        let none = { (count: Int) in String(repeating: "#EXT-X-KEY:METHOD=NONE\n", count: count) }
        let clear = "#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\"\n"
        let text = "#EXTM3U\n\(none(15_000))\(drm)\(none(5_000))#EXTINF:1,\na.ts\n\(drm)\(clear)\(none(9))#EXTINF:1,\nb.ts\n"
        let list = try await onOwnThread {
            Result { () throws(StreamParseError) in
                try HLSPlaylist.parse(text, url: URL(string: "https://cdn.example.com/index.m3u8")!)
            }
        }.get()
        guard case .media(let list) = list else {
            Issue.record("not a media playlist")
            return
        }
        // The first key that is not NONE, unless a clear one is among them.
        #expect(
            list.segments.map(\.encryption) == [
                .unsupported("com.apple.streamingkeydelivery"),
                .aes128(key: URL(string: "https://cdn.example.com/k.key")!, iv: nil),
            ])
    }
}
