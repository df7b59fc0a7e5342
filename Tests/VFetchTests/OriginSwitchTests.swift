import Foundation
import TestOrigin
import Testing

/// The origin-wide switches of the test origin (`OriginConfiguration`), checked with the real `curl`
/// command line tool and its own timings. Times are asserted from below (a loaded machine is only
/// ever slower), so each test measures what the switch is for.
@Suite struct OriginSwitchTests {
    static let kib = 1 << 10

    @Test func aPerClientLimitHoldsOverAllFiles() async throws {
        try await withOrigin { origin, _ in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 4
            configuration.retryAfter = 2
            origin.configuration = configuration
            // Eight files, none limited on its own; each response takes ~1.4 s, so all eight requests
            // arrive while the first four are still sending.
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 256 * Self.kib
            let size = 384 * Self.kib
            for index in 0..<8 {
                origin.publish("/\(index).bin", randomBytes(size, seed: UInt64(index)), behavior: behavior)
            }
            let transfers = try await inParallel(8) { index in try await curl([origin.url("/\(index).bin")]) }
            let served = transfers.filter { $0.status == 200 }
            let refused = transfers.filter { $0.status == 503 }
            #expect(served.count == 4, "\(transfers.map(\.status))")
            #expect(served.allSatisfy { $0.bytes == size })
            #expect(refused.count == 4, "\(transfers.map(\.status))")
            #expect(refused.allSatisfy { $0.retryAfter == "2" })
            // The slots come free as the responses end.
            origin.publish("/later.bin", randomBytes(size, seed: 8))
            #expect(try await curl([origin.url("/later.bin")]).first?.status == 200)
        }
    }

    @Test func aPerClientLimitCanResetExtraConnections() async throws {
        try await withOrigin { origin, _ in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 1
            configuration.resetsBeyondLimit = true
            origin.configuration = configuration
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 256 * Self.kib
            origin.publish("/slow.bin", randomBytes(256 * Self.kib, seed: 1), behavior: behavior)
            origin.publish("/other.bin", randomBytes(Self.kib, seed: 2))
            async let slow = curl([origin.url("/slow.bin")])
            try await waitUntil { origin.requests.count == 1 }
            let reset = try await curl([origin.url("/other.bin")])
            #expect(reset.first?.exitCode == 52, "curl's 'empty reply from server'")
            #expect(reset.first?.status == 0)
            #expect(try await slow.first?.status == 200)
            #expect(try await curl([origin.url("/other.bin")]).first?.status == 200)
        }
    }

    @Test func aLinkCapIsSharedFairlyByAllConnections() async throws {
        try await withOrigin { origin, _ in
            let rate = 2048 * Self.kib
            var configuration = OriginConfiguration()
            configuration.linkBytesPerSecond = rate
            origin.configuration = configuration
            for index in 0..<16 {
                origin.publish("/\(index).bin", randomBytes(1 << 20, seed: UInt64(index)))  // unthrottled per connection
            }
            // 16 MiB at 2 MiB/s would take 8 s: the origin is watched for a while once all 16 responses
            // are under way, then shut down, which ends the curls.
            let curls = Task { try await inParallel(16) { index in try await curl([origin.url("/\(index).bin")]) } }
            try await waitUntil { origin.requests.count == 16 }
            let clock = ContinuousClock()
            let served = { (0..<16).map { origin.bytesServed("/\($0).bin") } }
            let (start, before) = (clock.now, served())
            try await Task.sleep(for: .seconds(1))
            let after = served()
            let elapsed = clock.now - start
            try await origin.shutdown()
            _ = try await curls.value

            // Never more than the link carries (load can only make it less), beyond ~50 ms of idle credit…
            let shares = zip(after, before).map { $0 - $1 }
            let window = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            #expect(Double(shares.reduce(0, +)) <= Double(rate) * (window + 0.1), "\(shares) in \(window) s")
            // …and each connection gets about 1/16 of it: none is served ahead of the others.
            let fair = Double(shares.reduce(0, +)) / 16
            #expect(fair > 0)
            #expect(shares.allSatisfy { Double($0) >= 0.5 * fair && Double($0) <= 2 * fair }, "\(shares)")
        }
    }

    @Test func aLinkCapSlowsTheWholeOrigin() async throws {
        try await withOrigin { origin, _ in
            let rate = 2048 * Self.kib
            var configuration = OriginConfiguration()
            configuration.linkBytesPerSecond = rate
            origin.configuration = configuration
            let size = 512 * Self.kib
            origin.publish("/a.bin", randomBytes(size, seed: 3))  // unthrottled per connection
            let clock = ContinuousClock()
            let started = clock.now
            let transfers = try await inParallel(8) { _ in try await curl([origin.url("/a.bin")]) }
            let elapsed = clock.now - started
            #expect(transfers.allSatisfy { $0.status == 200 && $0.bytes == size })
            // 8 × 512 KiB at 2 MiB/s: 2 s for all of them together.
            #expect(elapsed >= .seconds(0.7 * Double(8 * size) / Double(rate)))
        }
    }

    @Test func latencyDelaysEveryResponseHead() async throws {
        try await withOrigin { origin, _ in
            var configuration = OriginConfiguration()
            configuration.latency = .milliseconds(300)
            origin.configuration = configuration
            origin.publish("/a.bin", randomBytes(Self.kib, seed: 4))
            // Two requests on one connection, the second for a missing file: both wait.
            let transfers = try await curl([origin.url("/a.bin"), origin.url("/missing.bin")])
            #expect(transfers.map(\.status) == [200, 404])
            #expect(transfers.allSatisfy { $0.firstByte >= 0.3 }, "\(transfers.map(\.firstByte))")
            #expect(Set(origin.requests.map(\.connection)).count == 1, "curl kept its connection")
        }
    }

    @Test(arguments: [nil, 4096 * 1024])
    func theRateChangesAfterTheOriginHasSentSomeBytes(rateBefore: Int?) async throws {
        try await withOrigin { origin, _ in
            let rateAfter = 256 * Self.kib
            var configuration = OriginConfiguration()
            configuration.rateChange = (afterBytes: 256 * Self.kib, bytesPerSecond: rateAfter)
            origin.configuration = configuration
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = rateBefore
            for (name, size) in [("a", 128), ("b", 384), ("c", 128)] {
                origin.publish("/\(name).bin", randomBytes(size * Self.kib, seed: 5), behavior: behavior)
            }
            // 128 KiB before the change: faster than the 0.5 s the later rate allows.
            let before = try await curl([origin.url("/a.bin")])
            #expect(before.first?.status == 200)
            #expect((before.first?.total ?? 0) < 0.4)
            // 384 KiB across the change: 128 KiB before it, then 256 KiB at the later rate (1 s).
            let across = try await curl([origin.url("/b.bin")])
            #expect(across.first?.bytes == 384 * Self.kib)
            #expect((across.first?.total ?? 0) >= 0.7, "the response in flight slowed down")
            // A response that starts after the change: 128 KiB at the later rate (less its first chunk).
            let after = try await curl([origin.url("/c.bin")])
            #expect(after.first?.bytes == 128 * Self.kib)
            #expect((after.first?.total ?? 0) >= 0.3)
        }
    }
}

// MARK: - Helpers

/// What curl measured for one transfer (see `curl --write-out`).
private struct Transfer {
    /// curl's exit code for the whole run.
    var exitCode: Int32
    /// 0 when no answer came.
    var status: Int
    /// Seconds from the start of the transfer to its first byte, and to its end.
    var firstByte: Double
    var total: Double
    var bytes: Int
    var retryAfter: String?
}

/// Runs `curl -s` on `arguments`, bodies discarded, and returns one `Transfer` per URL.
/// `--max-time` ends a run whatever the origin does.
private func curl(_ arguments: [String]) async throws -> [Transfer] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    let urls = arguments.filter { $0.hasPrefix("http://") }
    let discard = urls.flatMap { _ in ["-o", "/dev/null"] }
    let format = "%{http_code} %{time_starttransfer} %{time_total} %{size_download} %header{retry-after}\\n"
    process.arguments = ["curl", "-s", "--noproxy", "*", "--max-time", "10", "-w", format] + discard + arguments
    let output = Pipe()
    process.standardOutput = output
    let exitCode: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            continuation.resume(throwing: error)
        }
    }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return text.split(separator: "\n").map { line in
        let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        let field = { (index: Int) in fields.indices.contains(index) ? fields[index] : "" }
        return Transfer(
            exitCode: exitCode, status: Int(field(0)) ?? 0, firstByte: Double(field(1)) ?? 0,
            total: Double(field(2)) ?? 0, bytes: Int(field(3)) ?? 0,
            retryAfter: field(4).isEmpty ? nil : field(4))
    }
}

/// Runs `count` single-URL curl runs at once and returns their transfers.
private func inParallel(_ count: Int, _ run: @escaping @Sendable (Int) async throws -> [Transfer]) async throws -> [Transfer] {
    try await withThrowingTaskGroup(of: [Transfer].self) { group in
        for index in 0..<count {
            group.addTask { try await run(index) }
        }
        return try await group.reduce(into: []) { $0 += $1 }
    }
}

/// Polls `condition` every 10 ms, for 5 s at most.
private func waitUntil(_ condition: () -> Bool) async throws {
    var polls = 0
    while !condition() && polls < 500 {
        try await Task.sleep(for: .milliseconds(10))
        polls += 1
    }
    #expect(condition())
}
