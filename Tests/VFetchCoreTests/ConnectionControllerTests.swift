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
        let dt = 0.005
        var controller = ConnectionController(.init(maximum: maximum), now: 0, bytesDone: 0)
        // Each open connection: its number and bytes left in its burst and in its response.
        var open: [(number: Int, burst: Double, response: Double)] = [(1, burst, responseBytes)]
        var numbered = 1
        var done = 0.0
        var now = 0.0
        var refusals = 0
        var limits: [Int] = []
        while done < size, now < 600 {
            let limit = fixed ?? controller.update(bytesDone: Int64(done), delivering: open.count, now: now)
            limits.append(limit)
            if open.count > limit { open.removeLast(open.count - limit) }
            while open.count < limit {
                if open.count >= hostLimit {
                    refusals += 1
                    guard controller.refused(working: open.count, retryAfter: nil, now: now) else { break }
                    if controller.limit <= open.count { break }
                    continue
                }
                numbered += 1
                open.append((numbered, burst, responseBytes))
                controller.accepted(working: open.count)
            }
            let rate = change.map { now >= $0.at ? $0.rate : perConnection } ?? perConnection
            let wanted = open.map { connection -> Double in
                if connection.burst > 0 { return link }
                if let every = slowEvery, connection.number % every == 0 { return slowRate }
                return rate
            }
            let share = min(1, link / wanted.reduce(0, +))
            for index in open.indices {
                let got = min(wanted[index] * share * dt, size - done)
                done += got
                open[index].burst -= got
                open[index].response -= got
                if open[index].response <= 0 { open[index].burst = burst; open[index].response = responseBytes }
            }
            now += dt
        }
        return Run(seconds: now, refusals: refusals, finalLimit: controller.limit, limits: limits)
    }

    /// The best any fixed count does on this origin.
    func optimum(_ size: Double, maximum: Int = 32) -> Double {
        (1...maximum).map { download(size, maximum: maximum, fixed: min($0, hostLimit)).seconds }.min()!
    }
}

@Suite struct ConnectionControllerTests {
    let mib = 1048576.0

    /// Within 10% of the best fixed count on the same simulated origin.
    func expectNearOptimum(_ origin: SimulatedOrigin, size: Double, maximum: Int = 32,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        let run = origin.download(size, maximum: maximum)
        let best = origin.optimum(size, maximum: maximum)
        #expect(run.seconds <= best * 1.1, "\(run.seconds) s against the best fixed count's \(best) s; limits \(Set(run.limits).sorted())",
                sourceLocation: sourceLocation)
    }

    @Test func aBurstAtTheStartOfEveryResponseDoesNotHideAPerConnectionLimit() {
        // nginx's default: the first 2 MiB of each response at once, then 1 MiB/s.
        let origin = SimulatedOrigin(perConnection: mib, link: 100 * mib, burst: 2 * mib)
        expectNearOptimum(origin, size: 512 * mib)
        #expect(origin.download(512 * mib).finalLimit == 32)
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

    @Test func aRefusalWithNothingWorkingIsAFailure() {
        var controller = ConnectionController(.init(maximum: 8), now: 0, bytesDone: 0)
        let alone = controller.refused(working: 0, retryAfter: nil, now: 0)
        #expect(!alone)
        #expect(controller.hostCeiling == nil)
        let besideOthers = controller.refused(working: 3, retryAfter: 30, now: 1)
        #expect(besideOthers)
        #expect(controller.hostCeiling == 3)
        // Retry-After holds the count until it has passed.
        _ = controller.update(bytesDone: 1 << 30, delivering: 3, now: 20)
        #expect(controller.hostCeiling == 3)
        _ = controller.update(bytesDone: 1 << 30, delivering: 3, now: 31.5)
        #expect(controller.hostCeiling == 4)
        // An answer that crossed the refusal shows the host allows more.
        controller.accepted(working: 6)
        #expect(controller.hostCeiling == 6)
    }
}
