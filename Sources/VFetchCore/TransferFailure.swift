/// Why a request failed below HTTP, as the adapter that owns the network library names it, and what
/// that means for the download: one table, tested without a network.
package enum TransferFailure: Sendable, Equatable {
    /// The host's (or the proxy's) name did not resolve.
    case unresolved
    /// No connection could be made: refused, unreachable.
    case notConnected
    /// The connection failed or closed before a response: reset, nothing received, a send or receive error.
    case reset
    /// Not an http(s) URL, or a malformed one.
    case badURL
    /// Retrying cannot help: TLS verification or certificate files, too many redirects, login denied.
    case permanent
    /// Anything else: timeouts, a cut mid-body, protocol errors.
    case transient

    package enum Verdict: Sendable, Equatable {
        /// The download cannot go on: the host is not there (exit 4).
        case unreachable
        /// The download cannot go on: the URL is wrong (exit 3).
        case badURL
        /// The download cannot go on: retries would fail the same way (exit 1).
        case permanent
        /// Other connections work: the host's connection limit. The range goes to one of them, no failure counted.
        case hostLimit
        /// Try the range again after a backoff.
        case retry
    }

    /// What this failure means. `fileKnown`: the probe has answered; `answered`: this request had its
    /// response accepted; `othersWork`: other requests have theirs (only asked when it matters).
    package func verdict(fileKnown: Bool, answered: Bool, othersWork: () -> Bool) -> Verdict {
        switch self {
        case .unresolved: return .unreachable
        case .notConnected where !fileKnown: return .unreachable
        case .badURL: return .badURL
        case .permanent: return .permanent
        case .notConnected, .reset: return !answered && othersWork() ? .hostLimit : .retry
        case .transient: return .retry
        }
    }
}
