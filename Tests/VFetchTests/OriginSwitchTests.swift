import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The origin-wide switches of the test origin (`OriginConfiguration`), checked with the real `curl`
/// command line tool and its own timings. Times are asserted from below (a loaded machine is only
/// ever slower), but for one transfer before the rate change, bounded far above what it takes.
@Suite struct OriginSwitchTests {
    static let kib = 1 << 10

    @Test func aPerClientLimitHoldsOverAllFiles() async throws {
        try await withOrigin { origin, _ in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 4
            configuration.retryAfter = 2
            origin.configuration = configuration
            // Eight files, none limited on its own, each taking a minute: all eight requests arrive while
            // the first four are under way, however slowly the curls start.
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 64 * Self.kib
            let paths = (0..<8).map { "/\($0).bin" }
            let bytes = randomBytes(4 << 20, seed: 0)
            for path in paths {
                origin.publish(path, bytes, behavior: behavior)  // one copy: arrays are shared until written
            }
            let runs = Dictionary(uniqueKeysWithValues: paths.map { path in (path, Task { try await curl([origin.url(path)]) }) })
            try await waitUntil { origin.requests.count == 8 }
            let statuses = origin.requests.map(\.status)
            #expect(statuses.filter { $0 == 200 }.count == 4, "\(statuses)")
            #expect(statuses.filter { $0 == 503 }.count == 4, "\(statuses)")
            for request in origin.requests where request.status == 503 {
                let refused = try await runs[request.path]?.value.first
                #expect(refused?.status == 503 && refused?.retryAfter == "2")
            }
            // The slots come free as the clients go.
            for run in runs.values { run.cancel() }
            for run in runs.values { _ = try await run.value }
            origin.publish("/later.bin", randomBytes(Self.kib, seed: 8))
            try await waitUntil { try await curl([origin.url("/later.bin")]).first?.status == 200 }
        }
    }

    @Test func aPerClientLimitCanResetExtraConnections() async throws {
        try await withOrigin { origin, _ in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 1
            configuration.resetsBeyondLimit = true
            origin.configuration = configuration
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = 64 * Self.kib
            origin.publish("/slow.bin", randomBytes(4 << 20, seed: 1), behavior: behavior)  // a minute
            origin.publish("/other.bin", randomBytes(Self.kib, seed: 2))
            let slow = Task { try await curl([origin.url("/slow.bin")]) }
            try await waitUntil { origin.requests.count == 1 }
            let reset = try await curl([origin.url("/other.bin")])
            #expect([52, 56].contains(reset.first?.exitCode), "curl's empty reply or receive failure")
            #expect(reset.first?.status == 0)
            slow.cancel()
            _ = try await slow.value
            try await waitUntil { try await curl([origin.url("/other.bin")]).first?.status == 200 }
        }
    }

    @Test func aLinkCapIsSharedFairlyByAllConnections() async throws {
        try await withOrigin { origin, _ in
            let rate = 2048 * Self.kib
            var configuration = OriginConfiguration()
            configuration.linkBytesPerSecond = rate
            origin.configuration = configuration
            // 16 MiB each, unthrottled per connection: none can end while the curls are still starting
            // (8 s even alone on the link). The origin is watched for a second once all 16 responses are
            // under way, then the curls are stopped.
            let bytes = randomBytes(16 << 20, seed: 3)
            for index in 0..<16 {
                origin.publish("/\(index).bin", bytes)  // one copy: arrays are shared until written
            }
            // One curl with 16 connections: sixteen processes took longer than the wait to start on a busy machine.
            let curls = Task { try await curl(inParallel: (0..<16).map { origin.url("/\($0).bin") }) }
            defer { curls.cancel() }
            try await waitUntil { origin.requests.count == 16 }
            let clock = ContinuousClock()
            let served = { (0..<16).map { origin.bytesServed("/\($0).bin") } }
            let (start, before) = (clock.now, served())
            try await Task.sleep(for: .seconds(1))
            let after = served()
            let elapsed = clock.now - start
            curls.cancel()
            _ = try await curls.value

            // Never more than the link carries (load can only make it less), beyond ~50 ms of idle credit…
            let shares = zip(after, before).map { $0 - $1 }
            let window = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            #expect(Double(shares.reduce(0, +)) <= Double(rate) * (window + 0.1), "\(shares) in \(window) s, from \(before)")
            // …and none is served ahead of the others. (No floor: a curl that a busy machine does not
            // schedule reads less, and the link rightly gives its share to the others.)
            let fair = Double(shares.reduce(0, +)) / 16
            #expect(fair > 0, "\(shares) in \(window) s, from \(before)")
            #expect(shares.allSatisfy { Double($0) <= 2 * fair }, "\(shares)")
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
            let transfers = try await curl(inParallel: Array(repeating: origin.url("/a.bin"), count: 8))
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
            var configuration = OriginConfiguration()
            configuration.rateChange = (afterBytes: 256 * Self.kib, bytesPerSecond: 128 * Self.kib)
            origin.configuration = configuration
            var behavior = OriginBehavior()
            behavior.bytesPerSecond = rateBefore
            for (name, size) in [("a", 192), ("b", 128), ("c", 64)] {
                origin.publish("/\(name).bin", randomBytes(size * Self.kib, seed: 5), behavior: behavior)
            }
            // 192 KiB before the change: well inside the 1.4 s the later rate would take.
            let before = try await curl([origin.url("/a.bin")])
            #expect(before.first?.bytes == 192 * Self.kib)
            #expect((before.first?.total ?? 0) < 0.7)
            // 128 KiB across the change: 64 KiB before it, then 64 KiB at the later rate (0.5 s, less the
            // first chunk of the new throttle).
            let across = try await curl([origin.url("/b.bin")])
            #expect(across.first?.bytes == 128 * Self.kib)
            #expect((across.first?.total ?? 0) >= 0.3, "the response in flight slowed down")
            // A response that starts after the change: 64 KiB at the later rate.
            let after = try await curl([origin.url("/c.bin")])
            #expect(after.first?.bytes == 64 * Self.kib)
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

/// Runs `curl -s` on `arguments`, bodies discarded, and returns one `Transfer` per URL (none when
/// the run was cancelled, which ends curl). `--max-time` ends a run a test forgot.
private func curl(_ arguments: [String]) async throws -> [Transfer] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    let urls = arguments.filter { $0.hasPrefix("http://") }
    let discard = urls.flatMap { _ in ["-o", "/dev/null"] }
    let format = "%{http_code} %{time_starttransfer} %{time_total} %{size_download} %header{retry-after}\\n"
    process.arguments = ["curl", "-s", "--no-progress-meter", "--noproxy", "*", "--max-time", "60", "-w", format] + discard + arguments
    // A file, not a pipe: reading a pipe to its end blocks a thread of the test process until every
    // curl started meanwhile (holding a copy of its write end) has ended.
    let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("vfetch-curl-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: outputFile) }
    let output = try FileHandle(forWritingTo: outputFile)
    defer { try? output.close() }
    process.standardOutput = output
    let exitCode: Int32 = try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: error)
            }
        }
    } onCancel: {
        // SIGKILL: curl inherits the test thread's signal mask, which blocks SIGTERM (`terminate()`).
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").map { line in
        let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        let field = { (index: Int) in fields.indices.contains(index) ? fields[index] : "" }
        return Transfer(
            exitCode: exitCode, status: Int(field(0)) ?? 0, firstByte: Double(field(1)) ?? 0,
            total: Double(field(2)) ?? 0, bytes: Int(field(3)) ?? 0,
            retryAfter: field(4).isEmpty ? nil : field(4))
    }
}

/// Fetches every URL at once, each on its own connection, with one curl.
private func curl(inParallel urls: [String]) async throws -> [Transfer] {
    try await curl(["--parallel", "--parallel-immediate", "--parallel-max", String(urls.count)] + urls)
}

/// Polls `condition` every 10 ms until it holds, for 30 s at most (curls start slowly in a loaded
/// test run).
private func waitUntil(_ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("still not so after 30 s")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
