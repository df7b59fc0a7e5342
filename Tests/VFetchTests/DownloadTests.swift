import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// The engine against a real HTTP origin on 127.0.0.1: every test compares SHA-256 with the source.
@Suite struct DownloadTests {
    static let mib = 1 << 20

    func options(connections: Int = 8) -> DownloadOptions {
        var options = DownloadOptions()
        options.connections = connections
        options.minSplitSize = 256 << 10
        return options
    }

    @Test func downloadsOverManyConnectionsWithExactRanges() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 * Self.mib, seed: 1)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 4 * Self.mib
            origin.publish("/movie.mp4", bytes, behavior: behavior)
            let output = directory + "/movie.mp4"
            let fetched = await fetch(origin.url("/movie.mp4"), to: .file(output), options: options())
            let summary = try fetched.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.bytes == Int64(bytes.count))
            #expect(summary.peakConnections > 1)
            #expect(!exists(output + ".part"))
            let gets = origin.requests.filter { $0.method == "GET" }
            #expect(Set(gets.map(\.connection)).count > 1, "several TCP connections")
            #expect(gets.allSatisfy { $0.header("range") != nil && $0.status == 206 })
            #expect(gets.allSatisfy { $0.header("accept-encoding") == "identity" })
        }
    }

    @Test func serverWithoutRangesGetsOneConnection() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(3 * Self.mib, seed: 2)
            var behavior = OriginBehavior()
            behavior.supportsRanges = false
            origin.publish("/a.bin", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options())
            _ = try fetched.result.get()
            #expect(try sha256(file: directory + "/a.bin") == sha256(bytes))
            #expect(fetched.notices.count == 1)
            #expect(fetched.notices.first?.contains("one connection") == true)
            #expect(origin.requests.count == 1)
        }
    }

    @Test(arguments: ["answers200ToRanges", "wrongContentRange"])
    func aServerThatLiesAboutRangesIsNeverWrittenAtAnOffset(lie: String) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 3)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 8 * Self.mib
            if lie == "answers200ToRanges" { behavior.answers200ToRanges = true } else { behavior.wrongContentRange = true }
            origin.publish("/a.bin", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options())
            _ = try fetched.result.get()
            #expect(try sha256(file: directory + "/a.bin") == sha256(bytes))
            #expect(fetched.notices.contains { $0.contains("range") && $0.contains("one connection") })
        }
    }

    @Test func aRemoteChangeMidDownloadStopsWithoutAFile() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 4)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 4 * Self.mib
            behavior.changeAfterBytes = Self.mib
            behavior.changedBytes = randomBytes(4 * Self.mib, seed: 44)
            // Dropped connections make the engine ask again after the change.
            behavior.dropAfterBytes = 256 << 10
            behavior.dropTimes = 1000
            origin.publish("/a.bin", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options())
            guard case .remoteChanged = fetched.error else {
                Issue.record("expected remote changed, got \(fetched.result)")
                return
            }
            #expect(!exists(directory + "/a.bin"))
        }
    }

    @Test func followsRedirectChainsAndKeepsTheFinalURL() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 * Self.mib, seed: 5)
            origin.publish("/a.bin", bytes)
            let fetched = await fetch(origin.url("/redirect/3/a.bin"), to: .directory(directory), options: options())
            let summary = try fetched.result.get()
            #expect(summary.path == directory + "/a.bin")
            #expect(try sha256(file: summary.path) == sha256(bytes))
            guard case .started(let info) = fetched.events.first else {
                Issue.record("no started event")
                return
            }
            #expect(info.finalURL == origin.url("/a.bin"))
            // Segments go straight to the final URL; only the probe walks the chain.
            #expect(origin.requests.filter { $0.path.hasPrefix("/redirect/") }.count == 4)
        }
    }

    @Test func reResolvesAnExpiredSignedURL() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(6 * Self.mib, seed: 6)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 1 * Self.mib
            behavior.signedLifetime = 0.5
            // Dropped connections make segments ask again once the signed URL has expired.
            behavior.dropAfterBytes = 512 << 10
            behavior.dropTimes = 1000
            origin.publish("/a.bin", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/signed/a.bin"), to: .file(directory + "/a.bin"), options: options(connections: 4))
            _ = try fetched.result.get()
            #expect(try sha256(file: directory + "/a.bin") == sha256(bytes))
            #expect(origin.requests.contains { $0.status == 403 }, "the signed URL did expire mid-download")
            #expect(origin.requests.filter { $0.path == "/signed/a.bin" }.count >= 2)
        }
    }

    @Test func survivesDroppedConnectionsAndASlowOne() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(6 * Self.mib, seed: 7)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 2 * Self.mib
            behavior.slowConnectionEvery = 3
            behavior.slowBytesPerSecond = 64 << 10
            behavior.dropAfterBytes = 300_000
            behavior.dropTimes = 3
            origin.publish("/a.bin", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options(connections: 6))
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/a.bin") == sha256(bytes))
            #expect(summary.retries >= 1)
            #expect(origin.requests.filter { $0.method == "GET" }.count > 6, "dropped segments were asked for again")
        }
    }

    @Test func honoursRetryAfter() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(Self.mib, seed: 8)
            var behavior = OriginBehavior()
            behavior.failFirst = 2
            behavior.failStatus = 503
            behavior.retryAfter = 1
            origin.publish("/a.bin", bytes, behavior: behavior)
            let clock = ContinuousClock()
            let started = clock.now
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options())
            _ = try fetched.result.get()
            #expect(try sha256(file: directory + "/a.bin") == sha256(bytes))
            #expect(clock.now - started >= .seconds(2), "two waits of Retry-After: 1")
            #expect(origin.requests.filter { $0.status == 503 }.count == 2)
        }
    }

    @Test func givesUpNamingTheStatusWhenRetriesRunOut() async throws {
        try await withOrigin { origin, directory in
            var behavior = OriginBehavior()
            behavior.failFirst = 10
            behavior.failStatus = 429
            behavior.retryAfter = 0
            origin.publish("/a.bin", randomBytes(1000, seed: 9), behavior: behavior)
            var options = options()
            options.retries = 1
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options)
            #expect(fetched.error == .httpStatus(429, url: origin.url("/a.bin")))
            let missing = await fetch(origin.url("/nothing.mp4"), to: .file(directory + "/n.mp4"), options: options)
            #expect(missing.error == .httpStatus(404, url: origin.url("/nothing.mp4")))
            #expect(origin.requests.filter { $0.path == "/nothing.mp4" }.count == 1, "a 404 is not retried")
        }
    }

    @Test func streamsAFileOfUnknownLength() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 * Self.mib + 123, seed: 10)
            var behavior = OriginBehavior()
            behavior.chunked = true
            origin.publish("/live.ts", bytes, behavior: behavior)
            let fetched = await fetch(origin.url("/live.ts"), to: .file(directory + "/live.ts"), options: options())
            let summary = try fetched.result.get()
            #expect(summary.bytes == Int64(bytes.count))
            #expect(try sha256(file: directory + "/live.ts") == sha256(bytes))
        }
    }

    @Test func refusesAnHTMLErrorPageForAVideo() async throws {
        try await withOrigin { origin, directory in
            var behavior = OriginBehavior()
            behavior.htmlErrorBody = true
            origin.publish("/movie.mp4", randomBytes(1000, seed: 11), behavior: behavior)
            let fetched = await fetch(origin.url("/movie.mp4"), to: .file(directory + "/movie.mp4"), options: options())
            guard case .badResponse = fetched.error else {
                Issue.record("expected a bad response, got \(fetched.result)")
                return
            }
            #expect(!exists(directory + "/movie.mp4"))
        }
    }

    @Test func namesTheFileFromContentDisposition() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1000, seed: 12)
            var behavior = OriginBehavior()
            behavior.contentDisposition = "attachment; filename=\"../holiday.mp4\""
            origin.publish("/download", bytes, behavior: behavior)
            let summary = try await fetch(origin.url("/download"), to: .directory(directory)).result.get()
            #expect(summary.path == directory + "/holiday.mp4")
            #expect(try sha256(file: summary.path) == sha256(bytes))
        }
    }

    @Test func neverOverwritesWithoutBeingAskedAndChecksTheChecksum() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(100_000, seed: 13)
            origin.publish("/a.bin", bytes)
            let output = directory + "/a.bin"
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: output))
            let refused = await fetch(origin.url("/a.bin"), to: .file(output))
            #expect(refused.error == .outputExists(output))
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "keep me")
            var options = DownloadOptions()
            options.overwrite = true
            options.sha256 = String(repeating: "0", count: 64)
            let mismatch = await fetch(origin.url("/a.bin"), to: .file(output), options: options)
            #expect(mismatch.error == .checksumMismatch(expected: options.sha256!, actual: sha256(bytes)))
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "keep me")
            options.sha256 = sha256(bytes)
            let verified = try await fetch(origin.url("/a.bin"), to: .file(output), options: options).result.get()
            #expect(verified.sha256 == sha256(bytes))
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test func downloadsAnEmptyFile() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/empty.bin", [])
            let summary = try await fetch(origin.url("/empty.bin"), to: .file(directory + "/empty.bin")).result.get()
            #expect(summary.bytes == 0)
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/empty.bin")).isEmpty)
        }
    }

    @Test func cancelStopsAndKeepsTheSideFile() async throws {
        try await withOrigin { origin, directory in
            // Over a minute: still going when the cancel comes, however late a loaded machine reads the events
            // (at 256 KiB/s, beside the suite and a build, it finished first).
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 32 << 10
            origin.publish("/a.bin", randomBytes(8 * Self.mib, seed: 14), behavior: behavior)
            let output = directory + "/a.bin"
            let download = FileDownload(url: origin.url("/a.bin"), to: .file(output), options: options(connections: 2))
            let running = Task { try await download.run() }
            // Cancel once bytes are on disk, whatever the machine's load.
            for await event in download.events {
                if case .progress(let progress) = event, progress.bytesDone > 0 { break }
            }
            download.cancel()
            let result = await running.result
            #expect(throws: DownloadError.interrupted) { try result.get() }
            #expect(!exists(output))
            #expect(exists(output + ".part"))
        }
    }

    @Test func reportsUnreachableHostsAndBadURLs() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A port nobody listens on: bind one, note it, close it.
        let origin = try await TestOrigin.start()
        let closedURL = origin.url("/a.bin")
        try await origin.shutdown()
        let refused = await fetch(closedURL, to: .file(directory + "/a.bin"))
        guard case .connectFailed = refused.error else {
            Issue.record("expected a connect failure, got \(refused.result)")
            return
        }
        let bad = await fetch("ftp://example.invalid/a.bin", to: .file(directory + "/a.bin"))
        #expect(bad.error == .badURL("ftp://example.invalid/a.bin"))
    }
}
