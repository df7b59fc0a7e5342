import Foundation
import TestOrigin
import Testing
import VFetch

#if canImport(Glibc)
    import Glibc
#endif

/// The `vfetch` binary run as a user runs it: exit codes, stderr lines and the bytes on disk.
@Suite struct CLITests {
    @Test func helpShowsSizesAsAPersonWritesThem() async throws {
        let serve = try await vfetch(["serve", "--help"])
        #expect(serve.status == 0)
        #expect(serve.standardOutput.contains("(default: 10G)"), "\(serve.standardOutput)")
        #expect(!serve.standardOutput.contains("ByteCount"))
        let cache = try await vfetch(["cache", "gc", "--help"])
        #expect(cache.status == 0 && !cache.standardOutput.contains("ByteCount"), "\(cache.standardOutput)")
    }

    @Test func downloadsAndSaysSoOnStandardError() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(3 << 20, seed: 21)
            origin.publish("/clip.mp4", bytes)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-d", directory])
            #expect(run.status == 0)
            #expect(run.standardError.contains("saved \(directory)/clip.mp4"))
            #expect(try sha256(file: directory + "/clip.mp4") == sha256(bytes))
        }
    }

    @Test func jsonIsOneObjectPerLineEndingWithASummary() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 << 20, seed: 22)
            origin.publish("/clip.mp4", bytes)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/x.mp4", "--json"])
            #expect(run.status == 0)
            let events = try run.standardOutput.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            #expect(events.first?["event"] as? String == "started")
            let done = try #require(events.last)
            #expect(done["event"] as? String == "done")
            #expect(done["bytes"] as? Int == bytes.count)
            #expect(done["retries"] as? Int == 0)
            #expect((done["connections"] as? Int ?? 0) >= 1)
            #expect((done["peak_connections"] as? Int ?? 0) >= 1)
            #expect(try sha256(file: directory + "/x.mp4") == sha256(bytes))
            // The lines are the library's own events: an app reading `--json` decodes them with `import VFetch`.
            let decoded = try run.standardOutput.split(separator: "\n").map {
                try JSONDecoder().decode(DownloadEvent.self, from: Data($0.utf8))
            }
            guard case .started(let info) = decoded.first, case .finished(let summary) = decoded.last else {
                Issue.record("\(decoded)")
                return
            }
            #expect(info.outputPath == directory + "/x.mp4" && info.length == Int64(bytes.count))
            #expect(summary.bytes == Int64(bytes.count) && summary.path == directory + "/x.mp4")
        }
    }

    /// What users know from curl: their headers, cookies and credentials reach the server, on every request.
    @Test func requestHeadersCookiesAndCredentialsReachTheServer() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 26)
            origin.publish("/clip.mp4", bytes, behavior: throttled(2 << 20))  // slow enough to be split
            let cookies = directory + "/cookies.txt"
            try "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc123\n".write(toFile: cookies, atomically: true, encoding: .utf8)
            let run = try await vfetch([
                "get", origin.url("/clip.mp4"), "-o", directory + "/x.mp4", "-c", "4",
                "-H", "X-One: 1", "--header", "X-Two: 2", "--user-agent", "tester/9", "--referer", "http://example.com/page",
                "--cookie", cookies, "--user", "ann:secret",
            ])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            #expect(try sha256(file: directory + "/x.mp4") == sha256(bytes))
            let requests = origin.requests.filter { $0.path == "/clip.mp4" }
            #expect(requests.count >= 2, "the probe and at least one segment")
            for request in requests {
                #expect(request.header("x-one") == "1" && request.header("x-two") == "2")
                #expect(request.header("user-agent") == "tester/9")
                #expect(request.header("referer") == "http://example.com/page")
                #expect(request.header("cookie")?.contains("session=abc123") == true)
                #expect(request.header("authorization") == "Basic " + Data("ann:secret".utf8).base64EncodedString())
            }
        }
    }

    /// `--format` picks among a stream's tracks; on a plain file it is said to do nothing, never silently ignored.
    @Test func aFormatForAPlainFileIsSaidToDoNothing() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 30)
            origin.publish("/clip.mp4", bytes)
            let result = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/clip.mp4", "--format", "720p"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardError.contains("--format 720p is for HLS and DASH streams"), "\(result.standardError)")
            #expect(try sha256(file: directory + "/clip.mp4") == sha256(bytes))
        }
    }

    /// A partial file curl or wget left: refused as before without --continue; with it, continued from its
    /// end (only the rest is fetched), unless its last bytes are not the remote file's.
    @Test func aPartialFileOfAnotherProgramIsContinuedOnlyWhenItIsTheRemoteFilesStart() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 << 20, seed: 31)
            origin.publish("/clip.mp4", bytes)
            let output = directory + "/clip.mp4"
            FileManager.default.createFile(atPath: output, contents: Data(bytes[0..<(3 << 20)]))
            let refused = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(refused.status == 7, "\(refused.standardError)")

            let asked = origin.requests.count
            let continued = try await vfetch(["get", origin.url("/clip.mp4"), "-d", directory, "--continue"])
            #expect(continued.status == 0, "\(continued.standardError)")
            #expect(continued.standardError.contains("continuing \(output) from the 3145728 bytes"), "\(continued.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(continued.standardError.contains("resuming: 3145728 of 8388608 bytes"), "only the rest: \(continued.standardError)")
            // Only the rest is asked for: beside the first byte (what the file is) and the check of the 64 KiB
            // before the saved end, every range starts at or after it. (Bytes served would also count what a
            // cut transfer had in flight: megabytes on a busy machine.)
            let starts = origin.requests.dropFirst(asked).compactMap { request -> Int? in
                guard let range = request.header("range"), range != "bytes=0-0" else { return nil }
                return Int(range.dropFirst("bytes=".count).prefix { $0 != "-" })
            }
            #expect(!starts.isEmpty && starts.allSatisfy { $0 >= (3 << 20) - (64 << 10) }, "only the rest: \(starts)")

            let again = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--continue"])
            #expect(again.status == 0 && again.standardError.contains("is already complete"), "\(again.standardError)")

            var other = bytes
            other[(3 << 20) - 10] ^= 0xFF
            FileManager.default.createFile(atPath: output, contents: Data(other[0..<(3 << 20)]))
            let spliced = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--continue"])
            #expect(spliced.status == 6 && spliced.standardError.contains("is not the start of this remote file"), "\(spliced)")
            #expect(try sha256(file: output) == sha256(Array(other[0..<(3 << 20)])), "left as it was")
        }
    }

    /// Another file at the output: kept with --no-clobber (wget -nc), saved beside with --auto-rename (aria2c).
    @Test func noClobberKeepsAnotherFileAndAutoRenameSavesBesideIt() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 32)
            origin.publish("/clip.mp4", bytes)
            let output = directory + "/clip.mp4"
            FileManager.default.createFile(atPath: output, contents: Data("mine".utf8))
            let kept = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--no-clobber"])
            #expect(kept.status == 0 && kept.standardError.contains("\(output) is already complete"), "\(kept)")
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "mine")
            for number in 1...2 {
                let renamed = try await vfetch(["get", origin.url("/clip.mp4"), "-d", directory, "--auto-rename"])
                #expect(renamed.status == 0, "\(renamed.standardError)")
                #expect(try sha256(file: directory + "/clip.\(number).mp4") == sha256(bytes))
            }
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "mine")
            let usage = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--no-clobber", "--force"])
            #expect(usage.status == 64, "\(usage)")
        }
    }

    @Test func aCompleteOutputIsNotFetchedAgainAndAChangedRemoteNeedsForce() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(16 << 20, seed: 28)
            origin.publish("/clip.mp4", bytes)
            let output = directory + "/clip.mp4"
            #expect(try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-q"]).status == 0)
            // The same file again: nothing to do.
            let served = origin.bytesServed("/clip.mp4")
            let again = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(again.status == 0, "\(again.standardError)")
            #expect(again.standardError.contains("is already complete"), "\(again.standardError)")
            // Only the first requests' bytes, until the answer to the first one said what the file is.
            #expect(origin.bytesServed("/clip.mp4") - served < bytes.count / 2, "not downloaded again")
            #expect(try sha256(file: output) == sha256(bytes))
            // The remote file changed: refused, naming --force; the old copy stays.
            let changed = randomBytes(16 << 20, seed: 29)
            origin.replace("/clip.mp4", with: changed)
            let refused = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(refused.status == 7 && refused.standardError.contains("--force"), "\(refused.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            let forced = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--force", "-q"])
            #expect(forced.status == 0)
            #expect(try sha256(file: output) == sha256(changed))
        }
    }

    @Test func aSecondRunOnTheSameOutputIsRefusedAtOnce() async throws {
        try await withOrigin { origin, directory in
            // Slow enough that the first run is still going however long the second takes to start under load.
            origin.publish("/clip.mp4", randomBytes(4 << 20, seed: 27), behavior: throttled(4 << 10))  // over 8 minutes
            let output = directory + "/clip.mp4"
            let secondDone = Flag()
            let first = Task {
                // Its end is the SIGINT once the second is done: the watchdog only ends a run the test lost.
                try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "2"], timeout: .seconds(600)) {
                    secondDone.isSet
                }
            }
            for _ in 0..<200 where !exists(output + ".part") { try await Task.sleep(for: .milliseconds(50)) }
            // A port nobody listens on: refused by the lock before any connection is tried.
            let second = try await vfetch(["get", "http://127.0.0.1:1/clip.mp4", "-o", output])
            secondDone.set()
            #expect(second.status == 11, "stderr: \(second.standardError)")
            #expect(second.standardError.contains("another vfetch is downloading to"), "stderr: \(second.standardError)")
            #expect(try await first.value.status == 130)
        }
    }

    @Test func jsonModeStillSaysNoticesOnStandardError() async throws {
        try await withOrigin { origin, directory in
            var behavior = OriginBehavior()
            behavior.supportsRanges = false
            let bytes = randomBytes(1 << 20, seed: 25)
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/x.mp4", "--json"])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            let said = run.standardError.split(separator: "\n").filter { $0.contains("one connection") }
            #expect(said.count == 1, "once on stderr: \(run.standardError)")
            #expect(run.standardOutput.contains("\"event\":\"notice\""))
            #expect(try sha256(file: directory + "/x.mp4") == sha256(bytes))
        }
    }

    enum Failure: String, CaseIterable {
        case notFound, badURL, refused, remoteChanged, notWritable, exists, checksum, htmlPage, badUsage
    }

    @Test(arguments: Failure.allCases)
    func eachFailureHasItsExitCodeAndOneLine(failure: Failure) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 23)
            var behavior = OriginBehavior()
            var arguments = ["get", origin.url("/clip.mp4"), "-o", directory + "/out.mp4"]
            let expected: (status: Int32, message: String)
            switch failure {
            case .notFound:
                arguments[1] = origin.url("/missing.mp4")
                expected = (5, "HTTP 404")
            case .badURL:
                arguments[1] = "not a url"
                expected = (3, "bad URL")
            case .refused:
                arguments[1] = "http://127.0.0.1:1/clip.mp4"
                expected = (4, "cannot connect")
            case .remoteChanged:
                behavior.bytesPerSecond = 2 << 20
                behavior.changeAfterBytes = 256 << 10
                behavior.dropAfterBytes = 128 << 10
                behavior.dropTimes = 1000
                expected = (6, "remote file changed")
            case .notWritable:
                arguments[3] = directory + "/no/such/dir/out.mp4"
                expected = (7, "cannot write output")
            case .exists:
                try Data("old".utf8).write(to: URL(fileURLWithPath: directory + "/out.mp4"))
                expected = (7, "already exists")
            case .checksum:
                arguments += ["--checksum", "sha256=" + String(repeating: "ab", count: 32)]
                expected = (9, "checksum mismatch")
            case .htmlPage:
                behavior.htmlErrorBody = true
                expected = (10, "web page")
            case .badUsage:
                arguments += ["-c", "0"]
                expected = (64, "connections")
            }
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let run = try await vfetch(arguments)
            #expect(run.status == expected.status, "stderr: \(run.standardError)")
            #expect(run.standardError.contains(expected.message), "stderr: \(run.standardError)")
            // Besides the line naming the download once it started, the error is one line.
            let lines = run.standardError.split(separator: "\n").filter { !$0.contains(" → ") }
            #expect(lines.count == 1, "one line: \(run.standardError)")
            #expect(lines.first?.hasPrefix("vfetch: ") == true, "stderr: \(run.standardError)")
            if failure != .exists { #expect(!exists(directory + "/out.mp4"), "never a partial file at the output path") }
        }
    }

    @Test func ctrlCStopsWithExitCode130AndKeepsTheSideFile() async throws {
        try await withOrigin { origin, directory in
            var behavior = OriginBehavior()
            // Slow enough (4 connections × 256 KiB/s: 8 s) to be mid-download when the signal comes,
            // with whole 64 KiB blocks on disk by then.
            behavior.bytesPerSecond = 256 << 10
            let bytes = randomBytes(8 << 20, seed: 24)
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let output = directory + "/clip.mp4"
            // Interrupted once whole blocks are saved, whatever the machine's load.
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "4"]) {
                let status = runBlocking(vfetchBinary, ["status", output, "--json"]).standardOutput
                return !status.isEmpty && !status.contains("\"bytes_done\":0,")
            }
            #expect(run.status == 130)
            #expect(run.standardError.contains("interrupted"))
            #expect(!exists(output))
            #expect(exists(output + ".part"))
            // `status --json` tells what the next run will reuse; that run finishes the file.
            let status = try await vfetch(["status", output, "--json"])
            #expect(status.status == 0, "stderr: \(status.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.standardOutput.utf8)) as? [String: Any])
            let done = try #require(object["bytes_done"] as? Int)
            let ranges = try #require(object["done_ranges"] as? [[Int]])
            #expect(done > 0 && ranges.reduce(0) { $0 + $1[1] - $1[0] } == done)
            #expect(object["percent"] as? Double == (Double(done) * 1000 / Double(bytes.count)).rounded() / 10)
            // Named by its .part, as `info` takes it: the same download.
            let byPart = try await vfetch(["status", output + ".part", "--json"])
            #expect(byPart.status == 0 && byPart.standardOutput == status.standardOutput, "\(byPart)")
            origin.setBehavior("/clip.mp4", OriginBehavior())
            let resumed = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(resumed.status == 0, "stderr: \(resumed.standardError)")
            #expect(resumed.standardError.contains("resuming"))
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test(.enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func aFullDiskHasItsOwnExitCode() async throws {
        try await withOrigin { origin, directory in
            try await withSmallDisk(in: directory, size: "1m") { mount in
                origin.publish("/clip.mp4", randomBytes(4 << 20, seed: 25))
                let result = try await vfetch(["get", origin.url("/clip.mp4"), "-o", mount + "/clip.mp4"])
                #expect(result.status == 8, "stderr: \(result.standardError)")
                #expect(result.standardError.contains("disk full"))
                #expect(!exists(mount + "/clip.mp4"))
            }
        }
    }
}
