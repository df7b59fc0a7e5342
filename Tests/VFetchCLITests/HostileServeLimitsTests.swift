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
            #expect(try await curl([server.stream(origin.url("/v/index.m3u8"))], body: body).hasSuffix("200"))
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
            #expect(try await curl([first.stream(origin.url("/private.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(bytes))
            #expect(try await first.waitForEntry(origin.url("/private.bin")) { $0["complete"] as? Bool == true })
            // The entry is complete and fresh: a page still gets none of it.
            let fresh = try await curl(page + [first.stream(origin.url("/private.bin"))], body: body)
            #expect(fresh.hasSuffix("502"), "\(fresh)")
            #expect(try sha256(file: body) != sha256(bytes))
            #expect(await first.stop() == 0)
            // Another run: the page's request revalidates under its rules, is refused, and that is not
            // "the origin is offline, serve the copy".
            let second = try await ServerProcess.start(cacheDirectory: cache, ["--allow-origin", "*"])
            let revalidated = try await curl(page + [second.stream(origin.url("/private.bin")), "-r", "0-1023"], body: body)
            #expect(revalidated.hasSuffix("502"), "\(revalidated)")
            #expect(try sha256(file: body) != sha256(Array(bytes.prefix(1024))))
            // The player still reads it.
            #expect(try await curl([second.stream(origin.url("/private.bin"))], body: body).hasSuffix("200"))
            #expect(try sha256(file: body) == sha256(bytes))
            #expect(await second.stop() == 0)
        }
    }
}
