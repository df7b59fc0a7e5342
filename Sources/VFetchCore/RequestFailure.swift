/// Why one request failed, as the driver saw it. What that means for its bytes (retry, wait, give up)
/// is its planner's to decide.
package enum RequestFailure: Error, Sendable, Equatable {
    /// An HTTP answer other than the bytes asked for; `retryAfter` when it said when to ask again.
    case status(Int, retryAfter: Double?)
    /// Below HTTP: connect, reset, timeout (`TransferFailure` classifies it).
    case transfer(TransferFailure, message: String)
    /// An answer that cannot be what was asked for: an HTML page, a wrong length.
    case invalid(String)
}

extension RequestFailure {
    /// Whether this may be the host refusing one connection too many (nginx's `limit_conn`, a CDN's
    /// per-client cap): a 429 or 503, or a connection refused or reset before its answer was accepted
    /// (`answered`). The host's budget (`HostBudget.refused`) judges whether it was.
    package func mayBeHostLimit(answered: Bool) -> Bool {
        switch self {
        case .status(let status, _): status == 429 || status == 503
        case .transfer(let kind, _): kind.mayBeHostLimit && !answered
        case .invalid: false
        }
    }

    /// The wait the origin asked for, if it did.
    package var retryAfter: Double? { if case .status(_, let after) = self { after } else { nil } }
}
