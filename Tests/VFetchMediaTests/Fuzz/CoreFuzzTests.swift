import Foundation
import Testing
import VFetchCache
import VFetchCore

/// Random and damaged input to VFetchCore's parsers of what servers send and what lies on disk:
/// each ends in a value or an error, never a crash, and what it answers stays in bounds.
///
/// (Here rather than in VFetchCoreTests so that one mutator serves these and the media fuzz; none
/// of these needs ffmpeg.) A new parser, such as an HLS or DASH playlist, is one more line in `targets`.
@Suite struct CoreFuzzTests {
    static let targets: [FuzzTarget] = [
        .contentRange, .rangeRequest, .responseHead, .contentDisposition, .fileName, .requestHeader, .manifest,
        .downloadQueue, .cacheIndex,
    ]

    @Test(arguments: targets)
    func fuzz(_ target: FuzzTarget) async throws {
        try await target.run()
    }
}

/// Text seeds, as UTF-8.
private func texts(_ values: [String]) -> @Sendable (inout SplitMix64) async throws -> [[UInt8]] {
    { _ in values.map { Array($0.utf8) } }
}

extension FuzzCase {
    /// The bytes as a string, invalid UTF-8 repaired as a server's header reaches us.
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// A file name vfetch may create: no directory, no control characters, not hidden, not too long.
private func isSafeFileName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.count <= FileName.maxBytes && !name.contains("/") && !name.contains("\\")
        && !name.hasPrefix(".") && !name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
}

extension FuzzTarget {
    static let contentRange = FuzzTarget(
        name: "ContentRange", inputs: 10000,
        seeds: texts([
            "bytes 0-99/1000", "bytes */1000", "bytes 0-99/*", "BYTES 500-999/1000", "bytes 0-0/1", " bytes\t10-20/30 ",
            "bytes 9223372036854775806-9223372036854775806/9223372036854775807",
        ]),
        mutator: .text(tokens: ["bytes ", "*", "/*", "*/"]),
        check: { input in
            guard let parsed = ContentRange(input.text) else { return }
            if let total = parsed.total { #expect(total >= 0, "\(input)") }
            if let range = parsed.range {
                #expect(range.lowerBound >= 0 && !range.isEmpty, "\(input)")
                if let total = parsed.total { #expect(range.upperBound <= total, "\(input)") }
            }
        })

    static let rangeRequest = FuzzTarget(
        name: "RangeRequest", inputs: 6000,
        seeds: texts([
            "bytes=0-99", "bytes=100-", "bytes=-500", "bytes=0-0,5-9", "items=0-1", " bytes = 0-9 ", "bytes=0-",
        ]),
        mutator: .text(tokens: ["bytes=", ",", "-", "=-"]),
        check: { input in
            let length = input.random.pick([0, 1, 1000, 1 << 40, Int64.max, Int64(bitPattern: input.random.next() >> 1)])
            if case .part(let range) = RangeRequest(header: input.text, length: length) {
                #expect(
                    range.lowerBound >= 0 && range.upperBound <= length && !range.isEmpty, "\(input), length \(length)")
            }
        })

    /// A response's header block, line by line, then what the engine makes of it: the remote
    /// file a probe learns, the verdict on a ranged response, the wait a `Retry-After` asks for.
    static let responseHead = FuzzTarget(
        name: "ResponseHead", inputs: 5000,
        seeds: texts([
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/1000\r\nETag: \"v1\"\r\n"
                + "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\nContent-Type: video/mp4\r\n"
                + "Content-Disposition: attachment; filename=\"film.mp4\"\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nAccept-Ranges: bytes\r\n"
                + "Content-Type: text/html; charset=utf-8\r\n\r\n",
            "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\n\r\nHTTP/2 503\r\nretry-after: 120\r\n\r\n",
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: Wed, 21 Oct 2099 07:28:00 GMT\r\n\r\n",
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */0\r\n\r\n",
        ]),
        mutator: .text(tokens: ["HTTP/1.1 ", "\r\n\r\n", ": ", "Content-Range: ", "Retry-After: ", " GMT"]),
        check: { input in
            var head = ResponseHead()
            for line in input.text.split(separator: "\n", omittingEmptySubsequences: false) {
                head.add(line: line + "\n")
            }
            _ = head.isRedirect
            let remote = RemoteFile(probe: head)
            if let length = remote?.length { #expect(length >= 0, "\(input)") }
            _ = remote?.isWebPage(forMediaPath: "/v/film.mp4")
            let asked: Range<Int64>? = input.random.pick([nil, 0..<100, 500..<1000, 0..<1, (Int64.max - 1)..<Int64.max])
            let known = remote ?? RemoteFile(length: 1000, acceptsRanges: true, etag: "\"v1\"")
            let now = Date(timeIntervalSince1970: 1_795_234_800)
            if case .retry(_, let after?) = ResponseVerdict.check(head, asked: asked, remote: known, now: now) {
                #expect(after >= 0, "\(input)")
                let policy = RetryPolicy()
                if !policy.refuses(retryAfter: after) {
                    let delay = policy.delay(afterFailures: input.random.below(100), retryAfter: after, jitter: 0.5)
                    #expect(delay.isFinite && delay >= 0, "\(input)")
                }
            }
            if case .media(let type) = ServedContentType(origin: head.header("content-type")) {
                #expect(!type.contains(";") && !type.unicodeScalars.contains { $0.value < 0x21 }, "\(input)")
            }
        })

    static let contentDisposition = FuzzTarget(
        name: "ContentDisposition", inputs: 6000,
        seeds: texts([
            "attachment; filename=\"film.mp4\"", "attachment; filename*=UTF-8''%E2%82%AC%20rates.mp4",
            "inline; filename=\"a\\\"b;c.mp4\"; size=100", "attachment; filename*=iso-8859-1'en'%A3%20rates.webm",
            "filename=plain name.mp4", "attachment;filename=\"..\\\\..\\\\etc\\\\passwd\"",
            "attachment; filename=\"x.mkv\"; filename*=utf-8''%F0%9F%8E%AC.mkv",
        ]),
        mutator: .text(tokens: ["filename=", "filename*=", "UTF-8''", "iso-8859-1'", "attachment", "\"\"", "''"]),
        check: { input in
            let disposition = ContentDisposition(input.text)
            #expect(disposition.type == disposition.type.lowercased(), "\(input)")
            if let suggested = disposition.fileName, let name = FileName.sanitized(suggested) {
                #expect(isSafeFileName(name), "\(input): \(name.debugDescription)")
            }
            let name = FileName.choose(url: "https://example.com/v/film.mp4", suggested: disposition.fileName)
            #expect(isSafeFileName(name), "\(input): \(name.debugDescription)")
        })

    /// Names from URLs, and what else reads a URL vfetch is given.
    static let fileName = FuzzTarget(
        name: "FileName", inputs: 4000,
        seeds: texts([
            "https://example.com/videos/film.mp4?sig=abc&exp=1", "http://h/a%2F..%2Fb.mkv",
            "https://h/%E2%82%AC.webm#t=10",
            "https://h/", "https://user:pw@h:8080/dir/.hidden.mp4", "http://[::1]/x.ts", "file:///etc/passwd",
        ]),
        mutator: .text(tokens: ["http://", "https://", "?", "#", "@", "[", "]", "%2e%2e", "%00", ".mp4", ":65536"]),
        check: { input in
            let url = input.text
            let name = FileName.choose(url: url, suggested: nil)
            #expect(isSafeFileName(name), "\(input): \(name.debugDescription)")
            _ = FileName.hasMediaExtension(url)
            _ = isFetchableURL(url)
            let key = CacheIndex.key(url: url, playerKey: input.random.pick([nil, "", "k", "a b"]))
            #expect(CacheIndex.isID(CacheIndex.id(forKey: key)), "\(input)")
        })

    /// Extra headers and checksums as a user or an API client writes them.
    static let requestHeader = FuzzTarget(
        name: "RequestHeader", inputs: 6000,
        seeds: texts([
            "Authorization: Bearer abc", "Cookie: a=b; c=d", "X-Empty:", "Referer: https://example.com/",
            "sha256=" + String(repeating: "0123456789abcdef", count: 4),
        ]),
        mutator: .text(tokens: [": ", "\r\nX-Injected: 1", "sha256=", "SHA256="]),
        check: { input in
            let line = input.text
            if RequestHeader.problem(line) == nil {
                #expect(!line.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }, "\(input)")
                #expect(line.firstIndex(of: ":").map { $0 != line.startIndex } == true, "\(input)")
            }
            if let digest = sha256Digest(fromChecksum: line) {
                #expect(digest.utf8.count == 64 && digest.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(input)")
            }
        })

    /// Manifests as `vfetch get` writes them, for files from empty to the largest length; each input
    /// is decoded as it is (the checksum catches most damage) and again with its checksum made
    /// right, so the damage reaches the JSON.
    static let manifest = FuzzTarget(
        name: "Manifest", inputs: 2000,
        seeds: { random in (0..<48).map { _ in randomManifest(&random).encoded() } },
        mutator: .text(tokens: [
            "null", "true", "[]", "{}", "\"\"", "\\u0000", "\\ud800", "1e999", "\"W/\\\"x\\\"\"", "==",
        ]),
        check: { input in
            for bytes in [input.bytes, resealed(input.bytes)] {
                guard let manifest = try? Manifest(decoding: bytes) else { continue }
                // Only a bound manifest is written again (a version 1 one is tagged first).
                if manifest.isBound {
                    #expect((try? Manifest(decoding: manifest.encoded())) == manifest, "\(input): round trip")
                }
                // What `vfetch status` and `vfetch info` do with a manifest they read.
                let done = manifest.blocks.completedRanges
                #expect(
                    done.ranges.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= manifest.length && !$0.isEmpty },
                    "\(input): \(done.ranges)")
                #expect(done.count <= manifest.length, "\(input)")
                #expect(manifest.blocks.map(width: input.random.pick([1, 40, 80])).count > 0, "\(input)")
                let remote = RemoteFile(length: manifest.length, acceptsRanges: true, etag: manifest.etag)
                _ = manifest.reasonToDiscard(for: remote, url: manifest.url, trustLength: input.random.oneIn(2))
                _ = manifest.ifRange
            }
        })

    /// Saved `vfetch serve` queues, made through the queue's own API.
    static let downloadQueue = FuzzTarget(
        name: "DownloadQueue", inputs: 5000,
        seeds: { random in
            try (0..<16).map { _ in Array(try JSONEncoder().encode(randomQueue(&random))) }
        },
        mutator: .text(tokens: [
            "null", "true", "[]", "{}", "\"\"", "\"running\"", "\"1\"", "\\r\\n", "\\u0000", "1e999",
        ]),
        check: { input in
            guard var queue = try? JSONDecoder().decode(DownloadQueue.self, from: Data(input.bytes)) else { return }
            let again = try? JSONDecoder().decode(DownloadQueue.self, from: JSONEncoder().encode(queue))
            #expect(again == queue, "\(input): round trip")
            let ids = queue.items.map(\.id)
            #expect(Set(ids).count == ids.count, "\(input)")
            // What serve does with a queue it loads: resume it, then take new downloads.
            let actions = queue.recover()
            #expect(queue.running.count <= queue.maxConcurrent, "\(input)")
            for case .start(let id) in actions { #expect(ids.contains(id), "\(input)") }
            let added = queue.add(
                DownloadQueue.Request(url: "http://h/new", output: "/videos/new", outputIsDirectory: false))
            #expect(!ids.contains(added.id), "\(input): \(added.id) given twice")
        })

    /// Player cache indexes, as `vfetch serve` saves them.
    static let cacheIndex = FuzzTarget(
        name: "CacheIndex", inputs: 4000,
        seeds: { random in
            try (0..<16).map { _ in
                var index = CacheIndex()
                for number in 0..<random.below(6) {
                    let url = "https://example.com/v/\(number).mp4"
                    index.entries[CacheIndex.id(forKey: url)] = CacheIndex.Entry(
                        key: url, url: url, lastAccess: random.pick([0, 1_795_234_800.5, -1, 1e300]))
                }
                return Array(try index.encoded())
            }
        },
        mutator: .text(tokens: ["null", "true", "[]", "{}", "\"\"", "\"last_access\"", "1e999", "-1e308"]),
        check: { input in
            guard let index = try? CacheIndex(decoding: Data(input.bytes)) else { return }
            #expect((try? CacheIndex(decoding: index.encoded())) == index, "\(input): round trip")
            var sizes: [String: Int64] = [:]
            for id in index.entries.keys { sizes[id] = Int64(input.random.below(1 << 30)) }
            let chosen = index.evictions(sizes: sizes, maxBytes: Int64(input.random.below(1 << 31)), inUse: [])
            #expect(Set(chosen).count == chosen.count && chosen.allSatisfy { sizes[$0] != nil }, "\(input)")
        })
}

/// The manifest's JSON line sealed with its own checksum, as a careful but wrong writer would.
private func resealed(_ bytes: [UInt8]) -> [UInt8] {
    let line = Array(bytes.prefix { $0 != 0x0A })
    return line + Array("\nsha256 \(SHA256.hex(line))\n".utf8)
}

/// A manifest of a file of any length, from empty to the largest an Int64 holds, with blocks of any
/// size that keep the bitmap small, and any blocks done.
private func randomManifest(_ random: inout SplitMix64) -> Manifest {
    let length: Int64 = random.pick([
        0, 1, 1000, 65536, 65537, 1 << 30, 5 << 30 + 7, 1 << 40, Int64.max, Int64.max - 1,
        Int64(bitPattern: random.next() >> 1),
    ])
    let sizes: [Int64] = [BlockBitmap.blockSize(forLength: length), 1, 7, 64 << 10, 1 << 48, 1 << 62, Int64.max]
    // At most 2^12 blocks: a bitmap of 512 bytes and 16 KiB of tags, so thousands of inputs stay quick.
    let blockSize = random.pick(sizes.filter { length / $0 < 1 << 12 })
    var blocks = BlockBitmap(length: length, blockSize: blockSize)
    let count = blocks.blockCount
    switch random.below(4) {
    case 0: break
    case 1: for block in 0..<count { blocks.markComplete(block: block) }
    case 2: if count > 0 { blocks.markComplete(block: count - 1) }
    default: for block in 0..<count where random.oneIn(3) { blocks.markComplete(block: block) }
    }
    let url = random.pick(["https://example.com/v/film.mp4", "http://h/a?b=c&d=\"e\"", "https://h/é\u{0}\n😀", ""])
    return Manifest(
        url: url, finalURL: random.pick([url, "https://cdn.example.com/x"]), length: length,
        etag: random.pick([nil, "\"v1\"", "W/\"weak\"", ""]),
        lastModified: random.pick([nil, "Wed, 21 Oct 2015 07:28:00 GMT"]), contentType: random.pick([nil, "video/mp4"]),
        created: Date(timeIntervalSince1970: random.pick([0, 1_795_234_800, 4_102_444_800])), blocks: blocks,
        part: PartIdentity(device: random.next(), inode: random.next()),
        tags: Dictionary(
            uniqueKeysWithValues: (0..<count).filter { blocks.isComplete(block: $0) }.map {
                ($0, UInt32(truncatingIfNeeded: random.next()))
            }))
}

/// A queue after some adds, pauses, ends and limit changes.
private func randomQueue(_ random: inout SplitMix64) -> DownloadQueue {
    var queue = DownloadQueue()
    for number in 0..<random.below(6) {
        let request = DownloadQueue.Request(
            url: "https://example.com/v/\(number).mp4", output: random.pick(["/videos/\(number).mp4", "/videos/"]),
            outputIsDirectory: random.oneIn(2), connections: random.pick([nil, 1, 8, 256]),
            headers: random.pick([[], ["Authorization: Bearer x"], ["A: 1", "B: 2"]]),
            checksum: random.pick([nil, "sha256=" + String(repeating: "ab", count: 32)]))
        let id = queue.add(request).id
        switch random.below(5) {
        case 0: _ = queue.pause(id)
        case 1: _ = queue.ended(id, error: random.pick([nil, "HTTP 404"]))
        case 2: queue.located(id, path: "/videos/\(number).mp4")
        default: break
        }
    }
    _ = queue.setMaxConcurrent(random.pick([1, 3, 64]))
    if random.oneIn(2) { queue.maxBytesPerSecond = random.pick([1, 1 << 20, 1 << 40]) }
    return queue
}
