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
        /// Try the range again after a backoff.
        case retry
    }

    /// Whether the host may have refused the request at its connection limit: a connection refused, or
    /// one reset before its answer. The host's budget (`HostBudget.refused`) judges whether it did.
    package var mayBeHostLimit: Bool { self == .notConnected || self == .reset }

    /// What this failure means, once it is not the host's connection limit. `fileKnown`: the probe has answered.
    package func verdict(fileKnown: Bool) -> Verdict {
        switch self {
        case .unresolved: .unreachable
        case .notConnected where !fileKnown: .unreachable
        case .badURL: .badURL
        case .permanent: .permanent
        case .notConnected, .reset, .transient: .retry
        }
    }
}
