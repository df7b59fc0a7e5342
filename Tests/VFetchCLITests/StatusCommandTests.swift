import Foundation
import TestOrigin
import Testing

@Suite struct StatusCommandTests {
    /// `status` answers for a download however it was started: a background one by its ID, all of them
    /// with no argument (as `ls` lists them), and (tested elsewhere) a `get` that stopped, by its file.
    @Test func statusShowsABackgroundDownloadByItsIDAndAllOfThemWithNoArgument() async throws {
        let bytes = randomBytes(1 << 20, seed: 181)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let added = try await vfetch(["add", origin.url("/f.bin"), "-o", directory + "/f.bin", "--cache-dir", cache])
            #expect(added.standardOutput == "1\n", "\(added)")
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))

            let one = try await vfetch(["status", "1", "--cache-dir", cache])
            #expect(one.status == 0, "\(one)")
            #expect(one.standardOutput.contains("state:         done"), "\(one)")
            #expect(one.standardOutput.contains("path:          \(directory)/f.bin"), "\(one)")
            let json = try await vfetch(["status", "1", "--json", "--cache-dir", cache])
            #expect(json.standardOutput.contains(#""state":"done""#), "\(json)")
            let all = try await vfetch(["status", "--cache-dir", cache])
            #expect(all.status == 0 && all.standardOutput.hasPrefix("ID") && all.standardOutput.contains(" done "), "\(all)")
            let none = try await vfetch(["status", "7", "--cache-dir", cache])
            #expect(none.status == 1, "\(none)")
            #expect(await server.stop() == 0)
        }
    }
}
