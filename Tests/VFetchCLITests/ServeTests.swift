import Foundation
import TestOrigin
import Testing
import VFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch serve` with real players (ffmpeg, ffprobe, curl) against the real origin.
@Suite struct ServeTests {
    static let mib = 1 << 20

    func fixture() async throws -> [UInt8] {
        let path = try #require(await InfoTests.moovAtEnd.file(), "ffmpeg could not make the fixture")
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func withServer<T>(
        _ arguments: [String] = [], _ body: (TestOrigin, ServerProcess, String) async throws -> T
    ) async throws -> T {
        try await withOrigin { origin, directory in
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache", arguments)
            do {
                let result = try await body(origin, server, directory)
                #expect(await server.stop() == 0, "a clean stop exits with 0")
                return result
            } catch {
                await server.crash()
                throw error
            }
        }
    }

    @Test func aPlayerDecodesTheSameFramesThroughTheServerWhileTheOriginThrottles() async throws {
        let bytes = try await fixture()
        let original = try await frameChecksums(try #require(await InfoTests.moovAtEnd.file()))
        try await withServer(["-c", "8"]) { origin, server, _ in
            origin.publish("/clip.mp4", bytes, behavior: throttled(256 << 10))
            let served = try await frameChecksums(server.media(origin.url("/clip.mp4")))
            #expect(served.status == 0, "\(served.standardError)")
            #expect(served.standardOutput == original.standardOutput && !original.standardOutput.isEmpty)
            // Once complete, the entry is served from disk: the origin sees nothing more.
            #expect(try await server.waitForEntry(origin.url("/clip.mp4")) { $0["complete"] as? Bool == true })
            // (Counted in requests, not bytes: a raced transfer's last chunk may still be on its way as
            // the entry turns complete.)
            let asked = origin.requests.count
            let again = try await frameChecksums(server.media(origin.url("/clip.mp4")))
            #expect(again.standardOutput == original.standardOutput)
            let fetched = origin.requests.dropFirst(asked).filter { $0.path == "/clip.mp4" && $0.status != 304 }
            #expect(fetched.isEmpty, "\(fetched.map { "\($0.status) \($0.header("Range") ?? "whole")" })")
        }
    }

    @Test(.enabled(if: InfoTests.hasSample, InfoTests.noSample))
    func theRealWorldSamplePlaysThroughIt() async throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: InfoTests.sample)))
        let original = try await frameChecksums(InfoTests.sample)
        try await withServer { origin, server, _ in
            origin.publish("/bbb.mp4", bytes, behavior: throttled(512 << 10))
            let served = try await frameChecksums(server.media(origin.url("/bbb.mp4")))
            #expect(served.status == 0, "\(served.standardError)")
            #expect(served.standardOutput == original.standardOutput && !original.standardOutput.isEmpty)
        }
    }

    @Test func seekingIntoAnUncachedRegionPlaysFromThereAndFetchesLittleElse() async throws {
        // The 3 MB clip with 12 MiB of `free` box after its moov: a file of 15 MB, of which the seek
        // needs about 2 MB (the head, the index, a window at 8 s).
        var bytes = try await fixture()
        let free = 12 << 20
        bytes += [UInt8(free >> 24), UInt8(free >> 16 & 0xFF), 0, 0] + Array("free".utf8) + [UInt8](repeating: 0, count: free - 8)
        let path = try #require(await InfoTests.moovAtEnd.file())
        let original = try await frameChecksums(path, seek: 8, frames: 10)
        try await withServer(["--prefetch", "none"]) { origin, server, _ in
            origin.publish("/clip.mp4", bytes, behavior: throttled(256 << 10))
            let url = server.media(origin.url("/clip.mp4"))
            let probe = try await run("/usr/bin/env", ["ffprobe", "-v", "error", "-show_entries", "format=duration", url])
            #expect(probe.status == 0 && probe.standardOutput.contains("duration=12"), "\(probe)")
            let seeked = try await frameChecksums(url, seek: 8, frames: 10)
            #expect(seeked.status == 0, "\(seeked.standardError)")
            #expect(seeked.standardOutput == original.standardOutput && !original.standardOutput.isEmpty)
            // Without prefetch only the head, the index and what the seek needed came from the origin, not the
            // whole file as with prefetch. (The origin counts what it wrote before an abort, and beside the
            // whole suite players come late: the windows behind them are fetched whole.)
            #expect(origin.bytesServed("/clip.mp4") < bytes.count / 3, "served \(origin.bytesServed("/clip.mp4")) of \(bytes.count)")
        }
    }

    @Test func severalPlayersOfTheSameAndOfDifferentFilesAtOnce() async throws {
        let clip = try await fixture()
        let other = randomBytes(6 * Self.mib, seed: 7)
        let original = try await frameChecksums(try #require(await InfoTests.moovAtEnd.file()))
        try await withServer { origin, server, directory in
            origin.publish("/clip.mp4", clip, behavior: throttled(256 << 10))
            origin.publish("/other.bin", other, behavior: throttled(512 << 10))
            let clipURL = server.media(origin.url("/clip.mp4"))
            // A paused player: it reads 1 KiB a second and holds nobody up.
            let done = Flag()
            async let paused = run(
                "/usr/bin/curl", ["-s", "-o", "/dev/null", "--limit-rate", "1K", clipURL], signal: SIGKILL, when: { done.isSet })
            async let first = frameChecksums(clipURL)
            async let second = frameChecksums(clipURL)
            async let download = run("/usr/bin/curl", ["-sf", "-o", directory + "/other.bin", server.media(origin.url("/other.bin"))])
            let (a, b, c) = try await (first, second, download)
            done.set()
            #expect(try await paused.status == SIGKILL, "the paused player was still reading")
            #expect(a.standardOutput == original.standardOutput && b.standardOutput == original.standardOutput)
            #expect(c.status == 0)
            #expect(try sha256(file: directory + "/other.bin") == sha256(other))
        }
    }

    @Test func rangesHeadersAndBadRequests() async throws {
        let bytes = randomBytes(3 * Self.mib + 17, seed: 3)
        try await withServer { origin, server, directory in
            origin.publish("/f.bin", bytes)
            let url = server.media(origin.url("/f.bin"))
            func curl(_ arguments: [String]) async throws -> Finished {
                try await run("/usr/bin/curl", ["-s", "-o", directory + "/body", "-D", "-", "-w", "%{http_code}"] + arguments)
            }
            func body() throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/body"))) }

            let head = try await curl(["-I", url])
            #expect(head.standardOutput.hasSuffix("200"))
            #expect(head.standardOutput.contains("Content-Length: \(bytes.count)"))
            #expect(head.standardOutput.contains("Accept-Ranges: bytes"))
            #expect(head.standardOutput.contains("ETag: \""))

            let part = try await curl(["-r", "1000-199999", url])
            #expect(part.standardOutput.hasSuffix("206"))
            #expect(part.standardOutput.contains("Content-Range: bytes 1000-199999/\(bytes.count)"))
            #expect(try body() == Array(bytes[1000..<200_000]))

            let suffix = try await curl(["-H", "Range: bytes=-100", url])
            #expect(suffix.standardOutput.hasSuffix("206"))
            #expect(try body() == Array(bytes[(bytes.count - 100)...]))

            let whole = try await curl([url])
            #expect(whole.standardOutput.hasSuffix("200"))
            #expect(try sha256(file: directory + "/body") == sha256(bytes))

            let beyond = try await curl(["-r", "\(bytes.count)-", url])
            #expect(beyond.standardOutput.hasSuffix("416"))
            #expect(beyond.standardOutput.contains("Content-Range: bytes */\(bytes.count)"))
            // An invalid Range is ignored (RFC 9110 14.2): the whole file.
            #expect(try await curl(["-H", "Range: bytes=x-y", url]).standardOutput.hasSuffix("200"))
            #expect(try await curl(["-H", "Range: bytes=5-1", url]).standardOutput.hasSuffix("200"))
            let huge = try await curl(["-H", "Range: bytes=0-9223372036854775807", url])
            #expect(huge.standardOutput.hasSuffix("206") && huge.standardOutput.contains("Content-Range: bytes 0-\(bytes.count - 1)/"))
            // A client resuming a copy of another version of the file gets the whole current one.
            let stale = try await curl(["-r", "1000-1999", "-H", "If-Range: \"another-version\"", url])
            #expect(stale.standardOutput.hasSuffix("200"))
            let etag = try #require(head.standardOutput.split(separator: "\r\n").first { $0.hasPrefix("ETag: ") }?.dropFirst(6))
            let current = try await curl(["-r", "1000-1999", "-H", "If-Range: \(etag)", url])
            #expect(current.standardOutput.hasSuffix("206"))
            // A page that rebinds its own name to 127.0.0.1 gets nothing.
            #expect(try await curl(["-H", "Host: evil.example:80", url]).standardOutput.hasSuffix("403"))
            #expect(try await curl(["-X", "POST", url]).standardOutput.hasSuffix("405"))
            #expect(try await curl([server.base + "/media"]).standardOutput.hasSuffix("400"))
            #expect(try await curl([server.base + "/media?url=file%3A%2F%2F%2Fetc%2Fpasswd"]).standardOutput.hasSuffix("400"))
            #expect(try await curl(["--path-as-is", server.base + "/../etc/passwd"]).standardOutput.hasSuffix("404"))
            let missing = try await curl([server.media(origin.url("/nothing-here"))])
            #expect(missing.standardOutput.hasSuffix("502"))
            #expect(try String(decoding: body(), as: UTF8.self).contains("404"))

            let status = try await server.status()
            let entries = try #require(status["entries"] as? [[String: Any]])
            #expect(entries.contains { $0["url"] as? String == origin.url("/f.bin") && $0["complete"] as? Bool == true })
        }
    }

    @Test func conditionalRequestsAndDatesAsCachesExpect() async throws {
        let bytes = randomBytes(256 << 10, seed: 4)
        try await withServer { origin, server, directory in
            origin.publish("/f.bin", bytes)
            let url = server.media(origin.url("/f.bin"))
            func curl(_ arguments: [String]) async throws -> String {
                try await run("/usr/bin/curl", ["-s", "-o", directory + "/body", "-D", "-", "-w", "%{http_code}"] + arguments)
                    .standardOutput
            }
            func header(_ name: String, in answer: String) -> String? {
                answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ": ") }.map {
                    String($0.dropFirst(name.count + 2))
                }
            }
            let first = try await curl([url])
            #expect(first.hasSuffix("200"))
            let etag = try #require(header("ETag", in: first))
            let modified = try #require(header("Last-Modified", in: first))
            let date = try #require(header("Date", in: first))
            #expect(date.hasSuffix(" GMT") && date.count == 29, "an IMF-fixdate: \(date)")
            let head = try await curl(["-I", url])
            #expect(header("Content-Length", in: head) == header("Content-Length", in: first), "HEAD says what GET says")

            let current = try await curl(["-H", "If-None-Match: \(etag)", url])
            #expect(current.hasSuffix("304"), "\(current)")
            #expect(header("ETag", in: current) == etag && header("Content-Length", in: current) == nil)
            let notModified = try await run("/usr/bin/curl", ["-s", "-H", "If-None-Match: \(etag)", url])
            #expect(notModified.standardOutput.isEmpty, "a 304 has no body")
            #expect(try await curl(["-H", "If-None-Match: \"another\"", url]).hasSuffix("200"))
            #expect(try await curl(["-H", "If-Modified-Since: \(modified)", url]).hasSuffix("304"))
            #expect(try await curl(["-H", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT", url]).hasSuffix("200"))
            #expect(try await curl(["-H", "If-Match: \"another\"", url]).hasSuffix("412"))
            #expect(try await curl(["-H", "If-Match: \(etag)", "-r", "0-9", url]).hasSuffix("206"))
            // A 416 is an error message, not the file: it carries none of the file's validators (as nginx).
            let unsatisfiable = try await curl(["-r", "\(bytes.count)-", url])
            #expect(unsatisfiable.hasSuffix("416") && header("Content-Range", in: unsatisfiable) == "bytes */\(bytes.count)")
            #expect(header("ETag", in: unsatisfiable) == nil && header("Last-Modified", in: unsatisfiable) == nil)

            // The player page is revalidated on every use (no-cache), answered 304 while unchanged.
            let page = try await curl([server.base + "/"])
            let pageTag = try #require(header("ETag", in: page), "\(page)")
            #expect(header("Cache-Control", in: page) == "no-cache")
            #expect(try await curl(["-H", "If-None-Match: \(pageTag)", server.base + "/"]).hasSuffix("304"))
            #expect(try await curl(["-H", "If-None-Match: \"old\"", server.base + "/"]).hasSuffix("200"))
        }
    }

    @Test func aPlayerLeavingMidResponseStopsNothing() async throws {
        let bytes = randomBytes(8 * Self.mib, seed: 5)
        try await withServer(["-c", "4"]) { origin, server, _ in
            origin.publish("/f.bin", bytes, behavior: throttled(1 << 20))
            // curl gives up after 0.5 s, in the middle of the body.
            let early = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-m", "0.5", server.media(origin.url("/f.bin"))])
            #expect(early.status == 28, "curl timed out mid-body")
            #expect(try await server.waitForEntry(origin.url("/f.bin")) { $0["complete"] as? Bool == true })
            let entries = try await server.status()["entries"] as? [[String: Any]] ?? []
            let id = try #require(entries.first?["id"] as? String)
            #expect(try sha256(file: server.cacheDirectory + "/\(id).part") == sha256(bytes))
        }
    }

    @Test func aRemoteFileChangingMidStreamEndsThatResponseAndTheNextGetsTheNewFile() async throws {
        let bytes = randomBytes(4 * Self.mib, seed: 9)
        let changed = randomBytes(4 * Self.mib, seed: 10)
        try await withServer(["--prefetch", "none"]) { origin, server, directory in
            origin.publish("/f.bin", bytes, behavior: throttled(1 << 20))
            let url = server.media(origin.url("/f.bin"))
            let head = try await run("/usr/bin/curl", ["-sf", "-r", "0-1048575", "-o", directory + "/head", url])
            #expect(head.status == 0)
            // The file changes while its download still runs: the next response gets the cached
            // first MiB, then the download meets the new file and stops, and the response is cut
            // short. (Had the idle download already stopped, a new one would have found the change
            // at once and served the new file whole.) Never a mix of the two files.
            origin.replace("/f.bin", with: changed)
            let first = try await run("/usr/bin/curl", ["-s", "-o", directory + "/first", url])
            let got = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/first")))
            if first.status == 0 {
                #expect(got == changed, "a complete answer is the new file")
            } else {
                #expect(first.status == 18, "curl: transfer closed with bytes missing")
                #expect(got.count < bytes.count && Array(bytes.prefix(got.count)) == got, "a short answer is the old file's start")
            }
            // The next read starts over on the new file.
            let second = try await run("/usr/bin/curl", ["-sf", "-o", directory + "/second", url])
            #expect(second.status == 0)
            #expect(try sha256(file: directory + "/second") == sha256(changed))
        }
    }

    @Test func theCacheSurvivesKillNineAndIsReusedByTheNextServer() async throws {
        let bytes = randomBytes(16 * Self.mib, seed: 11)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes, behavior: throttled(256 << 10))
            let cache = directory + "/cache"
            let first = try await ServerProcess.start(cacheDirectory: cache, ["-c", "8"])
            // A player reads the first MiB; the server fetches on behind it; then it is killed.
            let head = try await run(
                "/usr/bin/curl", ["-sf", "-r", "0-1048575", "-o", directory + "/head", first.media(origin.url("/f.bin"))])
            #expect(head.status == 0)
            // Killed once it has fetched on for a while (2 MiB/s: two seconds or more, a checkpoint at least).
            for _ in 0..<1200 where origin.bytesServed("/f.bin") < 5 * Self.mib { try await Task.sleep(for: .milliseconds(50)) }
            await first.crash()
            // What the killed server's manifest vouches for: the next server must never ask for those bytes.
            let saved = try savedRanges(inCache: cache)
            #expect(saved.count >= Self.mib, "the first server had saved at least the head")
            let askedBefore = origin.requests.count
            let second = try await ServerProcess.start(cacheDirectory: cache, ["-c", "8"])
            let whole = try await run("/usr/bin/curl", ["-sf", "-o", directory + "/whole", second.media(origin.url("/f.bin"))])
            #expect(whole.status == 0)
            #expect(try sha256(file: directory + "/whole") == sha256(bytes))
            for request in origin.requests.dropFirst(askedBefore) {
                let header = request.header("range") ?? "no Range"
                let parsed = try #require(ByteRangeRequest(header: header), "\(header)")
                let asked = try #require(parsed.resolve(total: bytes.count), "\(header)")
                let range = Int64(asked.lowerBound)..<Int64(asked.upperBound)
                if case .from(_, nil) = parsed {
                    // Open-ended (the probe): it starts at a missing byte and is stopped at the next saved one;
                    // with none missing (the first server finished), at the last byte.
                    let last = Int64(bytes.count - 1)
                    #expect(!saved.contains(range.lowerBound) || range.lowerBound == last, "\(header) starts in saved bytes")
                } else {
                    #expect(saved.gaps(in: range) == [range], "\(header) asks for saved bytes")
                }
            }
            #expect(await second.stop() == 0)
        }
    }

    @Test func aCompleteEntryPlaysWhenTheOriginIsGone() async throws {
        let bytes = randomBytes(3 * Self.mib, seed: 13)
        let directory = NSTemporaryDirectory() + "vfetch-offline-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let origin = try await TestOrigin.start()
        origin.publish("/f.bin", bytes)
        let url = origin.url("/f.bin")
        let first = try await ServerProcess.start(cacheDirectory: cache)
        #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", first.media(url)]).status == 0)
        #expect(try await first.waitForEntry(url) { $0["complete"] as? Bool == true })
        #expect(await first.stop() == 0)
        try await origin.shutdown()
        // A new server revalidates on the first read; the origin refuses connections.
        let second = try await ServerProcess.start(cacheDirectory: cache)
        let offline = try await run("/usr/bin/curl", ["-sf", "-o", directory + "/offline", second.media(url)])
        #expect(offline.status == 0, "served from the cache")
        #expect(try sha256(file: directory + "/offline") == sha256(bytes))
        #expect(await second.stop() == 0)
    }

    @Test func aCompleteEntryIsRevalidatedWithItsLastByteAlone() async throws {
        let bytes = randomBytes(3 * Self.mib, seed: 14)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            let url = origin.url("/f.bin")
            let cache = directory + "/cache"
            let first = try await ServerProcess.start(cacheDirectory: cache)
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", first.media(url)]).status == 0)
            #expect(try await first.waitForEntry(url) { $0["complete"] as? Bool == true })
            #expect(await first.stop() == 0)
            let (askedBefore, servedBefore) = (origin.requests.count, origin.bytesServed("/f.bin"))
            // A new server revalidates on the first read: the answer to one byte says whether the file changed.
            let second = try await ServerProcess.start(cacheDirectory: cache)
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", directory + "/again", second.media(url)]).status == 0)
            #expect(try sha256(file: directory + "/again") == sha256(bytes))
            let asked = origin.requests.dropFirst(askedBefore).map { $0.header("range") ?? "none" }
            #expect(asked == ["bytes=\(bytes.count - 1)-"], "\(asked)")
            #expect(origin.bytesServed("/f.bin") - servedBefore == 1)
            #expect(await second.stop() == 0)
        }
    }

    @Test func cacheCommandsEvictionAndOneServerPerDirectory() async throws {
        let files = (0..<3).map { randomBytes(2 * Self.mib, seed: UInt64(20 + $0)) }
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache, ["--max-cache-size", "5M"])
            let busy = try await vfetch(["serve", "--port", "0", "--cache-dir", cache])
            #expect(busy.status == 11 && busy.standardError.contains("vfetch serve already runs on"), "\(busy)")
            for (index, bytes) in files.enumerated() {
                origin.publish("/\(index).bin", bytes)
                let got = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url("/\(index).bin"))])
                #expect(got.status == 0)
                #expect(try await server.waitForEntry(origin.url("/\(index).bin")) { $0["downloading"] as? Bool == false })
            }
            // The third file pushed the cache past 5 MiB: the least recently used one went.
            var urls: Set<String> = []
            for _ in 0..<50 {
                urls = Set(try await (server.status()["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String })
                if urls.count < 3 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(urls == [origin.url("/1.bin"), origin.url("/2.bin")], "\(urls)")
            let gc = try await vfetch(["cache", "gc", "--max-cache-size", "0", "--cache-dir", cache])
            #expect(gc.status == 11 && gc.standardError.contains("keeps it within its own --max-cache-size"), "\(gc)")
            #expect(await server.stop() == 0)

            let list = try await vfetch(["cache", "ls", "--json", "--cache-dir", cache])
            #expect(list.status == 0)
            let lines = list.standardOutput.split(separator: "\n")
            #expect(lines.count == 2 && lines.allSatisfy { $0.contains("\"complete\":true") }, "\(list.standardOutput)")
            #expect(try await vfetch(["cache", "rm", origin.url("/1.bin"), "--cache-dir", cache]).status == 0)
            #expect(try await vfetch(["cache", "rm", "nope", "--cache-dir", cache]).status == 1)
            #expect(try await vfetch(["cache", "gc", "--max-cache-size", "0", "--cache-dir", cache]).status == 0)
            #expect(try await vfetch(["cache", "ls", "--cache-dir", cache]).standardOutput.isEmpty)
            let left = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".part") }
            #expect(left.isEmpty, "\(left)")
        }
    }

    @Test func cacheListSaysEachEntrysStateWithHumanSizes() async throws {
        let whole = randomBytes(2 * Self.mib, seed: 30)
        let large = randomBytes(40 * Self.mib, seed: 31)
        try await withOrigin { origin, directory in
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache, ["--prefetch", "none"])
            origin.publish("/whole.bin", whole)
            origin.publish("/large.bin", large, behavior: throttled(4 << 20))
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url("/whole.bin"))]).status == 0)
            #expect(try await server.waitForEntry(origin.url("/whole.bin")) { $0["complete"] as? Bool == true })
            // The first MiB of a larger file, then the server stops: a partial entry.
            let ranged = try await run(
                "/usr/bin/curl", ["-sf", "-r", "0-\(Self.mib - 1)", "-o", "/dev/null", server.media(origin.url("/large.bin"))])
            #expect(ranged.status == 0)
            #expect(try await server.waitForEntry(origin.url("/large.bin")) { ($0["bytes_cached"] as? Int ?? 0) >= Self.mib })
            #expect(await server.stop() == 0)
            // Files a crash or damage can leave: a part with no manifest yet, a manifest that cannot be read.
            let empty = String(repeating: "a", count: 32)
            let damaged = String(repeating: "b", count: 32)
            FileManager.default.createFile(atPath: "\(cache)/\(empty).part", contents: Data())
            FileManager.default.createFile(atPath: "\(cache)/\(damaged).part", contents: Data(count: 4096))
            FileManager.default.createFile(atPath: "\(cache)/\(damaged).vfetch", contents: Data("garbage\n".utf8))

            let listed = try await vfetch(["cache", "ls", "--json", "--cache-dir", cache])
            #expect(listed.status == 0, "\(listed.standardError)")
            var entries: [String: [String: Any]] = [:]
            for line in listed.standardOutput.split(separator: "\n") {
                let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                entries[entry["id"] as? String ?? ""] = entry
            }
            let complete = try #require(entries.values.first { $0["url"] as? String == origin.url("/whole.bin") })
            let partial = try #require(entries.values.first { $0["url"] as? String == origin.url("/large.bin") })
            #expect(complete["state"] as? String == "complete")
            #expect(partial["state"] as? String == "partial")
            #expect(entries[empty]?["state"] as? String == "empty")
            #expect(entries[damaged]?["state"] as? String == "failed")
            #expect((entries[damaged]?["error"] as? String)?.contains("manifest") == true, "\(entries[damaged] ?? [:])")
            // --json keeps raw numbers.
            let cached = try #require(partial["bytes_cached"] as? Int)
            #expect(partial["length"] as? Int == large.count && cached >= Self.mib && cached < large.count)

            let text = try await vfetch(["cache", "ls", "--cache-dir", cache])
            #expect(text.status == 0, "\(text.standardError)")
            let lines = text.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.count == 5, "\(text.standardOutput)")
            let header = try #require(lines.first)
            #expect(header.hasPrefix("ID ") && header.contains("STATE") && header.contains("SIZE") && header.hasSuffix("URL"))
            // Columns line up: each starts where the header's does.
            let stateColumn = try #require(header.range(of: "STATE")).lowerBound.utf16Offset(in: header)
            let urlColumn = try #require(header.range(of: "URL")).lowerBound.utf16Offset(in: header)
            func cells(_ id: String) throws -> (state: String, size: String, url: String) {
                let line = try #require(lines.first { $0.hasPrefix(id) }, "\(id) in \(text.standardOutput)")
                // (A row with no URL ends after its size.)
                let characters = Array(line.padding(toLength: max(line.count, urlColumn), withPad: " ", startingAt: 0))
                let state = String(characters[stateColumn..<urlColumn]).trimmingCharacters(in: .whitespaces)
                let url = String(characters[urlColumn...])
                // STATE and SIZE are separated by two spaces at least; the state itself may have one.
                let parts = state.components(separatedBy: "  ").filter { !$0.isEmpty }
                return (parts.first ?? "", (parts.last ?? "").trimmingCharacters(in: .whitespaces), url)
            }
            let percent = String(format: "%.1f", (Double(cached) * 1000 / Double(large.count)).rounded(.down) / 10)
            let completeRow = try cells(complete["id"] as? String ?? "?")
            #expect(completeRow.state == "complete" && completeRow.url == origin.url("/whole.bin"), "\(completeRow)")
            #expect(completeRow.size == "2 MiB", "\(completeRow)")
            let partialRow = try cells(partial["id"] as? String ?? "?")
            #expect(partialRow.state == "partial \(percent)%", "\(partialRow)")
            #expect(partialRow.size.hasSuffix(" MiB") && partialRow.url == origin.url("/large.bin"), "\(partialRow)")
            #expect(try cells(empty).state == "empty" && cells(empty).size == "0 B")
            #expect(
                try cells(damaged).state == "failed: unreadable manifest: \(damaged).vfetch: truncated manifest", "\(text.standardOutput)")
            #expect(try cells(damaged).size == "4 KiB")
        }
    }

    @Test func playStartsAServerAndThePlayer() async throws {
        let bytes = try await fixture()
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", bytes)
            let cache = directory + "/cache"
            let player = "ffprobe -v error -show_entries format=duration -of csv=p=0"
            let played = try await vfetch(["play", origin.url("/clip.mp4"), "--player", player, "--cache-dir", cache, "--port", "0"])
            #expect(played.status == 0, "\(played.standardError)")
            #expect(played.standardOutput.contains("/media?url=http%3A"))
            #expect(played.standardOutput.contains("12.0"), "the player read the file: \(played.standardOutput)")
            // The server it started keeps running for the next `play`, and it says how to stop it.
            #expect(played.standardError.contains("stop it with `vfetch serve --stop`"), "\(played.standardError)")
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cache + "/server.json")))
            let pid = try #require((record as? [String: Any])?["pid"] as? Int)
            let url = try #require((record as? [String: Any])?["url"] as? String)
            // Another port asked for: the running server is used, and said so.
            let again = try await vfetch(["play", origin.url("/clip.mp4"), "--player", player, "--cache-dir", cache, "--port", "1"])
            #expect(again.status == 0, "the running server is reused")
            #expect(again.standardError.contains("using the vfetch serve already running on this cache at \(url), not --port 1"))
            // A second serve on the cache names the running one.
            let second = try await vfetch(["serve", "--cache-dir", cache, "--port", "0"])
            #expect(second.status == 11 && second.standardError.contains("already runs") && second.standardError.contains(url))
            // A player and an argument with spaces and quotes, as a shell would split them.
            let quoted = "sh -c 'echo \"played $1\" > \"\(directory)/out file\"' sh"
            let shell = try await vfetch(["play", origin.url("/clip.mp4"), "--player", quoted, "--cache-dir", cache])
            #expect(shell.status == 0, "\(shell.standardError)")
            let out = try String(contentsOfFile: directory + "/out file", encoding: .utf8)
            #expect(out.hasPrefix("played \(url)/media?url="), "\(out)")
            #expect(try await vfetch(["play", origin.url("/clip.mp4"), "--player", "mpv 'x", "--cache-dir", cache]).status == 64)
            // An origin that fails is said on the terminal, with get's exit code, and no player starts.
            let marker = directory + "/player-started"
            let missing = try await vfetch(["play", origin.url("/missing.mp4"), "--player", "touch \(marker)", "--cache-dir", cache])
            #expect(missing.status == 5 && missing.standardError.contains("404"), "\(missing.status) \(missing.standardError)")
            #expect(!exists(marker))
            let refused = try await vfetch(["play", "http://127.0.0.1:1/x.mp4", "--player", "touch \(marker)", "--cache-dir", cache])
            #expect(refused.status == 4, "\(refused.status) \(refused.standardError)")
            #expect(!exists(marker))
            // serve --stop stops it; then there is nothing to stop.
            let stopped = try await vfetch(["serve", "--stop", "--cache-dir", cache])
            #expect(stopped.status == 0 && stopped.standardOutput.contains("stopped"), "\(stopped.standardError)")
            #expect(kill(pid_t(pid), 0) != 0, "the server is gone")
            let nothing = try await vfetch(["serve", "--stop", "--cache-dir", cache])
            #expect(nothing.status == 4 && nothing.standardError.contains("no vfetch serve runs"))
            let noPlayer = try await vfetch(["play", origin.url("/clip.mp4"), "--player", "no-such-player-here", "--cache-dir", cache])
            #expect(noPlayer.status == 64 && noPlayer.standardError.contains("no player found"))
        }
    }

    /// The bytes the one download manifest in `cache` vouches for.
    func savedRanges(inCache cache: String) throws -> ByteRangeSet {
        let files = FileManager.default.enumerator(atPath: cache)?.compactMap { $0 as? String } ?? []
        let manifest = try #require(files.first { $0.hasSuffix(".vfetch") }, "no manifest in the cache: \(files)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: cache + "/" + manifest)))
        return try Manifest(decoding: bytes).savedRanges
    }
}
