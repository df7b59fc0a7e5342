import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch serve` attacked through what it parses, keeps and holds open (issue 27): each test failed
/// before its fix.
@Suite struct HostileServeLimitsTests {
    func curl(_ arguments: [String], body: String) async throws -> String {
        try await HostileServeTests().curl(arguments, body: body)
    }

    /// A VOD playlist of `segments` lines of `nameLength` characters each.
    func vodPlaylist(segments: Int, nameLength: Int = 16) -> [UInt8] {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
        for number in 0..<segments {
            let name = "s\(number)-" + String(repeating: "x", count: nameLength)
            text += "#EXTINF:2,\n\(name).ts\n"
        }
        return Array((text + "#EXT-X-ENDLIST\n").utf8)
    }

    var playlistType: OriginBehavior {
        var behavior = OriginBehavior()
        behavior.contentType = "application/vnd.apple.mpegurl"
        return behavior
    }

    @Test func aWebPageNeverHasStatusParseTheKeptPlaylists() async throws {
        try await ServeTests().withServer { (origin, server, directory) async throws -> Void in
            origin.publish("/v/index.m3u8", vodPlaylist(segments: 4), behavior: playlistType)
            let body = directory + "/body"
            #expect(try await curl([server.media(origin.url("/v/index.m3u8"))], body: body).hasSuffix("200"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: server.cacheDirectory).contains { $0.hasSuffix(".playlist") })
            // Another site's page (a no-cors fetch says only Sec-Fetch-Site; a CORS one its Origin): nothing is read.
            for header in ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Site: same-site", "Origin: https://evil.example"] {
                let answer = try await curl(["-H", header, server.base + "/status"], body: body)
                #expect(answer.hasSuffix("403"), "\(header): \(answer)")
                let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: body)), as: UTF8.self)
                #expect(!text.contains("index.m3u8"), "\(text)")
            }
            // The user (curl, a player, serve's own page) still sees the stream.
            let entries = try await server.status()["entries"] as? [[String: Any]] ?? []
            #expect(entries.contains { $0["kind"] as? String == "stream" }, "\(entries)")
            let own = try await curl(["-H", "Sec-Fetch-Site: same-origin", server.base + "/status"], body: body)
            #expect(own.hasSuffix("200"), "\(own)")
        }
    }

    @Test func underAnyOriginAPageNeverReadsWhatAPlayerFetchedFromAPrivateAddress() async throws {
        let bytes = randomBytes(256 << 10, seed: 71)
        let page = ["-H", "Origin: https://evil.example", "-H", "Sec-Fetch-Site: cross-site"]
        try await withOrigin { origin, directory in
            // The origin is on loopback: a player may fetch from it, a page may not.
            origin.publish("/private.bin", bytes)
            let cache = directory + "/cache"
            let body = directory + "/body"
            let first = try await ServerProcess.start(cacheDirectory: cache, ["--allow-origin", "*"])
            #expect(try await curl([first.media(origin.url("/private.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(bytes))
            #expect(try await first.waitForEntry(origin.url("/private.bin")) { $0["complete"] as? Bool == true })
            // The entry is complete and fresh: a page still gets none of it.
            let fresh = try await curl(page + [first.media(origin.url("/private.bin"))], body: body)
            #expect(fresh.hasSuffix("502"), "\(fresh)")
            #expect(try sha256(file: body) != sha256(bytes))
            #expect(await first.stop() == 0)
            // Another run: the page's request revalidates under its rules, is refused, and that is not
            // "the origin is offline, serve the copy".
            let second = try await ServerProcess.start(cacheDirectory: cache, ["--allow-origin", "*"])
            let revalidated = try await curl(page + [second.media(origin.url("/private.bin")), "-r", "0-1023"], body: body)
            #expect(revalidated.hasSuffix("502"), "\(revalidated)")
            #expect(try sha256(file: body) != sha256(Array(bytes.prefix(1024))))
            // The player still reads it.
            #expect(try await curl([second.media(origin.url("/private.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(bytes))
            #expect(await second.stop() == 0)
        }
    }

    @Test func aClientThatNeverReadsLosesItsConnectionAndAnIdleOneIsClosed() async throws {
        let bytes = randomBytes(16 << 20, seed: 81)
        try await withOrigin { origin, directory in
            origin.publish("/big.bin", bytes)
            let server = try await ServerProcess.start(
                cacheDirectory: directory + "/cache", ["--client-timeout", "2"], fileLimit: 64)
            let port = Int(server.base.split(separator: ":").last!)!
            let path = String(server.media(origin.url("/big.bin")).dropFirst(server.base.count))
            // Complete in the cache: each silent client then holds its socket and the cache file, nothing else.
            #expect(try await curl([server.media(origin.url("/big.bin"))], body: directory + "/body").hasSuffix("200"))
            #expect(try await server.waitForEntry(origin.url("/big.bin")) { $0["complete"] as? Bool == true })
            // Clients that ask for the big file and never read a byte: more than the server can hold.
            var silent: [Int32] = []
            for _ in 0..<40 {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var small: Int32 = 4096
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard connected == 0 else {
                    close(fd)
                    continue
                }
                let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
                _ = send(fd, request, request.count, 0)
                silent.append(fd)
            }
            defer { for fd in silent { close(fd) } }
            // A player is served once the silent ones are closed (until then every slot is busy and its
            // connection is closed at once): tried again until then, for 3 minutes at most.
            var served = false
            let deadline = Date().addingTimeInterval(180)
            while !served, Date() < deadline {
                let player = try await run(
                    "/usr/bin/curl",
                    ["-s", "-m", "10", "-o", directory + "/body", "-w", "%{http_code}", server.media(origin.url("/big.bin"))])
                served = player.standardOutput == "200" && (try? sha256(file: directory + "/body")) == sha256(bytes)
                if !served { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(served, "a player got the file")
            // The server closed a silent client: reading it now ends (all it was sent, then the end).
            #expect(endsWithin(seconds: 60, silent[0]), "the silent connection was closed")
            // A kept-alive connection that read its answer and asks nothing more is closed too.
            let idle = try connectedSocket(host: "127.0.0.1", port: port)
            defer { close(idle) }
            let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
            _ = send(idle, request, request.count, 0)
            #expect(endsWithin(seconds: 20, idle), "the idle connection was closed")
            #expect(await server.stop() == 0)
        }
    }

    /// Reads `fd` until the peer closes it (true), or `seconds` pass (false).
    func endsWithin(seconds: Int, _ fd: Int32) -> Bool {
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(Double(seconds))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
        }
        return false
    }

    @Test func keptPlaylistsCountInTheCacheSizeAsSoonAsTheyAreKept() async throws {
        let limit: Int64 = 4 << 20
        try await ServeTests().withServer(["--max-cache-size", "4M"]) { (origin, server, directory) async throws -> Void in
            let cacheDirectory = server.cacheDirectory
            func used() -> Int64 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? []
                return names.filter { $0.hasSuffix(".part") || $0.hasSuffix(".playlist") }.reduce(Int64(0)) { total, name in
                    var info = stat()
                    return total + (stat(cacheDirectory + "/" + name, &info) == 0 ? Int64(info.st_blocks) * 512 : 0)
                }
            }
            // Playlists of about 0.9 MiB each (long names, few lines): eight of them are twice the cache.
            let body = directory + "/body"
            for number in 0..<8 {
                origin.publish("/p\(number)/index.m3u8", vodPlaylist(segments: 900, nameLength: 1000), behavior: playlistType)
                #expect(try await curl([server.media(origin.url("/p\(number)/index.m3u8"))], body: body).hasSuffix("200"))
                let total = used()
                #expect(total <= limit, "after playlist \(number): \(total) bytes kept, more than the 4 MiB cache")
            }
            let kept = try FileManager.default.contentsOfDirectory(atPath: cacheDirectory).filter { $0.hasSuffix(".playlist") }
            #expect(!kept.isEmpty && kept.count < 8, "\(kept)")
        }
    }
}
