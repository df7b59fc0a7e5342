import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Tests of the test origin itself, driven through the real `curl` command line tool so the
/// origin is checked against an independent HTTP client.
@Suite struct TestOriginTests {
    // MARK: Plain files and ranges

    @Test func rangedGetAnswers206WithContentRange() async throws {
        try await withOrigin { origin in
            let bytes = pattern(1000)
            origin.publish("/a.bin", bytes)
            let result = try await curl(["-r", "100-199", origin.url("/a.bin")])
            #expect(result.status == 206)
            #expect(result.header("Content-Range") == "bytes 100-199/1000")
            #expect(result.header("Content-Length") == "100")
            #expect(result.header("Accept-Ranges") == "bytes")
            #expect(result.header("Content-Type") == "video/mp4")
            #expect(result.header("ETag")?.hasPrefix("\"") == true)
            #expect(result.header("Last-Modified")?.hasSuffix(" GMT") == true)
            #expect(result.body == Array(bytes[100..<200]))
        }
    }

    @Test func openAndSuffixRanges() async throws {
        try await withOrigin { origin in
            let bytes = pattern(1000)
            origin.publish("/a.bin", bytes)
            let open = try await curl(["-r", "990-", origin.url("/a.bin")])
            #expect(open.status == 206)
            #expect(open.header("Content-Range") == "bytes 990-999/1000")
            #expect(open.body == Array(bytes[990...]))
            let suffix = try await curl(["-r", "-5", origin.url("/a.bin")])
            #expect(suffix.header("Content-Range") == "bytes 995-999/1000")
            #expect(suffix.body == Array(bytes[995...]))
        }
    }

    @Test func getWithoutRangeAnswers200() async throws {
        try await withOrigin { origin in
            let bytes = pattern(5000)
            origin.publish("/a.bin", bytes)
            let result = try await curl([origin.url("/a.bin")])
            #expect(result.status == 200)
            #expect(result.header("Content-Length") == "5000")
            #expect(result.header("Accept-Ranges") == "bytes")
            #expect(result.header("Content-Range") == nil)
            #expect(result.body == bytes)
            #expect(origin.requests.map(\.status) == [200])
            #expect(origin.requests.first?.header("user-agent")?.hasPrefix("curl") == true)
        }
    }

    @Test func headSendsHeadersOnly() async throws {
        try await withOrigin { origin in
            let bytes = pattern(5000)
            origin.publish("/a.bin", bytes)
            let result = try await curl(["-I", origin.url("/a.bin")])
            #expect(result.status == 200)
            #expect(result.header("Content-Length") == "5000")
            #expect(origin.requests.map(\.method) == ["HEAD"])
        }
    }

    @Test func pipelinedHeadThenGetAreFramedExactly() async throws {
        try await withOrigin { origin in
            let bytes = pattern(5000)
            origin.publish("/a.bin", bytes)
            // Both requests in one write: the HEAD answer must carry no body, or the GET
            // answer that follows would be misread.
            let reply = try await rawExchange(
                port: origin.port,
                "HEAD /a.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /a.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            let responses = splitResponses(reply)
            #expect(responses.count == 2)
            #expect(responses.first?.head.hasPrefix("HTTP/1.1 200") == true)
            #expect(responses.first?.body.isEmpty == true)
            #expect(responses.last?.head.contains("Content-Length: 5000") == true)
            #expect(responses.last?.body == bytes)
            #expect(origin.requests.map(\.connection) == [1, 1])
        }
    }

    @Test func unsatisfiableRangeAnswers416() async throws {
        try await withOrigin { origin in
            origin.publish("/a.bin", pattern(1000))
            let result = try await curl(["-r", "1000-1999", origin.url("/a.bin")])
            #expect(result.status == 416)
            #expect(result.header("Content-Range") == "bytes */1000")
        }
    }

    @Test func unknownPathAndMethod() async throws {
        try await withOrigin { origin in
            origin.publish("/a.bin", pattern(10))
            let missing = try await curl([origin.url("/missing")])
            let posted = try await curl(["-X", "POST", origin.url("/a.bin")])
            #expect(missing.status == 404)
            #expect(posted.status == 405)
            #expect(origin.requests.map(\.status) == [404, 405])
        }
    }

    @Test func largeBodyArrivesIntact() async throws {
        try await withOrigin { origin in
            let bytes = pattern(8 << 20)
            origin.publish("/big.bin", bytes)
            let result = try await curl([origin.url("/big.bin")])
            #expect(result.status == 200)
            #expect(result.body == bytes)
        }
    }

    // MARK: Keep-alive and validators

    @Test func keepAliveServesManyRequestsOnOneConnection() async throws {
        try await withOrigin { origin in
            let bytes = pattern(200_000)
            origin.publish("/a.bin", bytes)
            // One curl run with three URLs reuses its connection; a second run opens another.
            _ = try await curl([origin.url("/a.bin"), origin.url("/a.bin"), origin.url("/a.bin")])
            _ = try await curl([origin.url("/a.bin")])
            #expect(origin.requests.map(\.connection) == [1, 1, 1, 2])
            #expect(origin.requests.map(\.status) == [200, 200, 200, 200])
        }
    }

    @Test func ifRangeDecidesBetweenRangeAndWholeBody() async throws {
        try await withOrigin { origin in
            let bytes = pattern(1000)
            origin.publish("/a.bin", bytes)
            let first = try await curl(["-r", "0-9", origin.url("/a.bin")])
            let etag = try #require(first.header("ETag"))
            let lastModified = try #require(first.header("Last-Modified"))

            let matching = try await curl(["-r", "10-19", "-H", "If-Range: \(etag)", origin.url("/a.bin")])
            #expect(matching.status == 206)
            let byDate = try await curl(["-r", "10-19", "-H", "If-Range: \(lastModified)", origin.url("/a.bin")])
            #expect(byDate.status == 206)
            let stale = try await curl(["-r", "10-19", "-H", "If-Range: \"stale\"", origin.url("/a.bin")])
            #expect(stale.status == 200)
            #expect(stale.body == bytes)
        }
    }

    @Test func replaceChangesValidators() async throws {
        try await withOrigin { origin in
            origin.publish("/a.bin", pattern(100))
            let before = try await curl([origin.url("/a.bin")])
            origin.replace("/a.bin", with: Array(repeating: 7, count: 50))
            let after = try await curl([origin.url("/a.bin")])
            #expect(after.body == Array(repeating: 7, count: 50))
            #expect(after.header("ETag") != nil)
            #expect(after.header("ETag") != before.header("ETag"))
            let dates = [before, after].compactMap { $0.header("Last-Modified") }.map(parseHTTPDate)
            #expect(dates.count == 2 && dates[1]! > dates[0]!)
        }
    }

    @Test func contentChangesAfterServedBytes() async throws {
        try await withOrigin { origin in
            let bytes = pattern(1000)
            var behavior = OriginBehavior()
            behavior.changeAfterBytes = 500
            origin.publish("/a.bin", bytes, behavior: behavior)
            let first = try await curl([origin.url("/a.bin")])
            #expect(first.body == bytes)
            let second = try await curl([origin.url("/a.bin")])
            #expect(second.body == bytes.map { ~$0 })
            #expect(second.header("ETag") != first.header("ETag"))
        }
    }

    // MARK: Redirects and signed URLs

    @Test func redirectChainEndsAtTheFile() async throws {
        try await withOrigin { origin in
            let bytes = pattern(300)
            origin.publish("/a.bin", bytes)
            let result = try await curl(["-L", origin.url("/redirect/2/a.bin")])
            #expect(result.status == 200)
            #expect(result.body == bytes)
            let hops = ["/redirect/2/a.bin", "/redirect/1/a.bin", "/redirect/0/a.bin", "/a.bin"]
            #expect(origin.requests.map(\.path) == hops)
            #expect(origin.requests.map(\.status) == [302, 302, 302, 200])
        }
    }

    @Test func signedURLExpires() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.signedLifetime = 1
            let bytes = pattern(100)
            origin.publish("/a.bin", bytes, behavior: behavior)
            // Following the redirect within one curl run happens well inside the lifetime.
            let followed = try await curl(["-L", origin.url("/signed/a.bin")])
            #expect(followed.status == 200 && followed.body == bytes)

            let redirect = try await curl([origin.url("/signed/a.bin")])
            #expect(redirect.status == 302)
            let location = try #require(redirect.header("Location"))
            #expect(location.hasPrefix("/s/") && location.hasSuffix("/a.bin"))
            try await Task.sleep(for: .milliseconds(1200))
            let expired = try await curl([origin.url(location)])
            #expect(expired.status == 403)
            let tampered = try await curl([origin.url(location.replacingOccurrences(of: "/s/", with: "/s/f"))])
            #expect(tampered.status == 403)
        }
    }

    // MARK: Faults

    @Test func failuresWithRetryAfterThenSuccess() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.failFirst = 2
            behavior.failStatus = 503
            behavior.retryAfter = 3
            let bytes = pattern(100)
            origin.publish("/a.bin", bytes, behavior: behavior)
            for _ in 0..<2 {
                let failed = try await curl([origin.url("/a.bin")])
                #expect(failed.status == 503)
                #expect(failed.header("Retry-After") == "3")
            }
            let ok = try await curl([origin.url("/a.bin")])
            #expect(ok.status == 200)
            #expect(ok.body == bytes)
        }
    }

    @Test func rangeFaults() async throws {
        try await withOrigin { origin in
            let bytes = pattern(1000)
            var noRanges = OriginBehavior()
            noRanges.supportsRanges = false
            origin.publish("/none.bin", bytes, behavior: noRanges)
            var ignores = OriginBehavior()
            ignores.answers200ToRanges = true
            origin.publish("/ignores.bin", bytes, behavior: ignores)
            var shifted = OriginBehavior()
            shifted.wrongContentRange = true
            origin.publish("/shifted.bin", bytes, behavior: shifted)

            let none = try await curl(["-r", "100-199", origin.url("/none.bin")])
            #expect(none.status == 200 && none.header("Accept-Ranges") == nil && none.body == bytes)

            let ignored = try await curl(["-r", "100-199", origin.url("/ignores.bin")])
            #expect(ignored.status == 200 && ignored.header("Accept-Ranges") == "bytes" && ignored.body == bytes)
            let fromZero = try await curl(["-r", "0-9", origin.url("/ignores.bin")])
            #expect(fromZero.status == 206)

            let wrong = try await curl(["-r", "100-199", origin.url("/shifted.bin")])
            #expect(wrong.status == 206)
            #expect(wrong.header("Content-Range") == "bytes 101-200/1000")
            #expect(wrong.body == Array(bytes[101...200]))
        }
    }

    @Test func chunkedAndHTMLErrorBodies() async throws {
        try await withOrigin { origin in
            let bytes = pattern(100_000)
            var chunked = OriginBehavior()
            chunked.chunked = true
            origin.publish("/chunked.bin", bytes, behavior: chunked)
            var html = OriginBehavior()
            html.htmlErrorBody = true
            origin.publish("/html.bin", bytes, behavior: html)

            let streamed = try await curl(["-r", "10-19", origin.url("/chunked.bin")])
            #expect(streamed.status == 200)
            #expect(streamed.header("Transfer-Encoding") == "chunked")
            #expect(streamed.header("Content-Length") == nil && streamed.header("Accept-Ranges") == nil)
            #expect(streamed.body == bytes)

            let page = try await curl([origin.url("/html.bin")])
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(String(decoding: page.body, as: UTF8.self).contains("<html>"))
        }
    }

    @Test func dropCutsTheFirstResponsesShort() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.dropAfterBytes = 1000
            behavior.dropTimes = 1
            let bytes = pattern(100_000)
            origin.publish("/a.bin", bytes, behavior: behavior)
            let cut = try await curl([origin.url("/a.bin")])
            #expect(cut.exitCode == 18)  // CURLE_PARTIAL_FILE
            #expect(cut.body == Array(bytes[..<1000]))
            let whole = try await curl([origin.url("/a.bin")])
            #expect(whole.exitCode == 0 && whole.body == bytes)
        }
    }

    // MARK: Throttling and connection handling

    @Test func throttleTakesTheExpectedTime() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 256 * 1024
            let bytes = pattern(256 * 1024)
            origin.publish("/slow.bin", bytes, behavior: behavior)
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await curl([origin.url("/slow.bin")])
            let elapsed = clock.now - start
            #expect(result.body == bytes)
            // Only a lower bound: a loaded machine may always be slower, never faster.
            #expect(elapsed >= .milliseconds(700))
        }
    }

    @Test func everyNthConnectionIsSlow() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.slowConnectionEvery = 2
            behavior.slowBytesPerSecond = 64 * 1024
            let bytes = pattern(32 * 1024)
            origin.publish("/a.bin", bytes, behavior: behavior)
            let clock = ContinuousClock()
            _ = try await curl([origin.url("/a.bin")])
            var result: CurlResult?
            let slow = try await clock.measure { result = try await curl([origin.url("/a.bin")]) }
            #expect(origin.requests.map(\.connection) == [1, 2])
            #expect(result?.body == bytes)
            // 32 KiB at 64 KiB/s, less the first burst. (How fast connection 1 was is not asserted:
            // a loaded machine can make anything slow.)
            #expect(slow >= .milliseconds(300))
        }
    }

    @Test func clientAbortMidBodyLeavesTheOriginServing() async throws {
        try await withOrigin { origin in
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 64 * 1024
            origin.publish("/slow.bin", pattern(1 << 20), behavior: behavior)
            origin.publish("/a.bin", pattern(100))
            let aborted = try await curl(["--max-time", "0.3", origin.url("/slow.bin")])
            #expect(aborted.exitCode == 28)  // CURLE_OPERATION_TIMEDOUT
            let next = try await curl([origin.url("/a.bin")])
            #expect(next.status == 200 && next.body == pattern(100))
        }
    }

    @Test func shutdownClosesOpenConnections() async throws {
        let origin = try await TestOrigin.start()
        var behavior = OriginBehavior()
        behavior.bytesPerSecond = 16 * 1024
        origin.publish("/slow.bin", pattern(1 << 20), behavior: behavior)
        async let download = curl([origin.url("/slow.bin")])
        try await Task.sleep(for: .milliseconds(200))
        try await origin.shutdown()
        let result = try await download
        #expect(result.exitCode != 0)  // cut short by the shutdown
        try await origin.shutdown()  // a second shutdown is harmless
    }

    @Test func startingAndStoppingManyOrigins() async throws {
        for _ in 0..<20 {
            let origin = try await TestOrigin.start()
            #expect(origin.port > 0)
            #expect(origin.url("/x") == "http://127.0.0.1:\(origin.port)/x")
            try await origin.shutdown()
        }
    }

    // MARK: Stream fixtures

    /// A fixture published from its directory: the entry playlist or manifest and a segment (and
    /// the initialization section or key where there is one) answer with their stream types.
    @Test(
        .enabled(if: StreamFixture.isAvailable, "ffmpeg makes the stream fixtures, and it is not installed"),
        arguments: StreamFixture.Kind.allCases)
    func servesStreamFixture(_ kind: StreamFixture.Kind) async throws {
        let fixture = try await StreamFixture.shared(kind)
        try await withOrigin { origin in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let entry = try await curl([origin.url("/s/" + fixture.entry)])
            #expect(entry.status == 200)
            #expect(entry.header("Content-Type") == (kind == .dash ? "application/dash+xml" : "application/vnd.apple.mpegurl"))
            #expect(entry.body == [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture.path(fixture.entry)))))
            let text = String(decoding: entry.body, as: UTF8.self)

            // What the entry names, then files to fetch with their types.
            let (named, files): ([String], [(String, String)]) =
                switch kind {
                case .hlsVariants:
                    (
                        ["RESOLUTION=320x180", "v0/index.m3u8", "v2/index.m3u8"],
                        [("v0/index.m3u8", "application/vnd.apple.mpegurl"), ("v1/segment0.ts", "video/mp2t")]
                    )
                case .hlsRenditions:
                    (
                        ["AUDIO=\"group_aud\",SUBTITLES=\"subs\"", "LANGUAGE=\"de\"", "TYPE=SUBTITLES", "subs/index.m3u8"],
                        [("r2/segment0.ts", "video/mp2t"), ("subs/segment1.vtt", "text/vtt")]
                    )
                case .hlsFragmented:
                    (["#EXT-X-MAP:URI=\"init.mp4\"", "segment2.m4s"], [("init.mp4", "video/mp4"), ("segment0.m4s", "video/mp4")])
                case .hlsByteRange: (["#EXT-X-BYTERANGE:", "stream.ts"], [("stream.ts", "video/mp2t")])
                case .hlsEncrypted:
                    (
                        ["#EXT-X-KEY:METHOD=AES-128,URI=\"key.key\",IV=0x00112233445566778899aabbccddeeff", "segment0.ts"],
                        [("key.key", "application/octet-stream"), ("segment1.ts", "video/mp2t")]
                    )
                case .dash:
                    (
                        ["<SegmentTimeline>", "contentType=\"video\"", "contentType=\"audio\"", "init-stream$RepresentationID$.m4s"],
                        [("init-stream1.m4s", "video/mp4"), ("chunk-stream0-00001.m4s", "video/mp4")]
                    )
                }
            for name in named { #expect(text.contains(name), "\(name) in \(text)") }
            for (file, type) in files {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture.path(file))))
                let answer = try await curl(["-r", "0-187", origin.url("/s/" + file)])
                #expect(answer.status == 206, "\(file)")
                #expect(answer.header("Content-Type") == type, "\(file)")
                #expect(answer.body == Array(bytes.prefix(188)), "\(file)")
                if type == "video/mp2t" {
                    // Encrypted segments are whole AES blocks; the others whole MPEG-TS packets.
                    let whole = kind == .hlsEncrypted ? bytes.count % 16 == 0 : bytes.first == 0x47 && bytes.count % 188 == 0
                    #expect(whole, "\(file)")
                }
            }
            if kind == .hlsEncrypted {
                #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture.path("key.key")))) == StreamFixture.key)
                #expect(!FileManager.default.fileExists(atPath: fixture.path("keyinfo")))
            }
            let sources = fixture.sources.map { fixture.path($0) }
            #expect(sources.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        }
    }

    @Test func streamFileTypesFollowTheExtension() {
        let types = ["m3u8", "MPD", "ts", "m4s", "mp4", "m4a", "key", "vtt", "bin"].map(TestOrigin.contentType(forExtension:))
        #expect(
            types == [
                "application/vnd.apple.mpegurl", "application/dash+xml", "video/mp2t", "video/mp4", "video/mp4", "audio/mp4",
                "application/octet-stream", "text/vtt", "application/octet-stream",
            ])
    }
}

// MARK: - Helpers

/// Runs `body` against a fresh origin and shuts the origin down afterwards, even on failure.
private func withOrigin(_ body: (TestOrigin) async throws -> Void) async throws {
    let origin = try await TestOrigin.start()
    do {
        try await body(origin)
    } catch {
        try await origin.shutdown()
        throw error
    }
    try await origin.shutdown()
}

/// Deterministic bytes that differ from offset to offset, so a misplaced slice is caught.
private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 8) ^ ($0 >> 16)) }
}

/// What one `curl` run saw: the last response's status and headers, the body, and curl's exit code.
private struct CurlResult {
    var exitCode: Int32
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    /// The header `name` of the last response (case-insensitive), or nil.
    func header(_ name: String) -> String? {
        headers.last { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// Runs `curl -s` with `arguments`, capturing headers and body through temporary files.
private func curl(_ arguments: [String]) async throws -> CurlResult {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("vfetch-origin-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let headerFile = directory.appendingPathComponent("headers")
    let bodyFile = directory.appendingPathComponent("body")

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    // Each URL gets its own -o; all write the same file, so the body is the last response's.
    let outputs = arguments.filter { $0.hasPrefix("http://") }.flatMap { _ in ["-o", bodyFile.path] }
    process.arguments = ["curl", "-s", "--noproxy", "*", "-D", headerFile.path] + outputs + arguments
    let exitCode: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            continuation.resume(throwing: error)
        }
    }

    let headerText = (try? String(contentsOf: headerFile, encoding: .isoLatin1)) ?? ""
    // With -L or several URLs the file holds several header blocks; keep the last.
    let lastBlock = headerText.components(separatedBy: "\r\n\r\n").last { !$0.isEmpty } ?? ""
    let lines = lastBlock.components(separatedBy: "\r\n")
    let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
    let headers = lines.dropFirst().compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    let body = (try? Data(contentsOf: bodyFile)).map { [UInt8]($0) } ?? []
    return CurlResult(exitCode: exitCode, status: status, headers: headers, body: body)
}

/// Parses an IMF-fixdate such as "Sun, 06 Nov 1994 08:49:37 GMT".
private func parseHTTPDate(_ text: String) -> Date? {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.date(from: text)
}

/// Sends `request` over a plain TCP connection to 127.0.0.1:`port` and returns every byte
/// received until the server closes the connection (5 s at most).
private func rawExchange(port: Int, _ request: String) async throws -> [UInt8] {
    struct SocketError: Error { var step: String }
    #if canImport(Glibc)
        let streamType = Int32(SOCK_STREAM.rawValue)
    #else
        let streamType = SOCK_STREAM
    #endif
    let fd = socket(AF_INET, streamType, 0)
    guard fd >= 0 else { throw SocketError(step: "socket") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw SocketError(step: "connect") }

    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw SocketError(step: "send") }
        sent += n
    }
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { break }
        reply += buffer[..<n]
    }
    return reply
}

/// Splits a byte stream of HTTP/1.1 responses framed by Content-Length (header blocks as text).
private func splitResponses(_ bytes: [UInt8]) -> [(head: String, body: [UInt8])] {
    var responses: [(head: String, body: [UInt8])] = []
    var rest = bytes[...]
    let separator: [UInt8] = Array("\r\n\r\n".utf8)
    while !rest.isEmpty {
        guard let end = rest.indices.first(where: { rest[$0...].starts(with: separator) }) else { break }
        let head = String(decoding: rest[..<end], as: UTF8.self)
        rest = rest[(end + separator.count)...]
        let isHead = responses.isEmpty  // the first answer is the HEAD's: no body follows
        let length =
            head.components(separatedBy: "\r\n")
            .first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let bodyLength = isHead ? 0 : min(length, rest.count)
        responses.append((head, Array(rest.prefix(bodyLength))))
        rest = rest.dropFirst(bodyLength)
    }
    return responses
}
