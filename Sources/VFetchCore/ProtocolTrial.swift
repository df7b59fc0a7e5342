/// Whether an https download's new requests go as HTTP/2 streams of one connection or as HTTP/1.1
/// requests on connections of their own, decided by measurement on that origin. Pure: the clock is an
/// argument, so it is tested against simulated origins in milliseconds.
///
/// HTTP/2 shares one handshake and one encryption among all streams, and most servers limit each
/// request (nginx's `limit_rate` applies per stream): there it is as fast as many connections and
/// cheaper, so it is where a download starts. But a server or a network that shapes each TCP
/// connection makes all streams share one connection's rate, and then HTTP/1.1 connections each get
/// their own. So once a download on HTTP/2 has settled, and if it has long enough to go for a trial to
/// pay, its new requests go as HTTP/1.1 for a while; HTTP/1.1 stays only if it is clearly faster.
/// Requests are short (a few MiB), so the protocol of the connections turns over within a second.
package struct ProtocolTrial: Sendable {
    package enum HTTPProtocol: Sendable, Equatable {
        case http2, http1
    }

    package struct Configuration: Sendable, Equatable {
        /// Seconds a protocol runs before its rate is measured: the connections (and the controller's
        /// count) settle, and requests of the other protocol end.
        package var settle = 1.0
        /// Seconds each protocol's rate is measured over.
        package var window = 2.0
        /// A trial only where the download has this many seconds to go at HTTP/2's rate: on a short one it
        /// could not pay back what it costs.
        package var minimumRemaining = 8.0
        /// HTTP/1.1 must be this much faster to stay.
        package var requiredGain = 1.15
        package init() {}
    }

    enum Phase: Sendable {
        /// Running `current` since `since`; measuring from `window` once it has settled. `baseline`:
        /// HTTP/2's rate, while HTTP/1.1 is tried.
        case measuring(since: Double, window: (start: Double, bytes: Int64)?, baseline: Double?)
        case decided
    }

    package let configuration: Configuration
    /// The protocol for new requests.
    package private(set) var current = HTTPProtocol.http2
    /// HTTP/2's and HTTP/1.1's measured rates, once known (bytes per second).
    package private(set) var rates: (http2: Double?, http1: Double?) = (nil, nil)
    private var phase: Phase

    package init(_ configuration: Configuration = Configuration(), now: Double) {
        self.configuration = configuration
        phase = .measuring(since: now, window: nil, baseline: nil)
    }

    /// Feeds the bytes done so far and what is left; returns the protocol for new requests.
    package mutating func update(bytesDone: Int64, remaining: Int64, now: Double) -> HTTPProtocol {
        guard case .measuring(let since, let window, let baseline) = phase else { return current }
        guard let window else {
            if now - since >= configuration.settle { phase = .measuring(since: since, window: (now, bytesDone), baseline: baseline) }
            return current
        }
        guard now - window.start >= configuration.window else { return current }
        let rate = Double(bytesDone - window.bytes) / (now - window.start)
        if let baseline {
            rates.http1 = rate
            current = rate >= baseline * configuration.requiredGain ? .http1 : .http2
            phase = .decided
        } else {
            rates.http2 = rate
            if rate > 0, Double(remaining) / rate >= configuration.minimumRemaining {
                current = .http1
                phase = .measuring(since: now, window: nil, baseline: rate)
            } else {
                phase = .decided
            }
        }
        return current
    }
}
