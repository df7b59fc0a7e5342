import Foundation
import Testing

/// What serve says goes through swift-log and comes out on its standard error as `vfetch serve: …`
/// lines; `--log-level` leaves out what is less important.
@Suite struct ServeLogTests {
    @Test func anOriginFailureIsAWarningThatLogLevelErrorLeavesOut() async throws {
        try await withOrigin { origin, directory in
            for (arguments, shown) in [([String](), true), (["--log-level", "error"], false)] {
                let cache = directory + "/cache\(arguments.count)"
                let server = try await ServerProcess.start(cacheDirectory: cache, arguments)
                let missing = server.media(origin.url("/missing.bin"))
                let read = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", missing])
                #expect(read.standardOutput == "502", "\(read)")
                #expect(await server.stop() == 0)
                let log = try String(contentsOfFile: cache + ".stderr", encoding: .utf8)
                let line = log.split(separator: "\n").first { $0.contains("/missing.bin") }
                #expect((line != nil) == shown, "\(arguments): \(log)")
                if let line { #expect(line.hasPrefix("vfetch serve: http://127.0.0.1:"), "\(line)") }
            }
        }
    }
}
