import Foundation
import TestOrigin
import Testing
import VFetch

/// The connection controller against origins shaped like real ones: a burst at the start of every
/// throttled response, a per-client connection limit, a server that refuses everything.
@Suite struct ConnectionControlTests {
    static let mib = 1 << 20

    @Test func aHostThatAllowsFourConnectionsIsUsedByFourWithoutFailures() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(12 * Self.mib, seed: 40)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = Self.mib
            behavior.burstBytes = 256 << 10
            behavior.maxConcurrentResponses = 4
            origin.publish("/limited.bin", bytes, behavior: behavior)
            var options = DownloadOptions()
            options.connections = 16
            options.retries = 2
            let fetched = await fetch(origin.url("/limited.bin"), to: .file(directory + "/limited.bin"), options: options)
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/limited.bin") == sha256(bytes))
            // A refusal beside working connections is the host's limit, not a failed range: with 2 retries, a
            // range refused three times would have failed the download.
            #expect(summary.retries == 0)
            let refused = origin.requests.filter { $0.status == 503 }.count
            #expect(refused >= 1 && refused <= 16, "\(refused) refusals: the extra connections once, then rare tries")
            // Held at four, not halved: most of the file came while four responses ran at once.
            let served = origin.requests.filter { $0.status == 206 }.count
            #expect(served >= 4, "\(served) ranges served")
        }
    }

    @Test func aHostThatResetsExtraConnectionsIsUsedByTheOnesItKeeps() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 * Self.mib, seed: 43)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = Self.mib
            behavior.maxConcurrentResponses = 3
            behavior.resetsBeyondLimit = true
            origin.publish("/resets.bin", bytes, behavior: behavior)
            var options = DownloadOptions()
            options.connections = 8
            options.retries = 2
            let fetched = await fetch(origin.url("/resets.bin"), to: .file(directory + "/resets.bin"), options: options)
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/resets.bin") == sha256(bytes))
            #expect(summary.retries == 0, "a reset beside working connections is the host's limit, not a failure")
        }
    }

    @Test func aBurstAtTheStartOfEachResponseDoesNotKeepTheDownloadOnOneConnection() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(16 * Self.mib, seed: 41)
            var behavior = OriginBehavior()
            // nginx's default: the first 2 MiB of every limited response at once, then the limit.
            behavior.bytesPerSecond = 512 << 10
            behavior.burstBytes = 2 * Self.mib
            origin.publish("/burst.bin", bytes, behavior: behavior)
            var options = DownloadOptions()
            options.connections = 8
            let fetched = await fetch(origin.url("/burst.bin"), to: .file(directory + "/burst.bin"), options: options)
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/burst.bin") == sha256(bytes))
            #expect(summary.peakConnections == 8)
        }
    }

    @Test func aServerThatRefusesEveryRequestEndsTheDownloadNamingTheStatus() async throws {
        try await withOrigin { origin, directory in
            var behavior = OriginBehavior()
            behavior.maxConcurrentResponses = 0
            behavior.retryAfter = 0
            origin.publish("/busy.bin", randomBytes(Self.mib, seed: 42), behavior: behavior)
            var options = DownloadOptions()
            options.retries = 2
            let fetched = await fetch(origin.url("/busy.bin"), to: .file(directory + "/busy.bin"), options: options)
            #expect(fetched.error == .httpStatus(503, url: origin.url("/busy.bin")))
            #expect(origin.requests.count == 3, "the first try and two retries")
            #expect(!exists(directory + "/busy.bin"))
        }
    }

    @Test func twoDownloadsFromAHostThatAllowsFourShareItWithoutFailures() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(8 * Self.mib, seed: 44)
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = Self.mib
            behavior.burstBytes = 256 << 10
            // Both download this file: its limit of four responses at once is the host's limit for the two.
            behavior.maxConcurrentResponses = 4
            origin.publish("/shared.bin", bytes, behavior: behavior)
            var options = DownloadOptions()
            options.connections = 16
            options.retries = 1
            let first = Task { await fetch(origin.url("/shared.bin"), to: .file(directory + "/first.bin"), options: options) }
            // The second starts once the first has learned the limit and holds all four: its first request must
            // wait for a connection the first gives back, not be refused until its retries run out.
            try await Task.sleep(for: .milliseconds(700))
            let second = await fetch(origin.url("/shared.bin"), to: .file(directory + "/second.bin"), options: options)
            let firstSummary = try await first.value.result.get()
            let secondSummary = try second.result.get()
            for name in ["first", "second"] {
                #expect(try sha256(file: directory + "/\(name).bin") == sha256(bytes))
            }
            #expect(firstSummary.retries == 0 && secondSummary.retries == 0)
            let refused = origin.requests.filter { $0.status == 503 }.count
            // The first's twelve extra connections, once, and rare tries above the limit; the second, which knows
            // the limit from the first, is not refused (each learning it alone, they were refused 27 times).
            #expect(refused <= 16, "\(refused) refusals")
        }
    }
}
