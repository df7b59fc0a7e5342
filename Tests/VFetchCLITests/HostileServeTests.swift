import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch serve` attacked as a web page and a lying origin would attack it: each test failed
/// before its fix.
@Suite struct HostileServeTests {
    /// curl's answer for `arguments`: the headers, then the status code; the body goes to `body`.
    func curl(_ arguments: [String], body: String) async throws -> String {
        try await run("/usr/bin/curl", ["-s", "-o", body, "-D", "-", "-w", "%{http_code}"] + arguments).standardOutput
    }

    @Test func anOriginsWebPageNeverRunsInTheServersOrigin() async throws {
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            let body = directory + "/body"
            var page = OriginBehavior()
            page.contentType = "text/html; charset=utf-8"
            origin.publish("/page", Array("<script>fetch('/status')</script>".utf8), behavior: page)
            var svg = OriginBehavior()
            svg.contentType = "image/svg+xml"
            origin.publish("/image", Array("<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>".utf8), behavior: svg)
            for path in ["/page", "/image"] {
                let answer = try await curl([server.media(origin.url(path))], body: body)
                #expect(answer.hasSuffix("502"), "\(path): \(answer)")
                #expect(answer.contains("X-Content-Type-Options: nosniff"))
                let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: body)), as: UTF8.self)
                #expect(!text.contains("<script>") && text.contains("not media"), "\(text)")
            }
            // Passive bytes that are not media: a download, never sniffed, sandboxed.
            var notes = OriginBehavior()
            notes.contentType = "text/plain"
            origin.publish("/notes", Array("<html><script>1</script>".utf8), behavior: notes)
            let opaque = try await curl([server.media(origin.url("/notes"))], body: body)
            #expect(opaque.hasSuffix("200"))
            #expect(opaque.contains("Content-Type: application/octet-stream"))
            #expect(opaque.contains("Content-Disposition: attachment; filename=\"notes\"\r\n"), "\(opaque)")
            #expect(opaque.contains("Content-Security-Policy: sandbox; default-src 'none'"))
            // Media keeps its type, with the same protections.
            origin.publish("/clip.mp4", randomBytes(4096, seed: 1))
            let media = try await curl([server.media(origin.url("/clip.mp4"))], body: body)
            #expect(media.hasSuffix("200") && media.contains("Content-Type: video/mp4"))
            #expect(media.contains("X-Content-Type-Options: nosniff") && media.contains("Content-Security-Policy: sandbox"))
        }
    }

    @Test func aPlayersKeyNeverLetsOneURLReadAnothersBytes() async throws {
        let a = randomBytes(1 << 20, seed: 21)
        let b = randomBytes(1 << 20, seed: 22)
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            origin.publish("/a.bin", a)
            origin.publish("/b.bin", b)
            let body = directory + "/body"
            // A page fills an entry with A's bytes under B's URL as its key…
            #expect(try await curl([server.media(origin.url("/a.bin"), key: origin.url("/b.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(a))
            // …and a player asking for B gets B, now and after the first entry is complete.
            #expect(try await curl([server.media(origin.url("/b.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(b))
            #expect(try await curl([server.media(origin.url("/b.bin"), key: origin.url("/b.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(b))
            // A key still joins URLs that differ only in their query, as signed links do.
            #expect(try await curl([server.media(origin.url("/a.bin?sig=1"), key: "movie")], body: body).hasSuffix("200"))
            let served = origin.bytesServed("/a.bin")
            #expect(try await server.waitForEntry(origin.url("/a.bin?sig=1")) { $0["complete"] as? Bool == true })
            #expect(try await curl([server.media(origin.url("/a.bin?sig=2"), key: "movie")], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(a))
            #expect(origin.bytesServed("/a.bin") <= served + a.count, "the second signature read the same entry")
        }
    }

    @Test func theHostCheckHoldsOnEveryAddressAndOneHostHeaderOnly() async throws {
        try await ServeTests().withServer(["--host", "127.0.0.2"]) { (origin, server, directory) async throws -> Void in
            origin.publish("/f.bin", randomBytes(4096, seed: 3))
            let url = server.media(origin.url("/f.bin"))
            let port = try #require(server.base.split(separator: ":").last)
            let body = directory + "/body"
            #expect(try await curl([url], body: body).hasSuffix("200"))
            #expect(try await curl(["-H", "Host: localhost:\(port)", url], body: body).hasSuffix("200"))
            #expect(try await curl(["-H", "Host: evil.example:\(port)", url], body: body).hasSuffix("403"))
            #expect(try await curl(["-H", "Host: 127.0.0.2:1", url], body: body).hasSuffix("403"))
            let twice = try exchange(
                "GET /status HTTP/1.1\r\nHost: 127.0.0.2:\(port)\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
                host: "127.0.0.2", port: Int(port)!)
            #expect(twice.hasPrefix("HTTP/1.1 400"), "\(twice)")
        }
    }

    @Test func aWebPagesRequestNeverMakesTheServerFetchFromAPrivateAddress() async throws {
        let bytes = randomBytes(64 << 10, seed: 31)
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            origin.publish("/f.bin", bytes)
            origin.publish("/g.bin", bytes)
            let body = directory + "/body"
            // The origin is on loopback: a page's <video> (Sec-Fetch-Site) or fetch (Origin) gets nothing.
            let video = try await curl(["-H", "Sec-Fetch-Site: cross-site", server.media(origin.url("/f.bin"))], body: body)
            #expect(video.hasSuffix("502"), "\(video)")
            #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: body)), as: UTF8.self).contains("public addresses"))
            let fetch = try await curl(["-H", "Origin: https://evil.example", server.media(origin.url("/g.bin"))], body: body)
            #expect(fetch.hasSuffix("502"), "\(fetch)")
            #expect(origin.requests.isEmpty, "the origin saw no request")
            // A player asking directly, or the user typing the URL, still may.
            #expect(try await curl(["-H", "Sec-Fetch-Site: none", server.media(origin.url("/g.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(bytes))
        }
        try await ServeTests().withServer(["--deny-private"]) { (origin, server, directory) async throws -> Void in
            origin.publish("/f.bin", bytes)
            #expect(try await curl([server.media(origin.url("/f.bin"))], body: directory + "/body").hasSuffix("502"))
            #expect(origin.requests.isEmpty)
        }
    }

    @Test func failedURLsLeaveNothingBehindAndAreNotAskedAgainAtOnce() async throws {
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            let body = directory + "/body"
            for number in 0..<40 {
                #expect(try await curl([server.media(origin.url("/missing-\(number)"))], body: body).hasSuffix("502"))
            }
            // A player retrying a dead URL gets the error without another request to the origin. (The tail
            // asked for beside each probe may reach the origin after the 502.)
            try await Task.sleep(for: .milliseconds(300))
            let asked = origin.requests.count
            #expect(try await curl([server.media(origin.url("/missing-39"))], body: body).hasSuffix("502"))
            #expect(origin.requests.count == asked)
            try await Task.sleep(for: .milliseconds(500))  // the entries are forgotten off the event loop
            let entries = try await server.status()["entries"] as? [[String: Any]]
            #expect(entries?.count == 0, "\(entries ?? [])")
            let files = try FileManager.default.contentsOfDirectory(atPath: server.cacheDirectory)
            #expect(!files.contains { $0.hasSuffix(".part") || $0.hasSuffix(".vfetch") }, "\(files)")
        }
    }

    @Test func silentSocketsBeyondTheDescriptorLimitDoNotKeepAPlayerOut() async throws {
        let bytes = randomBytes(1 << 20, seed: 41)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache", fileLimit: 128)
            let port = Int(server.base.split(separator: ":").last!)!
            // 200 sockets that never finish a request: more than the server can hold open.
            var silent: [Int32] = []
            for number in 0..<200 {
                guard let fd = try? connectedSocket(host: "127.0.0.1", port: port) else { continue }
                if number.isMultiple(of: 2) { _ = send(fd, "GET / HTTP/1.1\r\nHost: 127", 25, 0) }
                silent.append(fd)
            }
            defer { for fd in silent { close(fd) } }
            let player = try await run(
                "/usr/bin/curl", ["-s", "-m", "10", "-o", directory + "/body", "-w", "%{http_code}", server.media(origin.url("/f.bin"))])
            #expect(player.standardOutput == "200", "\(player.standardOutput) \(player.status)")
            #expect(try sha256(file: directory + "/body") == sha256(bytes))
            #expect(await server.stop() == 0)
        }
    }

    @Test func aStaleServerRecordNeverGetsTheTokenSentToWhateverListensThere() async throws {
        try await withOrigin { origin, directory in
            // A server was killed -9: its record and token stay; another program now has its port.
            let cache = directory + "/cache"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            let token = "0123456789abcdef0123456789abcdef"
            FileManager.default.createFile(atPath: cache + "/token", contents: Data(token.utf8), attributes: [.posixPermissions: 0o600])
            let record = #"{"url":"\#(origin.url(""))","host":"127.0.0.1","port":\#(origin.port),"pid":\#(getpid())}"#
            FileManager.default.createFile(atPath: cache + "/server.json", contents: Data(record.utf8))
            let listed = try await vfetch(["ls", "--cache-dir", cache])
            #expect(listed.status == 4, "no server of this cache runs: \(listed.standardError)")
            #expect(listed.standardError.contains("is not this cache's server"), "\(listed.standardError)")
            #expect(!origin.requests.isEmpty, "the client asked for a proof")
            #expect(origin.requests.allSatisfy { $0.header("authorization") == nil }, "the token was never sent")
        }
    }

    @Test func theCacheNeverPassesItsSizeEvenWhileAFileLargerThanItIsRead() async throws {
        let bytes = randomBytes(64 << 20, seed: 51)
        let limit: Int64 = 16 << 20
        try await ServeTests().withServer(["--max-cache-size", "16M", "-c", "4"]) { (origin, server, directory) async throws -> Void in
            origin.publish("/big.bin", bytes, behavior: throttled(4 << 20))
            let cacheDirectory = server.cacheDirectory
            @Sendable func used() -> Int64 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? []
                return names.filter { $0.hasSuffix(".part") }.reduce(Int64(0)) { total, name in
                    var info = stat()
                    return total + (stat(cacheDirectory + "/" + name, &info) == 0 ? Int64(info.st_blocks) * 512 : 0)
                }
            }
            let sampling = Task {
                var largest: Int64 = 0
                while !Task.isCancelled {
                    largest = max(largest, used())
                    try? await Task.sleep(for: .milliseconds(20))
                }
                return largest
            }
            let url = server.media(origin.url("/big.bin"))
            // A slow player at the start (a file larger than the cache is fetched only where players
            // read, so it is served), then one far into the file, until the cache is full.
            let slow = try await run("/usr/bin/curl", ["-s", "-m", "3", "--limit-rate", "512k", "-o", directory + "/slow", url])
            #expect(slow.status == 28, "curl stopped by its time limit, not by the server")
            // Reads far into the file until the cache is full as serve counts it (within half its 2 MiB margin
            // of the limit, fetching stops), then a read of bytes not cached: on serve's answer, not the disk's
            // blocks or a clock, since a loaded machine writes and counts them later.
            var refused = ""
            for _ in 0..<12 {
                if used() >= limit - (1 << 20) {
                    refused = try await curl(["-m", "8", "-r", "\(56 << 20)-", url], body: directory + "/body")
                    if refused.hasSuffix("507") { break }
                }
                _ = try await run("/usr/bin/curl", ["-s", "-m", "8", "-r", "\(32 << 20)-", "-o", directory + "/far", url])
            }
            sampling.cancel()
            let largest = await sampling.value
            #expect(largest <= limit, "the cache took \(largest) bytes, more than its 16 MiB")
            #expect(refused.hasSuffix("507"), "\(refused)")
            let message = String(decoding: try Data(contentsOf: URL(fileURLWithPath: directory + "/body")), as: UTF8.self)
            #expect(message.contains("the cache is full (--max-cache-size 16 MiB)"), "\(message)")
            // What was served is the file's, never anything else.
            let served = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/slow")))
            #expect(!served.isEmpty && served == Array(bytes.prefix(served.count)))
        }
    }

    @Test func onlyPagesNamedByAllowOriginMayReadTheCache() async throws {
        let bytes = randomBytes(64 << 10, seed: 61)
        let page = "http://127.0.0.1:9"
        let preflight = [
            "-X", "OPTIONS", "-H", "Origin: \(page)", "-H", "Access-Control-Request-Method: GET",
            "-H", "Access-Control-Request-Headers: range", "-H", "Access-Control-Request-Private-Network: true",
        ]
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            origin.publish("/f.bin", bytes)
            let url = server.media(origin.url("/f.bin"))
            let refused = try await curl(preflight + [url], body: directory + "/body")
            #expect(refused.hasSuffix("403") && !refused.contains("Access-Control"), "\(refused)")
            let read = try await curl(["-H", "Origin: \(page)", url], body: directory + "/body")
            #expect(!read.contains("Access-Control"), "no CORS header without --allow-origin: \(read)")
            // The player page, with nothing from elsewhere.
            let home = try await curl([server.base + "/"], body: directory + "/body")
            #expect(home.hasSuffix("200") && home.contains("Content-Type: text/html") && home.contains("script-src 'self'"))
            #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: directory + "/body")), as: UTF8.self).contains("<video"))
            #expect(try await curl([server.base + "/player.js"], body: directory + "/body").hasSuffix("200"))
            // Another site sending the browser there with a URL gets the page without it.
            let sent = try await curl(
                ["-H", "Sec-Fetch-Site: cross-site", server.base + "/?url=http%3A%2F%2F127.0.0.1%3A1%2F"], body: directory + "/body")
            #expect(sent.hasSuffix("303") && sent.contains("Location: /\r\n"), "\(sent)")
            #expect(try await curl(["-H", "Sec-Fetch-Site: none", server.base + "/?url=x"], body: directory + "/body").hasSuffix("200"))
        }
        try await ServeTests().withServer(["--allow-origin", page]) { (origin, server, directory) async throws -> Void in
            origin.publish("/f.bin", bytes)
            let url = server.media(origin.url("/f.bin"))
            let allowed = try await curl(preflight + [url], body: directory + "/body")
            #expect(allowed.hasSuffix("204"), "\(allowed)")
            #expect(allowed.contains("Access-Control-Allow-Origin: \(page)"))
            #expect(allowed.contains("Access-Control-Allow-Headers: Range"))
            #expect(allowed.contains("Access-Control-Allow-Private-Network: true"))
            // As a browser sends it: Sec-Fetch-Site says same-site (another port of 127.0.0.1), and
            // the named page may still reach the loopback origin.
            let read = try await curl(
                ["-H", "Origin: \(page)", "-H", "Sec-Fetch-Site: same-site", "-H", "Sec-Fetch-Mode: cors", "-r", "0-99", url],
                body: directory + "/body")
            #expect(read.hasSuffix("206") && read.contains("Access-Control-Allow-Origin: \(page)"), "\(read)")
            #expect(read.contains("Access-Control-Expose-Headers: Content-Range"))
            let other = try await curl(["-H", "Origin: http://evil.example", url], body: directory + "/body")
            #expect(!other.contains("Access-Control"), "\(other)")
        }
        let bad = try await vfetch(["serve", "--port", "0", "--allow-origin", "example.com"])
        #expect(bad.status == 64 && bad.standardError.contains("is not an origin"), "\(bad.standardError)")
    }
}

/// Sends `request` as it is over one TCP connection and returns all the server answers until it closes.
func exchange(_ request: String, host: String, port: Int) throws -> String {
    let fd = try connectedSocket(host: host, port: port)
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        answer += buffer[..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}

/// A TCP socket connected to an IPv4 `host`:`port`.
func connectedSocket(host: String, port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, host, &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard fd >= 0, connected == 0 else {
        close(fd)
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    return fd
}
