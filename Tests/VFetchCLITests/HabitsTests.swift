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
