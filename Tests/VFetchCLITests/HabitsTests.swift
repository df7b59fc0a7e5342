import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What users of curl, wget, aria2c and mpv expect of `vfetch` without reading its manual.
@Suite struct HabitsTests {
    /// `vfetch` alone is bad usage, as for curl and wget: the usage on stderr and exit code 64.
    @Test func vfetchAloneShowsUsageAndFails() async throws {
        let run = try await vfetch([])
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError.contains("USAGE: vfetch"), "\(run.standardError)")
    }
}
