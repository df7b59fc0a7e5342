import Foundation
import Testing

@testable import VFetchStreams

/// The test fixtures' HLS playlists and DASH manifests, damaged as an attacker would: elements
/// nested thousands deep, a piece repeated thousands of times, long lines, hostile tokens, and
/// bytes. Each is read as `get` reads it (`StreamDocument.catalog`) and rewritten as `vfetch serve`
/// rewrites it, on a thread with serve's small stack. Each ends in a catalog or a short one-line
/// error, within the parsers' budgets: no URL longer than `SegmentBudget.maxURLBytes`, no more than
/// `budget.maxTotalURLBytes` of them, no more than `budget.maxSegments` segments. The budget is
/// smaller than the production one, so that small inputs reach it and the default run takes seconds.
///
///     FUZZ_ITERATIONS=100 swift test --filter StreamDocumentFuzzTests    # a long run
///     FUZZ_SEED=0x1234 swift test --filter StreamDocumentFuzzTests       # other inputs
///     FUZZ_VERBOSE=1 swift test --filter StreamDocumentFuzzTests         # each input named before it runs
@Suite struct StreamDocumentFuzzTests {
    static let seeds: [(text: String, isDASH: Bool)] =
        DASHSample.all.map { ($0, true) } + HLSPlaylistFuzzTests.seeds.map { ($0, false) }

    static let tokens = [
        "$RepresentationID$", String(repeating: "$RepresentationID$", count: 100), "$Number%064d$", "<BaseURL>a</BaseURL>",
        "<SegmentTemplate media=\"$Number$\" duration=\"1\"/>", "duration=\"1\"", "<a>", "</a>", "<x:a>", "r=\"-1\"",
        "#EXT-X-KEY:METHOD=NONE\n", "#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n", "#EXTINF:1,\na\n",
        "#EXT-X-STREAM-INF:BANDWIDTH=1\na\n", "URI=\"", "../", "?", "%",
    ].map { Array($0.utf8) }

    static let inputs = 150
    /// 1 MiB of URLs and 20,000 segments: a long base URL under a few hundred URIs, or a template's
    /// duration, reaches them.
    static let budget = SegmentBudget(maxSegments: 20_000, maxTotalURLBytes: 1 << 20)

    @Test func damagedDocumentsStayWithinTheBudgets() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["FUZZ_SEED"].flatMap { $0.hasPrefix("0x") ? UInt64($0.dropFirst(2), radix: 16) : UInt64($0) }
        let scale = environment["FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? 1
        let verbose = environment["FUZZ_VERBOSE"].map { !$0.isEmpty && $0 != "0" } ?? false
        let runSeed = (seed ?? 0) ^ 0x5EED_5743
        let problems = await onSmallStackThread {
            var problems: [String] = []
            for number in 0..<Self.inputs * scale {
                var random = SplitMix64(seed: runSeed ^ (UInt64(number) &* 0xD6E8_FEB8_6659_FD93))
                let (bytes, isDASH, url) = Self.input(&random)
                if verbose {
                    FileHandle.standardError.write(Data("fuzz: stream document \(number), \(bytes.count) bytes\n".utf8))
                }
                problems += Self.problems(reading: bytes, isDASH: isDASH, url: url).map { "input \(number): \($0)" }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }

    /// A damaged seed, and the URL it is read from: now and then one of 8,000 characters.
    static func input(_ random: inout SplitMix64) -> (bytes: [UInt8], isDASH: Bool, url: URL) {
        let (text, isDASH) = seeds[random.below(seeds.count)]
        var bytes = Array(text.utf8)
        for _ in 0...random.below(3) {
            switch random.below(5) {
            case 0:
                // Nesting, as deep as no real MPD goes (past the 64 levels read).
                let depth = [8, 70, 2_000][random.below(3)]
                let at = random.below(bytes.count + 1)
                let nested = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
                bytes.insert(contentsOf: Array(nested.utf8), at: at)
            case 1:
                // A piece of the document (a line, an element) repeated thousands of times.
                let start = random.below(bytes.count + 1)
                let end = min(bytes.count, start + 1 + random.below(100))
                let count = [2, 100, 1_000][random.below(3)]
                bytes.insert(contentsOf: Array(repeating: bytes[start..<end], count: count).joined(), at: start)
            case 2:
                // Past the longest URL.
                let length = [100, 9_000][random.below(2)]
                bytes.insert(contentsOf: repeatElement(UInt8(ascii: "a"), count: length), at: random.below(bytes.count + 1))
            default:
                DASHHostileInputTests.mutate(&bytes, tokens: tokens, random: &random)
            }
        }
        let path = random.below(4) == 0 ? String(repeating: "p", count: 8_000) : "a/b"
        return (bytes, isDASH, URL(string: "https://cdn.example.com/\(path)/index")!)
    }

    /// What is wrong with reading and rewriting `bytes`: a URL past the budgets, an error that is not one short line.
    static func problems(reading bytes: [UInt8], isDASH: Bool, url: URL) -> [String] {
        var problems: [String] = []
        let type = isDASH ? "application/dash+xml" : "application/vnd.apple.mpegurl"
        do throws(StreamParseError) {
            let catalog = try StreamDocument.catalog(bytes, url: url, contentType: type, budget: budget)
            problems += self.problems(in: Self.urls(of: catalog))
            let segments = catalog.tracks.reduce(0) { $0 + ($1.segments.list?.segments.count ?? 0) }
            if segments > budget.maxSegments { problems.append("\(segments) segments") }
        } catch {
            problems += self.problems(in: error)
        }
        let linked = LinkedURLs()
        do throws(StreamParseError) {
            _ = try StreamRewrite.rewrite(bytes, format: isDASH ? .dash : .hls, url: url, budget: budget) { absolute in
                linked.urls.append(absolute)
                return "http://127.0.0.1:8080/media?url=" + absolute
            }
            problems += self.problems(in: linked.urls)
        } catch {
            problems += self.problems(in: error)
        }
        return problems
    }

    private static func problems(in urls: [String]) -> [String] {
        var problems: [String] = []
        if let long = urls.first(where: { $0.utf8.count > SegmentBudget.maxURLBytes }) {
            problems.append("a URL of \(long.utf8.count) bytes")
        }
        let total = urls.reduce(0) { $0 + $1.utf8.count }
        if total > budget.maxTotalURLBytes { problems.append("\(total) bytes of URLs") }
        return problems
    }

    private static func problems(in error: StreamParseError) -> [String] {
        let text = error.description
        guard text.count > 400 || text.contains(where: \.isNewline) else { return [] }
        return ["the error \(text.prefix(100).debugDescription)…, \(text.count) characters"]
    }

    /// Every distinct URL a catalog holds (one object shared by many segments counts once, as it is made once).
    static func urls(of catalog: StreamCatalog) -> [String] {
        var urls = Set<String>()
        for track in catalog.tracks {
            switch track.segments {
            case .list(let list):
                for segment in list.segments {
                    urls.insert(segment.resource.url.absoluteString)
                    if let initialization = segment.initialization { urls.insert(initialization.url.absoluteString) }
                    if case .aes128(let key, _) = segment.encryption { urls.insert(key.absoluteString) }
                }
            case .playlist(let url): urls.insert(url.absoluteString)
            case .indexed(let url, let initialization, _):
                urls.insert(url.absoluteString)
                if let initialization { urls.insert(initialization.url.absoluteString) }
            case .none: break
            }
        }
        return Array(urls)
    }
}

/// The URLs a rewrite linked, in order.
private final class LinkedURLs {
    var urls: [String] = []
}

extension SegmentSource {
    fileprivate var list: SegmentList? {
        if case .list(let list) = self { list } else { nil }
    }
}
