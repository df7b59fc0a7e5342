import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// `--max-speed` holds over the whole download, however many connections share it.
@Suite struct MaxSpeedTests {
    static let mib = 1 << 20

    @Test(arguments: [1, 8])
    func theSpeedLimitHoldsOverAllConnections(connections: Int) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 22)
            origin.publish("/a.bin", bytes)  // unthrottled
            var options = DownloadOptions()
            options.connections = connections
            options.minSplitSize = 256 << 10
            options.maxBytesPerSecond = Int64(Self.mib)
            let output = directory + "/a.bin"
            let clock = ContinuousClock()
            let started = clock.now
            let summary = try await fetch(origin.url("/a.bin"), to: .file(output), options: options).result.get()
            // 4 MiB at 1 MiB/s: under four seconds only with a burst past the limit. A lower bound only,
            // which a slow machine cannot break.
            #expect(clock.now - started >= .seconds(3))
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.bytes == Int64(bytes.count))
        }
    }
}
