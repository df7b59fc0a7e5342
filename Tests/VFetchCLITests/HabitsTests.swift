import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What users of curl, wget, aria2c and mpv expect of `vfetch` without reading its manual.
@Suite struct HabitsTests {
    /// A progress line wider than the terminal wraps, and each redraw then scrolls a new line.
    @Test func theProgressLineFitsAnEightyColumnTerminal() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 41)
            origin.publish("/clip.mp4", bytes, behavior: throttled(512 << 10))  // about 2 s over 4 connections
            let output = directory + "/clip.mp4"
            // `script` runs vfetch on a pseudo-terminal, made 80 columns wide, and copies what it draws.
            let command = "stty cols 80 rows 24; exec '\(vfetchBinary)' get '\(origin.url("/clip.mp4"))' -o '\(output)' -c 4"
            let run = try await run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], environment: ["COLUMNS": "200"])
            #expect(run.status == 0, "\(run.standardOutput)")
            #expect(try sha256(file: output) == sha256(bytes))
            let drawn = run.standardOutput.replacingOccurrences(of: "\u{1B}[K", with: "")
                .split(whereSeparator: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" })
                .filter { $0.contains("/s") && !$0.hasPrefix("vfetch:") }
            #expect(!drawn.isEmpty, "no progress line drawn: \(run.standardOutput)")
            for line in drawn { #expect(line.unicodeScalars.count <= 79, "\(line.unicodeScalars.count) columns: \(line)") }
        }
    }

    /// `-o -` (and `-o /dev/stdout`), as curl: the bytes in order on standard output, for `| mpv -`.
    @Test(arguments: ["-", "/dev/stdout"])
    func dashOWritesTheFileToStandardOutput(output: String) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(6 << 20, seed: 42)
            origin.publish("/clip.mp4", bytes, behavior: throttled(1 << 20))  // split over the connections
            let digest = directory + "/digest"
            // Its temporary file goes where TMPDIR says, and is gone at the end.
            let temporary = directory + "/tmp"
            try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
            let command =
                "cd '\(directory)' && '\(vfetchBinary)' get '\(origin.url("/clip.mp4"))' -o \(output) -c 4 | sha256sum > digest"
            let run = try await run("/bin/bash", ["-c", "set -o pipefail; " + command], environment: ["TMPDIR": temporary])
            #expect(run.status == 0, "\(run.standardError)")
            let printed = try String(contentsOfFile: digest, encoding: .utf8).prefix(64)
            #expect(String(printed) == sha256(bytes), "\(run.standardError)")
            #expect(run.standardError.contains("standard output"), "\(run.standardError)")
            let left = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            #expect(left == ["digest", "tmp"], "nothing named \(output): \(left)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "the temporary file is removed")
            #expect(origin.requests.filter { $0.path == "/clip.mp4" }.count > 2, "the file came over several connections")
        }
    }

    /// The player of `vfetch play` stops with it: a service manager's SIGTERM reaches it.
    @Test func playStopsItsPlayerOnSIGTERM() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", randomBytes(1 << 20, seed: 43))
            let cache = directory + "/cache"
            let pidFile = directory + "/player.pid"
            let player = "sh -c 'echo $$ > \"\(pidFile)\"; exec sleep 300 >/dev/null 2>&1' sh"
            let played = try await run(
                vfetchBinary, ["play", origin.url("/clip.mp4"), "--player", player, "--cache-dir", cache, "--port", "0"],
                signal: SIGTERM,
                when: { exists(pidFile) && ((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").hasSuffix("\n") })
            let pid = try #require(
                pid_t(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            defer { kill(pid, SIGKILL) }
            for _ in 0..<200 where kill(pid, 0) == 0 { try await Task.sleep(for: .milliseconds(50)) }
            #expect(kill(pid, 0) != 0, "the player still runs after play was stopped")
            #expect(played.status == 128 + SIGTERM, "the player's end by SIGTERM, as a shell says it: \(played.standardError)")
            _ = try await vfetch(["serve", "--stop", "--cache-dir", cache])
        }
    }

    /// One line a person reads, with the address, rather than SwiftNIO's `bind(descriptor:ptr:bytes:)`.
    @Test func serveOnABusyPortSaysSoInOneLine() async throws {
        try await withOrigin { origin, directory in
            let run = try await vfetch(["serve", "--cache-dir", directory + "/cache", "--port", String(origin.port)])
            #expect(run.status == 1)
            #expect(
                run.standardError == "vfetch: cannot listen on 127.0.0.1:\(origin.port): address already in use\n", "\(run.standardError)")
        }
    }

    /// libcurl's own words once: its error buffer already ends with what `curl_easy_strerror` says.
    @Test func aRefusedConnectionIsSaidOnce() async throws {
        let run = try await vfetch(["get", "http://127.0.0.1:1/clip.mp4", "-o", NSTemporaryDirectory() + "vfetch-never-\(getpid())"])
        #expect(run.status == 4)
        let said = run.standardError.components(separatedBy: "Couldn't connect to server").count - 1
        #expect(said <= 1, "\(run.standardError)")
        #expect(run.standardError.contains("127.0.0.1"), "\(run.standardError)")
    }

    /// As aria2c's `URL URL…` and `-i FILE`: every file right, at most `-j` at once, a failure named and counted.
    @Test func severalURLsAndAnInputFileAreAllFetched() async throws {
        try await withOrigin { origin, directory in
            let files = (0..<4).map { randomBytes(1 << 20, seed: UInt64(46 + $0)) }
            for (index, bytes) in files.enumerated() { origin.publish("/f\(index).bin", bytes) }
            let list = directory + "/list.txt"
            let lines = ["# the rest", "", origin.url("/f2.bin"), "  " + origin.url("/f3.bin"), origin.url("/missing.bin")]
            try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
            let out = directory + "/out"
            let result = try await vfetch(["get", origin.url("/f0.bin"), origin.url("/f1.bin"), "-i", list, "-d", out, "-j", "2"])
            #expect(result.status == 5, "\(result.standardError)")
            #expect(result.standardError.contains("1 of 5 downloads failed"), "\(result.standardError)")
            #expect(result.standardError.contains("missing.bin"), "\(result.standardError)")
            for (index, bytes) in files.enumerated() { #expect(try sha256(file: out + "/f\(index).bin") == sha256(bytes)) }
            let refused = try await vfetch(["get", origin.url("/f0.bin"), origin.url("/f1.bin"), "-o", out + "/one.bin"])
            #expect(refused.status == 64, "\(refused)")
        }
    }

    /// As aria2c and wget: `-d` makes the directory; an output that cannot be written is named, not its `.part`.
    @Test func dashDMakesItsDirectoryAndErrorsNameTheOutput() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 44)
            origin.publish("/clip.mp4", bytes)
            let made = try await vfetch(["get", origin.url("/clip.mp4"), "-d", directory + "/new/sub"])
            #expect(made.status == 0, "\(made.standardError)")
            #expect(try sha256(file: directory + "/new/sub/clip.mp4") == sha256(bytes))
            let output = directory + "/no/such/out.mp4"
            let refused = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(refused.status == 7)
            #expect(refused.standardError.contains(output) && !refused.standardError.contains(".part"), "\(refused.standardError)")
            // curl's --create-dirs: then -o makes what it names.
            let created = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--create-dirs"])
            #expect(created.status == 0, "\(created.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    /// Ctrl-C says what is kept and how to go on, and the run after it measures its own speed.
    @Test func anInterruptSaysWhatIsSavedAndTheResumeMeasuresItsOwnBytes() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 << 20, seed: 45)
            // 4 connections at 128 KiB/s: 16 s for the whole, 12 s left when a quarter is saved.
            origin.publish("/clip.mp4", bytes, behavior: throttled(128 << 10))
            let output = directory + "/clip.mp4"
            // Interrupted once more than a quarter is saved, whatever the machine's load.
            let stopped = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "4"]) {
                let status = runBlocking(vfetchBinary, ["status", output, "--json"]).standardOutput
                guard let object = try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any] else { return false }
                return (object["bytes_done"] as? Int ?? 0) > bytes.count / 4
            }
            #expect(stopped.status == 130)
            let last = stopped.standardError.split(separator: "\n").last.map(String.init) ?? ""
            #expect(last.hasPrefix("vfetch: interrupted"), "\(stopped.standardError)")
            #expect(last.contains(" of 8 MiB saved") && last.contains("run the same command again to resume"), "\(last)")
            // The run that resumes fetches the rest; its speed is the rest over its time, not the whole file.
            origin.setBehavior("/clip.mp4", throttled(512 << 10))
            let resumed = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "-c", "4"])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            let notice = try #require(resumed.standardError.firstMatch(of: /resuming: (\d+) of/), "\(resumed.standardError)")
            let fetched = Double(bytes.count - Int(notice.1)!)
            let summary = try #require(
                resumed.standardError.firstMatch(of: /in ([0-9.]+) s \(([0-9.]+) (B|KiB|MiB|GiB)\/s/), "\(resumed.standardError)")
            let seconds = Double(summary.1)!
            let units: [String: Double] = ["B": 1, "KiB": 1024, "MiB": 1024 * 1024, "GiB": 1024 * 1024 * 1024]
            let rate = Double(summary.2)! * units[String(summary.3)]!
            // Both figures are rounded as printed (3 significant digits, hundredths of a second).
            let expected = fetched / seconds
            #expect(abs(rate - expected) <= expected * 0.1, "\(rate) B/s shown, \(expected) B/s fetched: \(resumed.standardError)")
        }
    }

    /// `-c N` is the most connections at once; the summary never says more, however many were opened over time.
    @Test func theSummaryNeverCountsMoreConnectionsThanTheLimit() async throws {
        try await withOrigin { origin, directory in
            var behavior = throttled(1 << 20)
            behavior.dropAfterBytes = 256 << 10  // each connection is cut a few times: new ones are opened
            behavior.dropTimes = 6
            let bytes = randomBytes(4 << 20, seed: 46)
            origin.publish("/clip.mp4", bytes, behavior: behavior)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", directory + "/clip.mp4", "-c", "2", "--retries", "20"])
            #expect(run.status == 0, "\(run.standardError)")
            let said = try #require(run.standardError.firstMatch(of: /(\d+) connections?/), "\(run.standardError)")
            #expect(Int(said.1)! <= 2, "\(run.standardError)")
        }
    }

    /// `vfetch` alone is bad usage, as for curl and wget: the usage on stderr and exit code 64.
    @Test func vfetchAloneShowsUsageAndFails() async throws {
        let run = try await vfetch([])
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError.contains("USAGE: vfetch"), "\(run.standardError)")
    }
}
