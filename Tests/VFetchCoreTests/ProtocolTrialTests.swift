import Testing

@testable import VFetchCore

/// An https origin as the trial sees it: `streams` requests at once, each limited to `perRequest`; on
/// HTTP/2 they share one TCP connection, which a shaping network may hold to `perConnection`.
struct SimulatedHTTPSOrigin {
    var perRequest: Double
    var perConnection = Double.infinity
    var link: Double
    var streams = 16

    func rate(_ protocol: ProtocolTrial.HTTPProtocol) -> Double {
        let requests = Double(streams) * perRequest
        switch `protocol` {
        case .http2: return min(link, requests, perConnection)
        case .http1: return min(link, requests, Double(streams) * perConnection)
        }
    }

    /// Downloads `size` bytes as the trial decides, or on `fixed`; the seconds it took and the trial.
    func download(_ size: Double, fixed: ProtocolTrial.HTTPProtocol? = nil) -> (seconds: Double, trial: ProtocolTrial) {
        let dt = 0.01
        var trial = ProtocolTrial(now: 0)
        var done = 0.0
        var now = 0.0
        while done < size, now < 3600 {
            let chosen = trial.update(bytesDone: Int64(done), remaining: Int64(size - done), now: now)
            done += rate(fixed ?? chosen) * dt
            now += dt
        }
        return (now, trial)
    }
}

@Suite struct ProtocolTrialTests {
    let mib = 1048576.0

    @Test func anOriginThatLimitsEachRequestStaysOnHTTP2() {
        // nginx's limit_rate applies per stream: HTTP/1.1 is no faster, only dearer.
        let origin = SimulatedHTTPSOrigin(perRequest: 4 * mib, link: 95 * mib)
        let run = origin.download(2048 * mib)
        #expect(run.trial.current == .http2)
        #expect(run.trial.rates.http1 != nil, "a long download tries HTTP/1.1 once")
        #expect(run.seconds <= origin.download(2048 * mib, fixed: .http2).seconds * 1.02)
    }

    @Test func anOriginThatShapesEachConnectionMovesToHTTP1() {
        // Every TCP connection held to 4 MiB/s: HTTP/2's streams share one connection's rate.
        let origin = SimulatedHTTPSOrigin(perRequest: 100 * mib, perConnection: 4 * mib, link: 95 * mib)
        let run = origin.download(1024 * mib)
        #expect(run.trial.current == .http1)
        let best = origin.download(1024 * mib, fixed: .http1).seconds
        #expect(run.seconds <= best * 1.3, "\(run.seconds) s against \(best) s on HTTP/1.1 throughout")
        #expect(run.seconds * 10 < origin.download(1024 * mib, fixed: .http2).seconds)
    }

    @Test func aShortDownloadIsNotWorthATrial() {
        let origin = SimulatedHTTPSOrigin(perRequest: 4 * mib, link: 95 * mib)
        // 256 MiB at 64 MiB/s: 4 s in all, too short for a trial to pay.
        let run = origin.download(256 * mib)
        #expect(run.trial.current == .http2)
        #expect(run.trial.rates.http1 == nil)
    }
}
