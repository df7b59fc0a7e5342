import Foundation
import Synchronization
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Background downloads in `vfetch serve`, driven by the real CLI.
@Suite struct QueueTests {
    static let mib = 1 << 20

    /// `vfetch ls --json`, parsed.
    func list(_ cache: String) async throws -> [[String: Any]] {
        let listed = try await vfetch(["ls", "--json", "--cache-dir", cache])
        #expect(listed.status == 0, "\(listed.standardError)")
        return listed.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func state(_ id: String, _ cache: String) async throws -> String? {
        try await list(cache).first { $0["id"] as? String == id }?["state"] as? String
    }

    func add(_ urls: [String], _ arguments: [String], cache: String) async throws -> [String] {
        let added = try await vfetch(["add"] + urls + arguments + ["--cache-dir", cache])
        #expect(added.status == 0, "\(added.standardError)")
        return added.standardOutput.split(separator: "\n").map(String.init)
    }

    @Test func serversHeadersGoWithItsBackgroundDownloadsToo() async throws {
        let bytes = randomBytes(Self.mib, seed: 77)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/f.bin", bytes)
            let server = try await ServerProcess.start(cacheDirectory: cache, ["-H", "X-Serve-Header: from serve"])
            let id = try #require(
                try await add([origin.url("/f.bin")], ["-o", directory + "/f.bin", "-H", "X-Own: mine"], cache: cache).first)
            #expect(try await vfetch(["wait", id, "--cache-dir", cache]).status == 0)
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            let requests = origin.requests.filter { $0.path == "/f.bin" }
            #expect(
                !requests.isEmpty && requests.allSatisfy { $0.header("x-serve-header") == "from serve" && $0.header("x-own") == "mine" })
            #expect(await server.stop() == 0)
        }
    }

    /// `add` of an HLS playlist saves the stream (as `get` does), not the playlist's text; adding a file that
    /// is already complete is done, not failed.
    @Test(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
    func aQueuedStreamIsRemuxedAndWhatIsAlreadyThereIsDone() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let bytes = randomBytes(Self.mib, seed: 78)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            try origin.publishDirectory(fixture.directory, at: "/s")
            origin.publish("/f.bin", bytes)
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let stream = origin.url("/s/" + fixture.entry)
            let first = try await add([stream, origin.url("/f.bin")], ["-d", directory, "--format", "worst"], cache: cache)
            let waited = try await vfetch(["wait", "--cache-dir", cache])
            #expect(waited.status == 0, "\(waited.standardError)")
            let listed = try await list(cache)
            let saved = try #require(listed.first { $0["id"] as? String == first.first }?["path"] as? String)
            #expect(try await StreamGetTests.videoFrames(saved) == (try await StreamGetTests.videoFrames(fixture.path(fixture.sources[2]))))
            #expect(!exists(saved + ".parts"))
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))

            let again = try await add([stream, origin.url("/f.bin")], ["-d", directory, "--format", "worst"], cache: cache)
            let rewaited = try await vfetch(["wait"] + again + ["--cache-dir", cache])
            #expect(rewaited.status == 0, "\(rewaited.standardError)")
            for id in again { #expect(try await state(id, cache) == "done") }
            #expect(try await list(cache).first { $0["id"] as? String == again.first }?["path"] as? String == saved)

            let refused = try await vfetch(["add", stream, "--format", "height<=tall", "--cache-dir", cache])
            #expect(refused.status == 64, "\(refused.standardError)")
            #expect(await server.stop() == 0)
        }
    }

    /// `add --mirror` goes with the queued download, into the queue file and to the download: the mirror
    /// serves segments, not only its sample, and the file is whole.
    @Test func aQueuedDownloadTakesItsMirrors() async throws {
        let bytes = randomBytes(4 * Self.mib, seed: 80)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/a/f.bin", bytes, behavior: throttled(128 << 10))  // 8 s alone: time for the mirror to take segments
            origin.publish("/b/f.bin", bytes)
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let mirror = origin.url("/b/f.bin")
            let id = try #require(
                try await add([origin.url("/a/f.bin")], ["-o", directory + "/f.bin", "-c", "4", "--mirror", mirror], cache: cache).first)
            let waited = try await vfetch(["wait", id, "--cache-dir", cache])
            #expect(waited.status == 0, "\(waited.standardError)")
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            #expect(origin.bytesServed("/b/f.bin") > 64 << 10, "the mirror's 64 KiB sample, then segments")
            let refused = try await vfetch([
                "add", origin.url("/a/f.bin"), origin.url("/b/f.bin"), "--mirror", mirror, "--cache-dir", cache,
            ])
            #expect(refused.status == 64, "\(refused.standardError)")
            #expect(await server.stop() == 0)
            // Saved with the download, for a restart to resume with.
            let saved = try #require(FileManager.default.contents(atPath: cache + "/queue.json"))
            let queue = try #require(try JSONSerialization.jsonObject(with: saved) as? [String: Any])
            let request = try #require((queue["items"] as? [[String: Any]])?.first?["request"] as? [String: Any])
            #expect(request["mirrors"] as? [String] == [mirror], "\(request)")
        }
    }

    /// A failed download fails the `wait` that watched it, not every later `wait` until it is removed.
    @Test func aFailureFailsItsOwnWaitOnly() async throws {
        let bytes = randomBytes(Self.mib, seed: 79)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/f.bin", bytes)
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let missing = try await add([origin.url("/missing.bin")], ["-d", directory], cache: cache)
            let failed = try await vfetch(["wait", "--cache-dir", cache])
            #expect(failed.status == 1 && failed.standardError.contains("\(missing[0]) failed: HTTP 404"), "\(failed)")
            _ = try await add([origin.url("/f.bin")], ["-d", directory], cache: cache)
            let waited = try await vfetch(["wait", "--cache-dir", cache])
            #expect(waited.status == 0, "\(waited.standardError)")
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            #expect(try await vfetch(["wait", missing[0], "--cache-dir", cache]).status == 1, "named, it is still failed")
            #expect(try await state(missing[0], cache) == "failed")
            #expect(await server.stop() == 0)
            // No server: `ls` shows the queue as saved, and says so.
            let offline = try await vfetch(["ls", "--json", "--cache-dir", cache])
            #expect(offline.status == 0 && offline.standardError.contains("no vfetch serve runs"), "\(offline)")
            #expect(offline.standardOutput.split(separator: "\n").count == 2, "\(offline.standardOutput)")
        }
    }

    @Test func threeQueuedDownloadsCompleteAcrossAKillNineOfTheServer() async throws {
        let files = (0..<3).map { randomBytes(6 * Self.mib, seed: UInt64(60 + $0)) }
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            for (index, bytes) in files.enumerated() { origin.publish("/\(index).bin", bytes, behavior: throttled(512 << 10)) }
            let first = try await ServerProcess.start(cacheDirectory: cache)
            let ids = try await add((0..<3).map { origin.url("/\($0).bin") }, ["-d", directory, "-c", "4"], cache: cache)
            #expect(ids == ["1", "2", "3"])
            // Kill it once every download has saved something.
            for _ in 0..<100 {
                let saved = try await list(cache).map { $0["bytes_done"] as? Int ?? 0 }
                if saved.count == 3, saved.allSatisfy({ $0 >= Self.mib }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            await first.crash()
            let second = try await ServerProcess.start(cacheDirectory: cache)
            let waited = try await vfetch(["wait", "--cache-dir", cache])
            #expect(waited.status == 0, "\(waited.standardError)")
            for (index, bytes) in files.enumerated() {
                #expect(try sha256(file: directory + "/\(index).bin") == sha256(bytes))
            }
            #expect(try await list(cache).allSatisfy { $0["state"] as? String == "done" })
            #expect(await second.stop() == 0)
        }
    }

    @Test func pauseResumeAndCancel() async throws {
        let bytes = randomBytes(8 * Self.mib, seed: 70)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            // 2 minutes at 4 connections of 16 KiB/s: beside the whole suite, `add` and `pause` took
            // over 30 s once, and a faster file was done before the pause came.
            origin.publish("/f.bin", bytes, behavior: throttled(16 << 10))
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let id = try #require(try await add([origin.url("/f.bin")], ["-o", directory + "/f.bin", "-c", "4"], cache: cache).first)
            try await Task.sleep(for: .milliseconds(800))
            #expect(try await vfetch(["pause", id, "--cache-dir", cache]).status == 0)
            let listed = try await list(cache)
            #expect(listed.first { $0["id"] as? String == id }?["state"] as? String == "paused", "\(listed)")
            // Paused means stopped: nothing more comes from the origin.
            try await Task.sleep(for: .milliseconds(300))
            let served = origin.bytesServed("/f.bin")
            try await Task.sleep(for: .milliseconds(700))
            #expect(origin.bytesServed("/f.bin") == served)
            #expect(exists(directory + "/f.bin.part") && exists(directory + "/f.bin.vfetch"))
            origin.setBehavior("/f.bin", throttled(1 << 20))
            #expect(try await vfetch(["resume", id, "--cache-dir", cache]).status == 0)
            #expect(try await vfetch(["wait", id, "--cache-dir", cache]).status == 0)
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            #expect(origin.bytesServed("/f.bin") < bytes.count + Self.mib, "the resume reused the saved part")

            // Cancelling: without --delete the partial data stays, with it it goes.
            origin.publish("/g.bin", bytes, behavior: throttled(256 << 10))
            // Two connections each: 16 s for the whole file, so both still run when they are removed.
            let kept = try #require(try await add([origin.url("/g.bin")], ["-o", directory + "/kept.bin", "-c", "2"], cache: cache).first)
            let dropped = try #require(
                try await add([origin.url("/g.bin")], ["-o", directory + "/dropped.bin", "-c", "2"], cache: cache).first)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await vfetch(["rm", kept, "--cache-dir", cache]).status == 0)
            #expect(try await vfetch(["rm", dropped, "--delete", "--cache-dir", cache]).status == 0)
            try await Task.sleep(for: .milliseconds(300))
            #expect(exists(directory + "/kept.bin.vfetch"))
            #expect(!exists(directory + "/dropped.bin.part") && !exists(directory + "/dropped.bin.vfetch"))
            #expect(try await list(cache).map { $0["id"] as? String } == [id])
            let unknown = try await vfetch(["pause", "99", "--cache-dir", cache])
            #expect(unknown.status == 1 && unknown.standardError.contains("no download with ID 99"))
            #expect(await server.stop() == 0)
        }
    }

    @Test func aResumeWhileThePauseIsStillStoppingFinishes() async throws {
        let bytes = randomBytes(4 * Self.mib, seed: 75)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/f.bin", bytes, behavior: throttled(512 << 10))
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let id = try #require(try await add([origin.url("/f.bin")], ["-o", directory + "/f.bin", "-c", "2"], cache: cache).first)
            try await Task.sleep(for: .milliseconds(300))
            let token = try server.token()
            // Both in one go, as fast as a script can: the resume arrives while the download still stops.
            let both = try await run(
                "/bin/sh",
                [
                    "-c",
                    """
                    curl -sf -X POST -H 'Authorization: Bearer \(token)' \(server.base)/api/downloads/\(id)/pause >/dev/null &&
                    curl -sf -X POST -H 'Authorization: Bearer \(token)' \(server.base)/api/downloads/\(id)/resume >/dev/null
                    """,
                ])
            #expect(both.status == 0)
            #expect(try await vfetch(["wait", id, "--cache-dir", cache]).status == 0)
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            #expect(await server.stop() == 0)
        }
    }

    @Test func atMostTheConfiguredNumberRunAtOnce() async throws {
        let files = (0..<3).map { randomBytes(2 * Self.mib, seed: UInt64(80 + $0)) }
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            for (index, bytes) in files.enumerated() { origin.publish("/\(index).bin", bytes, behavior: throttled(1 << 20)) }
            let server = try await ServerProcess.start(cacheDirectory: cache, ["--max-downloads", "1"])
            // The server's own account of every state change, in order: no clock involved.
            let finished = Flag()
            async let events = server.events(until: finished)
            try await Task.sleep(for: .milliseconds(300))
            _ = try await add((0..<3).map { origin.url("/\($0).bin") }, ["-d", directory, "-c", "2"], cache: cache)
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            finished.set()
            var running: Set<String> = []
            var mostRunning = 0
            var done = 0
            for line in try await events.standardOutput.split(separator: "\n") where line.hasPrefix("data: ") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any],
                    let id = object["id"] as? String, let state = object["state"] as? String
                else { continue }
                if state == "running" { running.insert(id) } else { running.remove(id) }
                if state == "done" { done += 1 }
                mostRunning = max(mostRunning, running.count)
            }
            #expect(mostRunning == 1)
            #expect(done >= 3)
            for (index, bytes) in files.enumerated() {
                #expect(try sha256(file: directory + "/\(index).bin") == sha256(bytes))
            }
            #expect(await server.stop() == 0)
        }
    }

    @Test func unauthorizedAndMalformedRequestsAreRefused() async throws {
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let token = try server.token()
            let mode = try FileManager.default.attributesOfItem(atPath: cache + "/token")[.posixPermissions] as? Int
            #expect(mode == 0o600)
            func curl(_ arguments: [String], token: String? = token) async throws -> String {
                let auth = token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
                return try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + auth + arguments).standardOutput
            }
            let api = server.base + "/api/downloads"
            #expect(try await curl([api], token: nil) == "401")
            #expect(try await curl([api], token: "not-the-token") == "401")
            #expect(try await curl([api]) == "200")
            #expect(try await curl(["-X", "POST", "-d", "{not json", api]) == "400")
            #expect(try await curl(["-X", "POST", "-d", #"{"url":"ftp://x/y","output":"/tmp/y"}"#, api]) == "400")
            #expect(try await curl(["-X", "POST", "-d", #"{"url":"http://x/y","output":"relative"}"#, api]) == "400")
            #expect(try await curl([api + "/42"]) == "404")
            #expect(try await curl(["-X", "DELETE", api + "/42"]) == "404")
            #expect(try await curl(["-X", "POST", api + "/42/pause"]) == "404")
            #expect(try await curl(["-X", "PATCH", api]) == "405")
            #expect(try await curl([server.base + "/api/nothing"]) == "404")
            #expect(try await curl(["-X", "PUT", "-d", #"{"max_concurrent":0}"#, server.base + "/api/settings"]) == "400")
            #expect(try await curl(["-X", "PUT", "-d", #"{"max_concurrent":2}"#, server.base + "/api/settings"]) == "200")
            _ = origin
            #expect(await server.stop() == 0)
        }
    }

    @Test func aServerOfAnotherCacheDirectorySaysWhatToDo() async throws {
        try await withOrigin { origin, directory in
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            let other = directory + "/other"
            let run = try await vfetch(["add", origin.url("/a.bin"), "-d", directory, "--server", server.base, "--cache-dir", other])
            #expect(run.status == 5, "\(run)")
            #expect(run.standardError.contains("refused no token in \(other) (HTTP 401)"), "\(run.standardError)")
            #expect(run.standardError.contains("--cache-dir") && run.standardError.split(separator: "\n").count == 1)
            #expect(await server.stop() == 0)
        }
    }

    @Test func twoClientsAtOnceAndEventsAndTheCompletionHook() async throws {
        let bytes = randomBytes(3 * Self.mib, seed: 90)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            origin.publish("/a.bin", bytes, behavior: throttled(1 << 20))
            origin.publish("/b.bin", bytes, behavior: throttled(1 << 20))
            let hook = directory + "/hook.log"
            let server = try await ServerProcess.start(cacheDirectory: cache, ["--on-complete", "printf '%s %s\\n' >> \(hook)"])
            let finished = Flag()
            async let events = server.events(until: finished)
            try await Task.sleep(for: .milliseconds(300))
            // Two connections each: long enough (1.5 s) for progress events, which come twice a second.
            async let first = add([origin.url("/a.bin")], ["-o", directory + "/a.bin", "-c", "2"], cache: cache)
            async let second = add([origin.url("/b.bin")], ["-o", directory + "/b.bin", "-c", "2"], cache: cache)
            let ids = try await (first + second)
            #expect(Set(ids) == ["1", "2"])
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            finished.set()
            for name in ["a", "b"] { #expect(try sha256(file: directory + "/\(name).bin") == sha256(bytes)) }
            let stream = try await events.standardOutput
            #expect(stream.contains("event: progress"))
            #expect(stream.contains("event: state") && stream.contains(#""state":"done""#), "\(stream.prefix(2000))")
            let log = (try? String(contentsOfFile: hook, encoding: .utf8)) ?? ""
            #expect(log.contains(directory + "/a.bin " + origin.url("/a.bin")), "hook log: \(log)")
            #expect(await server.stop() == 0)
        }
    }
}

/// A one-way switch shared with a polling thread.
final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
