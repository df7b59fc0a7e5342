import Foundation
import Testing

@testable import VFetchStreams

/// SplitMix64: a small seeded generator, so a failing mutation can be replayed.
@Suite struct HLSPlaylistFuzzTests {
    static let seeds = [
        HLSPlaylistTests.bipbop,
        """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:41
        #EXT-X-KEY:METHOD=AES-128,URI="k.key?t=1",IV=0x000102030405060708090A0B0C0D0E0F
        #EXT-X-MAP:URI="main.mp4",BYTERANGE="1210@0"
        #EXTINF:6.006,
        #EXT-X-BYTERANGE:75232@1210
        main.mp4
        #EXT-X-DISCONTINUITY
        #EXTINF:6.006,
        #EXT-X-BYTERANGE:82112
        main.mp4
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://id",KEYFORMAT="com.apple.streamingkeydelivery"
        #EXT-X-GAP
        #EXTINF:2,
        /abs/seg.ts
        #EXTINF:2,
        https://other.example.org/x.ts?sig=a%2Cb
        #EXT-X-ENDLIST
        """,
    ]

    /// Pieces a mutation splices in: syntax, numbers at the edges of Int64, and Unicode that joins
    /// or splits characters.
    static let fragments: [String] = [
        ",", "\"", "=", "@", ":", "\n", "\r\n", "\r", "#", "#EXTINF:", "#EXT-X-BYTERANGE:", "#EXT-X-STREAM-INF:",
        "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"g\",NAME=\"n\"", "#EXT-X-KEY:METHOD=AES-128,URI=", "#EXT-X-MAP:URI=",
        "#EXT-X-MEDIA-SEQUENCE:", "#EXT-X-ENDLIST", "#EXT-X-GAP", "9223372036854775807", "9223372036854775808",
        "-1", "nan", "1e309", "0x", "0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "\u{FEFF}", "\u{301}", "é", "🇫🇷", "//",
        "../", "?", "%", "data:,x", "skd://", "x",
    ]

    @Test func randomMutationsOfValidPlaylistsNeverCrashAndKeepTheModelsInvariants() throws {
        var generator = SplitMix64(seed: 0x5EED_0018)
        let base = try #require(URL(string: "https://cdn.example.com/a/b/index.m3u8?token=1"))
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        var parsed = 0
        var refused = 0
        for round in 0..<3000 where clock.now < deadline {
            var scalars = Array(Self.seeds[round % Self.seeds.count].unicodeScalars)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                Self.mutate(&scalars, using: &generator)
            }
            let text = String(String.UnicodeScalarView(scalars))
            do throws(StreamParseError) {
                switch try HLSPlaylist.parse(text, url: base) {
                case .master(let catalog):
                    parsed += 1
                    Self.check(catalog, text: text)
                case .media(let list):
                    parsed += 1
                    Self.check(list, text: text)
                }
            } catch {
                refused += 1
                #expect(error.description.hasPrefix("line "), "\(error) for:\n\(text)")
            }
        }
        // Both paths ran: the mutations are neither all harmless nor all fatal.
        #expect(parsed > 100)
        #expect(refused > 100)
    }

    private static func mutate(_ scalars: inout [Unicode.Scalar], using generator: inout SplitMix64) {
        let position = Int.random(in: 0...scalars.count, using: &generator)
        switch Int.random(in: 0..<5, using: &generator) {
        case 0:
            let fragment = fragments.randomElement(using: &generator)!
            scalars.insert(contentsOf: fragment.unicodeScalars, at: position)
        case 1:
            let end = min(scalars.count, position + Int.random(in: 1...12, using: &generator))
            scalars.removeSubrange(position..<end)
        case 2:
            // Replace a digit with another number, often a huge one.
            guard let digit = scalars.indices.filter({ ("0"..."9").contains(scalars[$0]) }).randomElement(using: &generator)
            else { return }
            let replacement = ["0", "9", "99999999999999999999", "-5", "1.5"].randomElement(using: &generator)!
            scalars.replaceSubrange(digit...digit, with: replacement.unicodeScalars)
        case 3:
            // Duplicate a line.
            var lines = scalars.split(separator: "\n", omittingEmptySubsequences: false)
            guard let index = lines.indices.randomElement(using: &generator) else { return }
            lines.insert(lines[index], at: index)
            scalars = Array(lines.joined(separator: ["\n"]))
        default:
            // Swap two lines.
            var lines = scalars.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count > 1 else { return }
            let a = Int.random(in: 0..<lines.count, using: &generator)
            let b = Int.random(in: 0..<lines.count, using: &generator)
            lines.swapAt(a, b)
            scalars = Array(lines.joined(separator: ["\n"]))
        }
    }

    private static func check(_ catalog: StreamCatalog, text: String) {
        #expect(Set(catalog.tracks.map(\.id)).count == catalog.tracks.count, "duplicate ids for:\n\(text)")
        #expect(catalog.tracks.first?.id == "v0", "no variant for:\n\(text)")
        for track in catalog.tracks {
            if case .playlist(let url) = track.segments { #expect(isHTTP(url), "\(url) for:\n\(text)") }
        }
    }

    private static func check(_ list: SegmentList, text: String) {
        #expect(!list.segments.isEmpty)
        var previous: Int?
        for segment in list.segments {
            #expect(segment.duration.isFinite && segment.duration >= 0, "\(segment) for:\n\(text)")
            #expect(isHTTP(segment.resource.url), "\(segment) for:\n\(text)")
            for range in [segment.resource.byteRange, segment.initialization?.byteRange].compactMap({ $0 }) {
                #expect(range.lowerBound >= 0 && !range.isEmpty, "\(segment) for:\n\(text)")
            }
            if let previous { #expect(segment.sequence > previous, "\(segment) for:\n\(text)") }
            previous = segment.sequence
            if case .aes128(let key, let iv) = segment.encryption {
                #expect(isHTTP(key) && (iv == nil || iv?.count == 16), "\(segment) for:\n\(text)")
            }
        }
    }

    private static func isHTTP(_ url: URL) -> Bool {
        ["http", "https"].contains(url.scheme?.lowercased()) && url.host?.isEmpty == false
    }
}
