import Foundation
import TestOrigin
import Testing
import VFetchEngine

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
            // nginx's limit_conn per client address: four responses at once over every file of the host.
            var host = OriginConfiguration()
            host.maxResponsesPerClient = 4
            origin.configuration = host
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = Self.mib
            behavior.burstBytes = 256 << 10
            let files = ["first": randomBytes(8 * Self.mib, seed: 44), "second": randomBytes(6 * Self.mib, seed: 45)]
            for (name, bytes) in files { origin.publish("/\(name).bin", bytes, behavior: behavior) }
            var options = DownloadOptions()
            options.connections = 16
            options.retries = 1
            let first = Task { await fetch(origin.url("/first.bin"), to: .file(directory + "/first.bin"), options: options) }
            // The second starts once the first has learned the limit (its extra connections were refused) and
            // holds all four: its first request must wait for a connection the first gives back, not be refused
            // until its retries run out. On the origin's state, not a clock: a loaded machine is slower.
            for _ in 0..<500 where !origin.requests.contains(where: { $0.status == 503 }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await Task.sleep(for: .milliseconds(100))
            let second = await fetch(origin.url("/second.bin"), to: .file(directory + "/second.bin"), options: options)
            let summaries = [try await first.value.result.get(), try second.result.get()]
            for (name, bytes) in files { #expect(try sha256(file: directory + "/\(name).bin") == sha256(bytes)) }
            #expect(summaries.allSatisfy { $0.retries == 0 })
            // The second succeeds: each learning the limit alone, its first request was refused until its retry
            // ran out (503). And the two do not fight on: a refusal is rare once the limit is known.
            let refused = origin.requests.filter { $0.status == 503 }.count
            #expect(refused <= 32, "\(refused) refusals")
        }
    }

    @Test func anOriginThatStartsLimitingEachConnectionMidDownloadGetsMoreConnections() async throws {
        try await withOrigin { origin, directory in
            // Unlimited at first, so one connection is enough; then 1 MiB/s per connection, as a host under load.
            var host = OriginConfiguration()
            host.rateChange = (afterBytes: 20 * Self.mib, bytesPerSecond: Self.mib)
            origin.configuration = host
            // 16 MiB after the change: enough work left to split among eight connections (1 MiB at least each).
            let bytes = randomBytes(36 * Self.mib, seed: 46)
            origin.publish("/changing.bin", bytes)
            var options = DownloadOptions()
            options.connections = 8
            let fetched = await fetch(origin.url("/changing.bin"), to: .file(directory + "/changing.bin"), options: options)
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/changing.bin") == sha256(bytes))
            // Measured again once the rate collapsed: wide open, not left on the one or two connections of the start.
            #expect(summary.peakConnections == 8, "peak \(summary.peakConnections) connections")
        }
    }

    @Test func aDistantHostWithALinkCapIsFetchedWhole() async throws {
        try await withOrigin { origin, directory in
            var host = OriginConfiguration()
            host.latency = .milliseconds(150)
            host.linkBytesPerSecond = 8 * Self.mib
            origin.configuration = host
            let bytes = randomBytes(6 * Self.mib, seed: 47)
            origin.publish("/far.bin", bytes)
            let fetched = await fetch(origin.url("/far.bin"), to: .file(directory + "/far.bin"))
            let summary = try fetched.result.get()
            #expect(try sha256(file: directory + "/far.bin") == sha256(bytes))
            #expect(summary.retries == 0)
        }
    }
}
