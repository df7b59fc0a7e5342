import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Secrets at rest and on screen: the cache directory and its files are private, and no password,
/// credential header or API token is ever shown, logged or sent back.
@Suite struct SecretsTests {
    static let secret = "s3cret"

    /// `url` (http://127.0.0.1:PORT/…) with a user and password in it.
    func withPassword(_ url: String) -> String {
        url.replacingOccurrences(of: "http://", with: "http://ann:\(Self.secret)@")
    }

    /// The permission bits of `path` (a link itself, not what it points to); nil when nothing is there.
    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }

    func expectNoSecret(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!text.contains(Self.secret), "\(what) shows the secret: \(text)", sourceLocation: sourceLocation)
    }

    @Test func aURLPasswordIsNeverShownByGet() async throws {
        try await withOrigin { origin, directory in
            let missing = try await vfetch(["get", withPassword(origin.url("/missing")), "-o", directory + "/missing"])
            #expect(missing.status == 5, "\(missing)")
            #expect(missing.standardError.contains("ann:***@127.0.0.1"), "\(missing.standardError)")
            expectNoSecret(missing.standardError, "the error")

            let json = try await vfetch(["get", "--json", withPassword(origin.url("/missing")), "-o", directory + "/missing"])
            #expect(json.status == 5)
            #expect(json.standardOutput.contains(#""event":"error""#) && json.standardOutput.contains("ann:***@"), "\(json)")
            expectNoSecret(json.standardOutput + json.standardError, "the --json error event")

            let bytes = randomBytes(256 << 10, seed: 301)
            origin.publish("/f.bin", bytes)
            let done = try await vfetch(["get", "--json", withPassword(origin.url("/f.bin")), "-o", directory + "/f.bin"])
            #expect(done.status == 0, "\(done)")
            let events = done.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let started = try #require(events.first { $0["event"] as? String == "started" })
            #expect(started["url"] as? String == withPassword(origin.url("/f.bin")).replacingOccurrences(of: Self.secret, with: "***"))
            #expect((started["final_url"] as? String)?.contains("ann:***@") == true, "\(started)")
            expectNoSecret(done.standardOutput + done.standardError, "the --json events")
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes), "the password still reached the origin")

            let shown = try await vfetch(["get", withPassword(origin.url("/f.bin")), "-o", directory + "/g.bin"])
            #expect(shown.status == 0 && shown.standardError.contains("ann:***@"), "\(shown)")
            expectNoSecret(shown.standardError, "the progress lines")
        }
    }

    @Test func anUnfinishedDownloadKeepsItsPasswordPrivately() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/slow.bin", randomBytes(4 << 20, seed: 302), behavior: throttled(256 << 10))
            let output = directory + "/slow.bin"
            let stopped = try await vfetch(["get", withPassword(origin.url("/slow.bin")), "-o", output]) {
                FileManager.default.fileExists(atPath: output + ".vfetch")
            }
            #expect(stopped.status == 130, "\(stopped)")
            expectNoSecret(stopped.standardError, "the interrupted download")
            // The manifest keeps the real URL (a resume needs it), readable by its owner only.
            #expect(try String(contentsOfFile: output + ".vfetch", encoding: .utf8).contains(Self.secret))
            #expect(mode(output + ".vfetch") == 0o600)
            for arguments in [["status", output], ["status", "--json", output]] {
                let status = try await vfetch(arguments)
                #expect(status.status == 0 && status.standardOutput.contains("ann:***@"), "\(status)")
                expectNoSecret(status.standardOutput + status.standardError, "vfetch \(arguments.joined(separator: " "))")
            }
        }
    }

    @Test func aCredentialHeaderIsNeverEchoed() async throws {
        for header in ["Authorization: Bearer \(Self.secret)\n", "cookie: id=\(Self.secret)\r"] {
            let refused = try await vfetch(["get", "-H", header, "http://127.0.0.1:9/x", "-o", "/dev/null"])
            #expect(refused.status == 64, "\(refused)")
            #expect(refused.standardError.contains(": ***"), "\(refused.standardError)")
            expectNoSecret(refused.standardError, "the refusal of -H")
        }
    }

    @Test func theQueueShowsNoPasswordHeaderOrToken() async throws {
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            let headers = ["-H", "Authorization: Bearer \(Self.secret)", "-H", "Cookie: id=\(Self.secret)"]
            // No server runs: `add` starts one in the background, logging to serve.log.
            let added = try await vfetch(
                ["add", withPassword(origin.url("/missing")), "-o", directory + "/missing", "--cache-dir", cache] + headers)
            #expect(added.status == 0, "\(added)")
            #expect(added.standardError.contains("started vfetch serve on http://127.0.0.1:"), "said, not silent: \(added)")
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cache + "/server.json")))
            let object = try #require(record as? [String: Any])
            let pid = try #require(object["pid"] as? Int)
            let base = try #require(object["url"] as? String)
            defer { if exists(cache + "/server.json") { kill(pid_t(pid), SIGINT) } }
            let token = try String(contentsOfFile: cache + "/token", encoding: .utf8)

            let waited = try await vfetch(["wait", "--cache-dir", cache])
            #expect(waited.status == 1 && waited.standardError.contains("ann:***@"), "\(waited)")
            var shown = added.standardOutput + added.standardError + waited.standardError
            let listed = try await vfetch(["ls", "--json", "--cache-dir", cache])
            #expect(listed.standardOutput.contains(#"ann:***@"#), "\(listed)")
            let table = try await vfetch(["ls", "--cache-dir", cache])
            let api = try await run("/usr/bin/curl", ["-s", "-H", "Authorization: Bearer \(token)", base + "/api/downloads"])
            #expect(api.standardOutput.contains(#""state":"failed""#), "\(api)")
            shown += listed.standardOutput + listed.standardError + table.standardOutput + api.standardOutput
            expectNoSecret(shown, "the queue commands and the API")
            #expect(!shown.contains(token), "the token is never shown")

            // The queue keeps what a resume needs.
            #expect(try String(contentsOfFile: cache + "/queue.json", encoding: .utf8).contains(Self.secret))
            kill(pid_t(pid), SIGINT)
            for _ in 0..<100 where exists(cache + "/server.json") { try await Task.sleep(for: .milliseconds(50)) }
            let log = try String(contentsOfFile: cache + "/serve.log", encoding: .utf8)
            expectNoSecret(log, "serve.log")
            #expect(!log.contains(token), "the token is never logged")
        }
    }

    @Test func theCacheShowsNoPasswordToPlayersOrInItsLists() async throws {
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/clip.bin", randomBytes(512 << 10, seed: 303))
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let read = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(withPassword(origin.url("/clip.bin")))])
            #expect(read.status == 0, "\(read)")
            let missing = try await run("/usr/bin/curl", ["-s", server.media(withPassword(origin.url("/missing")))])
            #expect(missing.standardOutput.contains("origin: HTTP 404") && missing.standardOutput.contains("ann:***@"), "\(missing)")
            let status = try await run("/usr/bin/curl", ["-sf", server.base + "/status"])
            #expect(status.standardOutput.contains("ann:***@"), "\(status)")
            let listed = try await vfetch(["cache", "ls", "--cache-dir", cache])
            let json = try await vfetch(["cache", "ls", "--json", "--cache-dir", cache])
            #expect(listed.standardOutput.contains("ann:***@") && json.standardOutput.contains("ann:***@"), "\(listed) \(json)")
            let shown = missing.standardOutput + status.standardOutput + listed.standardOutput + json.standardOutput
            expectNoSecret(shown, "the player's error, /status and cache ls")
            #expect(!shown.contains(try server.token()), "the token is never shown")
            #expect(await server.stop() == 0)
        }
    }

    @Test func theCacheDirectoryAndItsFilesArePrivate() async throws {
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/f.bin", randomBytes(64 << 10, seed: 304))
            // A link where serve.log goes is replaced, never followed.
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            try "mine\n".write(toFile: directory + "/mine.txt", atomically: false, encoding: .utf8)
            #expect(symlink(directory + "/mine.txt", cache + "/serve.log") == 0)
            // No server runs: `add` starts one in the background, logging to serve.log.
            let added = try await vfetch(["add", origin.url("/f.bin"), "-o", directory + "/f.bin", "--cache-dir", cache])
            #expect(added.status == 0, "\(added)")
            #expect(added.standardError.contains("started vfetch serve on http://127.0.0.1:"), "said, not silent: \(added)")
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cache + "/server.json")))
            let pid = try #require((record as? [String: Any])?["pid"] as? Int)
            let base = try #require((record as? [String: Any])?["url"] as? String)
            defer { if exists(cache + "/server.json") { kill(pid_t(pid), SIGINT) } }
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            let read = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", base + "/media?url=" + origin.url("/f.bin")])
            #expect(read.status == 0, "\(read)")
            #expect(mode(cache) == 0o700)
            for file in ["queue.json", "token", "server.json", "serve.log", "lock"] {
                #expect(mode(cache + "/" + file) == 0o600, "\(file)")
            }
            #expect(try String(contentsOfFile: directory + "/mine.txt", encoding: .utf8) == "mine\n")
            kill(pid_t(pid), SIGINT)
            for _ in 0..<100 where exists(cache + "/server.json") { try await Task.sleep(for: .milliseconds(50)) }
            #expect(mode(cache + "/index.json") == 0o600, "saved on the way out")
            let entries = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".vfetch") }
            #expect(!entries.isEmpty && entries.allSatisfy { mode(cache + "/" + $0) == 0o600 }, "\(entries)")
        }
    }

    @Test func anOpenCacheDirectoryOfOursIsMadePrivate() async throws {
        try await withOrigin { _, directory in
            let cache = directory + "/cache"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            chmod(cache, 0o755)
            let listed = try await vfetch(["cache", "ls", "--cache-dir", cache])
            #expect(listed.status == 0, "\(listed)")
            #expect(mode(cache) == 0o700)
            let nested = directory + "/new/nested/cache"
            let made = try await vfetch(["cache", "ls", "--cache-dir", nested])
            #expect(made.status == 0, "\(made)")
            #expect(mode(nested) == 0o700 && mode(directory + "/new") == 0o700)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a directory to another user"))
    func anotherUsersCacheDirectoryIsRefused() async throws {
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            chmod(cache, 0o755)
            #expect(chown(cache, 65534, 65534) == 0)
            for arguments in [["cache", "ls"], ["serve", "--port", "0"], ["add", origin.url("/f.bin"), "-o", directory + "/f.bin"]] {
                let refused = try await run(vfetchBinary, arguments + ["--cache-dir", cache], timeout: .seconds(10))
                #expect(refused.status == 7, "\(arguments): \(refused)")
                let lines = refused.standardError.split(separator: "\n")
                #expect(lines.count == 1 && refused.standardError.contains("belongs to another user"), "\(refused.standardError)")
            }
            #expect(mode(cache) == 0o755, "left as it was")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache).isEmpty, "nothing written there")
        }
    }
}
