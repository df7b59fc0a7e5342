import Testing

@testable import VFetchCore

/// An origin as the controller sees it, simulated in steps of 5 ms: each connection carries its
/// per-connection rate, every response starts with a burst at link speed (nginx's first chunk), all
/// of them share the link, and a host may refuse connections beyond its limit.
struct SimulatedOrigin {
    var perConnection: Double
    var link: Double
    /// Bytes of each response sent at link speed before the per-connection rate applies.
    var burst: Double = 0
    /// Each connection's response covers this much of the file; then a new response (and burst) starts.
    var responseBytes: Double = 8e6
    /// Connections allowed at once; the others are refused (503).
    var hostLimit = Int.max
    /// Every Nth connection (1-based) carries `slowRate` instead.
    var slowEvery: Int? = nil
    var slowRate = 512e3
    /// From this time on, `perConnection` becomes `changedRate`.
    var change: (at: Double, rate: Double)? = nil

    struct Run {
        var seconds: Double
        var refusals: Int
        var finalLimit: Int
        var limits: [Int]
    }

    /// Downloads `size` bytes with the controller deciding the count, or with `fixed` connections.
    func download(_ size: Double, maximum: Int = 32, fixed: Int? = nil) -> Run {
        downloadTogether([(size, 0)], maximum: maximum, fixed: fixed)[0]
    }

    /// Downloads that fetch from this origin at once, each `size` bytes from its `start` time on, sharing one
    /// `HostBudget` as the downloads of one process do. One run each, in the given order.
    func downloadTogether(_ downloads: [(size: Double, start: Double)], maximum: Int = 32, fixed: Int? = nil) -> [Run] {
        let dt = 0.005
        struct Download {
            var controller: ConnectionController
            // Each open connection: its number and bytes left in its burst and in its response.
            var open: [(number: Int, burst: Double, response: Double)] = []
            var done = 0.0
            var run = Run(seconds: 0, refusals: 0, finalLimit: 0, limits: [])
            var finished = false
        }
        var budget = HostBudget()
        var all = downloads.map { _ in Download(controller: ConnectionController(.init(maximum: maximum), now: 0, bytesDone: 0)) }
        var numbered = 0
        var now = 0.0
        while all.contains(where: { !$0.finished }), now < 600 {
            for index in all.indices where !all[index].finished && downloads[index].start <= now {
                if budget.claims[index] == nil {
                    budget.join(index, maximum: maximum)
                    all[index].controller = ConnectionController(.init(maximum: maximum), now: now, bytesDone: 0)
                }
                var download = all[index]
                let allowed = budget.report(index, wanted: download.controller.wanted, working: download.open.count, now: now)
                let wanted = download.controller.update(
                    bytesDone: Int64(download.done), delivering: download.open.count, allowed: allowed, now: now)
                var limit = fixed ?? min(wanted, allowed)
                download.run.limits.append(limit)
                if download.open.count > limit {
                    for _ in limit..<download.open.count { budget.closed(index, cut: true, now: now) }
                    download.open.removeLast(download.open.count - limit)
                }
                while download.open.count < limit, budget.open(index, now: now) {
                    let others = all.indices.filter { $0 != index }.reduce(0) { $0 + all[$1].open.count }
                    if download.open.count + others >= hostLimit {
                        budget.closed(index, cut: false, now: now)
                        download.run.refusals += 1
                        guard budget.refused(index, working: download.open.count, retryAfter: nil, now: now) else { break }
                        limit = min(limit, budget.allowance(for: index, now: now))
                        if limit <= download.open.count { break }
                        continue
                    }
                    numbered += 1
                    download.open.append((numbered, burst, responseBytes))
                    budget.accepted(index, working: download.open.count)
                }
                all[index] = download
            }
            let rate = change.map { now >= $0.at ? $0.rate : perConnection } ?? perConnection
            let wanted = all.map { download in
                download.open.map { connection -> Double in
                    if connection.burst > 0 { return link }
                    if let every = slowEvery, connection.number % every == 0 { return slowRate }
                    return rate
                }
            }
            let share = min(1, link / max(1, wanted.joined().reduce(0, +)))
            for index in all.indices where !all[index].finished {
                let size = downloads[index].size
                for connection in all[index].open.indices {
                    let got = min(wanted[index][connection] * share * dt, size - all[index].done)
                    all[index].done += got
                    all[index].open[connection].burst -= got
                    all[index].open[connection].response -= got
                    if all[index].open[connection].response <= 0 {
                        all[index].open[connection].burst = burst
                        all[index].open[connection].response = responseBytes
                    }
                }
                if all[index].done >= size {
                    all[index].finished = true
                    all[index].open = []
                    all[index].run.seconds = now + dt - downloads[index].start
                    all[index].run.finalLimit = all[index].controller.limit
                    budget.leave(index)
                }
            }
            now += dt
        }
        return all.map(\.run)
    }

    /// The best any fixed count does on this origin.
    func optimum(_ size: Double, maximum: Int = 32) -> Double {
        (1...maximum).map { download(size, maximum: maximum, fixed: min($0, hostLimit)).seconds }.min()!
    }
}

@Suite struct ConnectionControllerTests {
    let mib = 1048576.0

    /// Within 10% of the best fixed count on the same simulated origin.
    func expectNearOptimum(
        _ origin: SimulatedOrigin, size: Double, maximum: Int = 32,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let run = origin.download(size, maximum: maximum)
        let best = origin.optimum(size, maximum: maximum)
        #expect(
            run.seconds <= best * 1.1, "\(run.seconds) s against the best fixed count's \(best) s; limits \(Set(run.limits).sorted())",
            sourceLocation: sourceLocation)
    }

    @Test func aBurstAtTheStartOfEveryResponseDoesNotHideAPerConnectionLimit() {
        // nginx's default: the first 2 MiB of each response at once, then 1 MiB/s.
        let origin = SimulatedOrigin(perConnection: mib, link: 100 * mib, burst: 2 * mib)
        expectNearOptimum(origin, size: 512 * mib)
        #expect(origin.download(512 * mib).finalLimit == 32)
    }

    /// A probe silent after its burst (a throttled origin's next second is far) must not hold the download at one
    /// connection until bytes come: the controller names the moments it judges the probe, and at 5 ms a slow
    /// one is hopeless and the count opens.
    @Test func aSilentProbeIsJudgedAtTheMomentsTheControllerNames() {
        var controller = ConnectionController(.init(maximum: 32), now: 10, bytesDone: 0)
        #expect(controller.nextDecision(after: 10) == 10.005)
        #expect(controller.update(bytesDone: 100 << 10, delivering: 1, now: 10.001) == 1)
        #expect(controller.update(bytesDone: 100 << 10, delivering: 0, now: 10.005) > 1)
        #expect(controller.nextDecision(after: 10.005) == nil)
    }

    @Test func aPerConnectionCapUnderALinkCap() {
        // The e2e cdn scenario: 4 MiB/s per connection, an 800 Mbit/s link.
        expectNearOptimum(SimulatedOrigin(perConnection: 4 * mib, link: 95 * mib, burst: 2 * mib), size: 512 * mib)
    }

    @Test func aSharedLinkAndNoPerConnectionLimitSheds() {
        // One connection can fill the link: extra ones are closed again, and throughput holds.
        let origin = SimulatedOrigin(perConnection: 100 * mib, link: 100 * mib)
        expectNearOptimum(origin, size: 2048 * mib)
        #expect(origin.download(2048 * mib).finalLimit < 32)
        // A connection that alone fills a fast link at once is not multiplied at all.
        let fast = SimulatedOrigin(perConnection: 1000 * mib, link: 1000 * mib)
        #expect(fast.download(1024 * mib).limits.max()! <= 2)
    }

    @Test func aHostThatAllowsFourConnectionsIsHeldAtFour() {
        let origin = SimulatedOrigin(perConnection: 4 * mib, link: 95 * mib, burst: 2 * mib, hostLimit: 4)
        expectNearOptimum(origin, size: 256 * mib)
        let run = origin.download(256 * mib)
        #expect(run.finalLimit == 4)
        // One refusal per connection opened at first, then a rare try above the limit.
        #expect(run.refusals <= 32 + 8, "\(run.refusals) refusals")
    }

    @Test func unevenConnections() {
        let origin = SimulatedOrigin(perConnection: 4 * mib, link: 95 * mib, burst: 2 * mib, slowEvery: 5)
        expectNearOptimum(origin, size: 512 * mib)
    }

    @Test func aRateThatChangesMidDownloadIsMeasuredAgain() {
        // Unlimited at first (one connection is enough), then the origin limits each connection under load.
        let origin = SimulatedOrigin(perConnection: 400 * mib, link: 400 * mib, change: (at: 2, rate: 4 * mib))
        let run = origin.download(2048 * mib)
        #expect(run.limits.prefix(300).max()! <= 2)
        #expect(run.finalLimit == 32)
        expectNearOptimum(origin, size: 2048 * mib)
    }

    @Test func neverMoreThanTheMaximumAndOneStaysOne() {
        let origin = SimulatedOrigin(perConnection: mib, link: 100 * mib, burst: 2 * mib)
        #expect(origin.download(64 * mib, maximum: 6).limits.max()! == 6)
        #expect(origin.download(16 * mib, maximum: 1).limits.max()! == 1)
    }

    @Test func twoDownloadsFromAHostThatAllowsFourShareItWithoutFighting() {
        let origin = SimulatedOrigin(perConnection: 4 * mib, link: 95 * mib, burst: 2 * mib, hostLimit: 4)
        // The second starts while the first holds all four: it waits for its share, then both get two.
        let runs = origin.downloadTogether([(128 * mib, 0), (128 * mib, 3)])
        let alone = origin.optimum(128 * mib)
        // Together they take what 256 MiB takes at the host's limit; neither starves.
        for run in runs { #expect(run.seconds <= alone * 2 * 1.15, "\(run.seconds) s; alone \(alone) s") }
        #expect(runs[0].refusals + runs[1].refusals <= 32 + 16, "\(runs.map(\.refusals)) refusals")
        #expect(runs[1].limits.suffix(100).max()! <= 4)
    }

    @Test func twoDownloadsFromAnOpenHostSplitTheMaximumAndTheLastTakesItAll() {
        // Each connection is limited by the origin: the more the better, up to the process's 16 for the host.
        let origin = SimulatedOrigin(perConnection: 2 * mib, link: 400 * mib, burst: 2 * mib)
        let runs = origin.downloadTogether([(256 * mib, 0), (64 * mib, 2)], maximum: 16)
        // While both run they hold 16 together; the second has its half.
        #expect(runs[1].limits.suffix(runs[1].limits.count / 2).max()! <= 8)
        // Once the second is done, the first takes the whole budget again.
        #expect(runs[0].finalLimit == 16)
        let ideal = (256 + 64) * mib / (16 * 2 * mib)
        #expect(runs[0].seconds <= ideal * 1.15, "\(runs[0].seconds) s against \(ideal) s")
    }
}
