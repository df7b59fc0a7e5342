import Foundation
import TestOrigin
import Testing

/// What the commands ask a running `vfetch serve` through its API: `cache rm`, the queue page's address.
@Suite struct ServeAPITests {
    static let mib = 1 << 20

    /// The running server removes what `cache rm` names (it exited 11 before): its files go, the rest
    /// stays and is served; an entry being fetched stays, with exit 11; a name of nothing is exit 1.
    @Test func cacheRmAsksTheRunningServer() async throws {
        let (kept, removed) = (randomBytes(2 * Self.mib, seed: 61), randomBytes(2 * Self.mib, seed: 62))
        try await withOrigin { origin, directory in
            origin.publish("/kept.bin", kept)
            origin.publish("/removed.bin", removed)
            origin.publish("/slow.bin", randomBytes(16 * Self.mib, seed: 63))
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache)
            for url in [origin.url("/kept.bin"), origin.url("/removed.bin")] {
                #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(url)]).status == 0)
                #expect(try await server.waitForEntry(url) { $0["complete"] as? Bool == true })
            }
            let id = try #require(try await server.files().first { $0["url"] as? String == origin.url("/removed.bin") }?["id"] as? String)
            #expect(FileManager.default.fileExists(atPath: "\(cache)/\(id).part"))

            let rm = try await vfetch(["cache", "rm", origin.url("/removed.bin"), "--cache-dir", cache])
            #expect(rm.status == 0, "\(rm)")
            let urls = try await server.files().compactMap { $0["url"] as? String }
            #expect(urls == [origin.url("/kept.bin")], "\(urls)")
            #expect(!FileManager.default.fileExists(atPath: "\(cache)/\(id).part"))
            let again = directory + "/kept"
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", again, server.media(origin.url("/kept.bin"))]).status == 0)
            #expect(try sha256(file: again) == sha256(kept))

            let missing = try await vfetch(["cache", "rm", "nope", "--cache-dir", cache])
            #expect(missing.status == 1 && missing.standardError.contains("not in the cache: nope"), "\(missing)")

            // Its first byte read, the rest is fetched ahead over a link of 256 KiB/s (all connections together,
            // however many serve opens): in use for a minute.
            var link = OriginConfiguration()
            link.linkBytesPerSecond = 256 << 10
            origin.configuration = link
            let slow = origin.url("/slow.bin")
            #expect(try await run("/usr/bin/curl", ["-sf", "-r", "0-0", "-o", "/dev/null", server.media(slow)]).status == 0)
            #expect(try await server.waitForEntry(slow) { $0["downloading"] as? Bool == true })
            let busy = try await vfetch(["cache", "rm", slow, "--cache-dir", cache])
            #expect(busy.status == 11 && busy.standardError.contains("in use"), "\(busy)")
            #expect(try await server.files().contains { $0["url"] as? String == slow })

            // `cache clear` while it runs: every entry but the one in use.
            let clear = try await vfetch(["cache", "clear", "--cache-dir", cache])
            #expect(clear.status == 11 && clear.standardError.contains("in use"), "\(clear)")
            #expect(try await server.files().compactMap { $0["url"] as? String } == [slow])
            #expect(await server.stop() == 0)
        }
    }

    /// `vfetch ls --web` prints the queue page's address, with the token in its fragment only.
    @Test func lsWebPrintsThePageWithTheTokenInItsFragment() async throws {
        try await withOrigin { _, directory in
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let printed = try await vfetch(["ls", "--web", "--cache-dir", cache])
            #expect(printed.status == 0, "\(printed)")
            let address = printed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            let token = try server.token().trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(address.hasPrefix(server.base + "/queue#token=" + token + "&dir="), "\(address)")
            let page = try await run("/usr/bin/curl", ["-sf", "-D", "-", String(address.prefix { $0 != "#" })])
            #expect(page.status == 0 && page.standardOutput.contains("/queue.js"), "\(page)")
            #expect(page.standardOutput.contains("connect-src 'self'") && !page.standardOutput.contains(token))
            #expect(await server.stop() == 0)
            let none = try await vfetch(["ls", "--web", "--cache-dir", cache])
            #expect(none.status == 4 && none.standardOutput.isEmpty, "\(none)")
        }
    }
}
