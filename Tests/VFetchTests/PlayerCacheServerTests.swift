import Foundation
import TestOrigin
import Testing
import VFetch
import VFetchServe

/// `import VFetchServe` alone, as an app embeds the player cache: start it, read through its proxy URL,
/// list what it holds, stop it, and find the same entries after a restart.
struct PlayerCacheServerTests {
    @Test func aPlayerReadsThroughTheProxyURLAndTheEntryOutlivesTheServer() async throws {
        let bytes = randomBytes(3 << 20, seed: 95)
        try await withOrigin { origin, directory in
            origin.publish("/movie.mp4", bytes)
            let url = origin.url("/movie.mp4") + "?a=1&b=2"  // the origin URL's own query stays its own
            let cache = try await PlayerCacheServer.start(directory: directory + "/cache")
            let proxy = cache.proxyURL(for: url)
            #expect(proxy.hasPrefix(cache.baseURL + "/media?url=http%3A%2F%2F127.0.0.1%3A"))
            let read = try await curl(proxy, to: directory + "/read.mp4")
            #expect(read == 0)
            #expect(try sha256(file: directory + "/read.mp4") == sha256(bytes))
            await cache.stop()
            #expect(try await curl(proxy, to: directory + "/again.mp4") == 7, "curl: cannot connect once stopped")

            // A second start finds what the first kept, and serves it from disk: the origin is only asked whether
            // the file is still the same (one byte).
            let reopened = try await PlayerCacheServer.start(directory: directory + "/cache")
            #expect(reopened.entries().map(\.url) == [url])
            #expect(reopened.entries().first?.bytesCached == Int64(bytes.count))
            let served = origin.bytesServed("/movie.mp4")
            #expect(try await curl(reopened.proxyURL(for: url), to: directory + "/again.mp4") == 0)
            #expect(try sha256(file: directory + "/again.mp4") == sha256(bytes))
            #expect(origin.bytesServed("/movie.mp4") <= served + 1, "\(origin.requests.map { ($0.status, $0.header("range")) })")
            // In use until the server has seen the reader go.
            var removed = false
            for _ in 0..<200 where !removed {
                removed = await reopened.removeEntry(url: url)
                if !removed { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(removed)
            #expect(reopened.entries().isEmpty)
            #expect(await !reopened.removeEntry(url: url), "nothing left to remove")
            await reopened.stop()
        }
    }

    /// The queue as a download manager in an app uses it: add, watch, pause, resume, and what was queued
    /// outlives a restart.
    // The limit only guards against a wait for an update that never comes; beside the whole suite on a busy
    // machine this test took over two minutes (alone: seconds).
    @Test(.timeLimit(.minutes(10))) func theQueueDownloadsPausesResumesAndOutlivesARestart() async throws {
        let small = randomBytes(64 << 10, seed: 96)
        let slow = randomBytes(8 << 20, seed: 97)
        try await withOrigin { origin, directory in
            origin.publish("/small.bin", small)
            origin.publish("/slow.bin", slow)
            // 32 KiB/s for all connections together, however many the queue opens: small.bin takes 2 s, and
            // slow.bin cannot end before it is paused, however late a busy machine lets the test look.
            var link = OriginConfiguration()
            link.linkBytesPerSecond = 32 << 10
            origin.configuration = link
            let cache = try await PlayerCacheServer.start(directory: directory + "/cache")
            let updates = await cache.downloadUpdates()
            let first = try await cache.add(origin.url("/small.bin"), to: .directory(directory))
            for await update in updates where update.id == first && update.state == .done { break }
            #expect(try sha256(file: directory + "/small.bin") == sha256(small))
            let second = try await cache.add(origin.url("/slow.bin"), to: .file(directory + "/slow.bin"))
            for await update in updates where update.id == second && update.state == .running && (update.bytesDone ?? 0) > 0 { break }
            #expect(await cache.pause(second))
            let paused = await cache.downloads()
            #expect(paused.first { $0.id == second }?.state == .paused, "\(paused)")
            await #expect(throws: DownloadError.self) { try await cache.add("ftp://x/y", to: .directory(directory)) }
            await cache.stop()

            // Started again, the queue is as it was: resumed, the paused one goes on from what it saved.
            let again = try await PlayerCacheServer.start(directory: directory + "/cache")
            let kept = await again.downloads()
            #expect(kept.map(\.state) == [.done, .paused], "\(kept)")
            origin.configuration = OriginConfiguration()  // the link is fast now: the rest comes at once
            let resumed = await again.downloadUpdates()
            #expect(await again.resume(second))
            for await update in resumed where update.id == second && update.state == .done { break }
            #expect(try sha256(file: directory + "/slow.bin") == sha256(slow))
            #expect(await again.remove(first))
            #expect(await again.downloads().map(\.id) == [second])
            await again.stop()
        }
    }

    /// The size cap changed while it serves: the least recently read entry goes, the other stays and is
    /// served from disk; a larger cap again keeps both.
    @Test func aSmallerCapEvictsTheLeastRecentlyReadEntry() async throws {
        let (older, newer) = (randomBytes(2 << 20, seed: 96), randomBytes(2 << 20, seed: 97))
        try await withOrigin { origin, directory in
            origin.publish("/older.mp4", older)
            origin.publish("/newer.mp4", newer)
            let cache = try await PlayerCacheServer.start(directory: directory + "/cache")
            #expect(cache.maxCacheSize == 10 << 30)
            for (name, bytes) in [("older", older), ("newer", newer)] {
                #expect(try await curl(cache.proxyURL(for: origin.url("/\(name).mp4")), to: directory + "/\(name).mp4") == 0)
                #expect(try sha256(file: directory + "/\(name).mp4") == sha256(bytes))
            }
            #expect(cache.entries().count == 2)
            // Both are in use until the server has seen their readers go.
            for _ in 0..<200 where cache.entries().count == 2 {
                await cache.setMaxCacheSize(3 << 20)
                if cache.entries().count == 2 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(cache.maxCacheSize == 3 << 20)
            #expect(cache.entries().map(\.url) == [origin.url("/newer.mp4")])
            let served = origin.bytesServed("/newer.mp4")
            #expect(try await curl(cache.proxyURL(for: origin.url("/newer.mp4")), to: directory + "/again.mp4") == 0)
            #expect(try sha256(file: directory + "/again.mp4") == sha256(newer))
            #expect(origin.bytesServed("/newer.mp4") <= served + 1, "read from the cache")
            await cache.setMaxCacheSize(10 << 20)
            #expect(try await curl(cache.proxyURL(for: origin.url("/older.mp4")), to: directory + "/older.mp4") == 0)
            #expect(try sha256(file: directory + "/older.mp4") == sha256(older))
            #expect(Set(cache.entries().map(\.url)) == [origin.url("/older.mp4"), origin.url("/newer.mp4")])
            await cache.stop()
        }
    }

    @Test func oneCacheDirectoryHasOneServer() async throws {
        try await withOrigin { _, directory in
            let cache = try await PlayerCacheServer.start(directory: directory + "/cache")
            await #expect(throws: DownloadError.self) { try await PlayerCacheServer.start(directory: directory + "/cache") }
            await cache.stop()
        }
    }
}

/// curl's exit code for reading `url` into `path`.
private func curl(_ url: String, to path: String) async throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-sf", "--noproxy", "*", "--max-time", "60", "-o", path, url]
    return try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { continuation.resume(throwing: error) }
    }
}
