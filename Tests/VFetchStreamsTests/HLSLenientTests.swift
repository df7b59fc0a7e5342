import Foundation
import Testing

@testable import VFetchStreams

/// Playlists as the real world writes them: read as hls.js and ffmpeg read them where the meaning is
/// clear, refused where it is not.
@Suite struct HLSLenientTests {
    private static let base = URL(string: "https://cdn.example.com/live/index.m3u8")!

    private func media(_ text: String) throws -> SegmentList {
        let document = try HLSPlaylist.parse(text, url: Self.base)
        guard case .media(let list) = document else { throw StreamParseError("a master playlist: \(document)") }
        return list
    }

    private func names(_ list: SegmentList) -> [String] { list.segments.map(\.resource.url.lastPathComponent) }

    // MARK: c. A live playlist caught mid-write

    @Test func aLivePlaylistsLastEXTINFWithNoURIYetIsDropped() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:4,\ns7.ts\n#EXTINF:4,\ns8.ts\n#EXTINF:4,\n"
        let list = try media(text)
        #expect(names(list) == ["s7.ts", "s8.ts"])
        #expect(list.segments.map(\.sequence) == [7, 8])
        #expect(list.isComplete == false)
        // Its byte range too: the whole entry was not written yet.
        let ranged = try media("#EXTM3U\n#EXTINF:4,\n#EXT-X-BYTERANGE:10@0\na.ts\n#EXTINF:4,\n#EXT-X-BYTERANGE:10")
        #expect(ranged.segments.map(\.resource.byteRange) == [0..<10])
    }

    @Test func aFinishedPlaylistsLastEXTINFWithNoURIIsStillRefused() {
        // EXT-X-ENDLIST says the list was written whole: a missing last URI is damage, not a write under way.
        for text in [
            "#EXTM3U\n#EXTINF:4,\na.ts\n#EXTINF:4,\n#EXT-X-ENDLIST", "#EXTM3U\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4,\na.ts\n#EXTINF:4,",
        ] {
            #expect(throws: StreamParseError.self) { try media(text) }
        }
    }

    // MARK: d. IPTV entries

    @Test func iptvEntriesWithUnknownDurationAndAttributesAreRead() throws {
        let text = """
            #EXTM3U url-tvg="http://epg.example.com/guide.xml"
            #EXTINF:-1 tvg-id="news.example" tvg-name="News, 24/7" tvg-logo="http://logo.example.com/n.png" group-title="News",News 24
            http://iptv.example.com/news/stream.ts
            #EXTINF:-1,Sports
            http://iptv.example.com/sports/stream.ts
            #EXTINF:10.5 tvg-id="x",Clip
            http://iptv.example.com/clip.ts
            """
        let list = try media(text)
        #expect(names(list) == ["stream.ts", "stream.ts", "clip.ts"])
        #expect(list.segments.map(\.duration) == [0, 0, 10.5])
        // An entry of unknown length makes the whole length unknown, never a wrong sum.
        #expect(list.duration == nil)
        #expect(try media("#EXTM3U\n#EXTINF:-1.0,A\na.ts\n").duration == nil)
    }

    @Test(arguments: ["-2", "-0.5", "-1x", "- 1", "-inf"])
    func negativeDurationsOtherThanUnknownAreRefused(duration: String) {
        #expect(throws: StreamParseError.self) { try media("#EXTM3U\n#EXTINF:\(duration),A\na.ts\n") }
    }

    // MARK: b. Stray lines

    @Test func strayLinesBetweenSegmentsAreIgnored() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4

            #EXTINF:4,
              \t
            s0.ts
            stray text the packager left
            \t
            #EXTINF:4,
            s1.ts
            s1-again.ts
            #EXTINF:4,
            s2.ts
            #EXT-X-ENDLIST
            """
        let list = try media(text)
        #expect(names(list) == ["s0.ts", "s1.ts", "s2.ts"])
        #expect(list.segments.map(\.sequence) == [0, 1, 2])
        // After a gap too: the discontinuity the gap leaves is not a tag of the stray line's.
        let gapped = try media("#EXTM3U\n#EXT-X-GAP\n#EXTINF:4,\ng.ts\nstray\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST")
        #expect(names(gapped) == ["a.ts"])
        #expect(gapped.segments.map(\.discontinuity) == [true])
    }

    @Test func aURIWithTheTagsOfASegmentButNoEXTINFIsRefused() {
        // Its tags say it is a segment: leaving it out would drop media, and its duration is unknown.
        #expect(throws: StreamParseError("line 5: a URI with no #EXTINF before it")) {
            try media("#EXTM3U\n#EXTINF:4,\na.ts\n#EXT-X-BYTERANGE:100@0\nb.ts\n#EXTINF:4,\nc.ts")
        }
        #expect(throws: StreamParseError("line 5: a URI with no #EXTINF before it")) {
            try media("#EXTM3U\n#EXTINF:4,\na.ts\n#EXT-X-DISCONTINUITY\nb.ts\n#EXTINF:4,\nc.ts")
        }
        // Two durations in a row: which URI goes with which is unclear.
        #expect(throws: StreamParseError("line 2: #EXTINF has no URI after it")) {
            try media("#EXTM3U\n#EXTINF:4,\n#EXTINF:4,\na.ts")
        }
    }

    // MARK: a. A negative EXT-X-MEDIA-SEQUENCE

    @Test func aNegativeMediaSequenceNumbersTheSegmentsFromIt() throws {
        let list = try media("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:-2\n#EXTINF:4,\na.ts\n#EXTINF:4,\nb.ts\n#EXTINF:4,\nc.ts\n#EXTINF:4,\nd.ts")
        #expect(list.segments.map(\.sequence) == [-2, -1, 0, 1])
        // With an explicit IV the sequence number is not used for decryption.
        let keyed = try media(
            "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:-1\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x01\n#EXTINF:4,\na.ts")
        #expect(keyed.segments.map(\.sequence) == [-1])
    }

    @Test func aNegativeSequenceNumberCannotBeAnAES128IV() {
        // RFC 8216 5.2 makes the IV the sequence number "as a 128-bit unsigned integer": a negative one has none.
        let text = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:-1\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:4,\na.ts\n#EXTINF:4,\nb.ts"
        #expect(
            throws: StreamParseError(
                "line 2: #EXT-X-MEDIA-SEQUENCE -1 makes a segment's number negative, and an AES-128 key with no IV (line 3) needs it as the IV"
            )
        ) { try media(text) }
    }

    // MARK: g. Gaps

    @Test func gapSegmentsCountInTheDurationButAreNotFetched() throws {
        let list = try media("#EXTM3U\n#EXTINF:4,\na.ts\n#EXT-X-GAP\n#EXTINF:3.5,\nb.ts\n#EXTINF:4,\nc.ts\n#EXT-X-ENDLIST")
        #expect(names(list) == ["a.ts", "c.ts"])
        #expect(list.duration == 11.5)
        #expect(list.gapSeconds == 3.5)
        let catalog = try StreamDocument.catalog(
            Array("#EXTM3U\n#EXT-X-GAP\n#EXTINF:2,\na.ts\n#EXTINF:4,\nb.ts\n#EXT-X-ENDLIST".utf8), url: Self.base,
            contentType: nil)
        #expect(catalog.duration == 6)
    }

    // MARK: h. An encrypted EXT-X-MAP

    @Test func theKeyInForceAtTheMapEncryptsTheInitializationSection() throws {
        let key = URL(string: "https://cdn.example.com/live/k.key")!
        let iv: [UInt8] = Array(repeating: 0, count: 15) + [1]
        let before = try media(
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\",IV=0x01\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:4,\na.m4s\n#EXT-X-ENDLIST")
        #expect(before.segments[0].initializationEncryption == .aes128(key: key, iv: iv))
        #expect(before.segments[0].encryption == .aes128(key: key, iv: iv))
        let after = try media(
            "#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\"\n#EXTINF:4,\na.m4s\n#EXT-X-ENDLIST")
        #expect(after.segments[0].initializationEncryption == .none)
        #expect(after.segments[0].encryption == .aes128(key: key, iv: nil))
    }

    @Test func anEncryptedMapWithoutAnIVIsRefused() {
        #expect(
            throws: StreamParseError("line 3: #EXT-X-MAP is encrypted with AES-128 by a key with no IV, which RFC 8216 requires")
        ) {
            try media("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\"\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:4,\na.m4s")
        }
    }
}
