import Foundation
import Synchronization
import VFetchCore

/// The process's connections to each host: every driver (a file's, a stream's, the player cache's, the
/// queue's) takes a place in the `HostBudget` of each host it fetches from, so that downloads from one
/// host split what it allows instead of fighting over it. Drivers on their own threads call in as their
/// transfers open and close, and once per turn of their loops.
final class HostConnections: Sendable {
    static let shared = HostConnections()

    /// One download's place in its host's budget.
    struct Claim: Sendable, Equatable {
        let host: String
        let download: Int
    }

    private struct State {
        var budgets: [String: HostBudget] = [:]
        var nextDownload = 0
    }

    /// Guards every host's budget; held only for a few arithmetic steps.
    private let state = Mutex(State())
    /// One clock for every driver: a host's `Retry-After` holds whichever download reads it.
    private let started = ContinuousClock.now

    /// Takes a place on `host` for a download that opens at most `maximum` connections; `urgent`: a
    /// player waits on its first request.
    func join(host: String, maximum: Int, maxRetryAfter: Double, urgent: Bool) -> Claim {
        state.withLock { state in
            state.nextDownload += 1
            let claim = Claim(host: host, download: state.nextDownload)
            var budget = state.budgets[host] ?? HostBudget(ceiling: HostCeiling(maxRetryAfter: maxRetryAfter))
            budget.join(claim.download, maximum: maximum, urgent: urgent)
            state.budgets[host] = budget
            return claim
        }
    }

    /// Gives the place back; a host no download uses is forgotten, its learned limit with it.
    func leave(_ claim: Claim) {
        state.withLock { state in
            state.budgets[claim.host]?.leave(claim.download)
            if state.budgets[claim.host]?.isEmpty == true { state.budgets[claim.host] = nil }
        }
    }

    /// Records what the download wants and how many of its transfers work; returns how many connections
    /// it may hold now.
    func report(_ claim: Claim, wanted: Int, working: Int) -> Int {
        let now = started.secondsAgo
        return state.withLock { state in
            state.budgets[claim.host]?.report(claim.download, wanted: wanted, working: working, now: now) ?? 0
        }
    }

    /// Opens a transfer if the download may hold one more now; it counts at once.
    func open(_ claim: Claim) -> Bool {
        let now = started.secondsAgo
        return state.withLock { state in state.budgets[claim.host]?.open(claim.download, now: now) ?? false }
    }

    /// A transfer ended; `cut` while the host was still sending it (see `HostBudget.closed`).
    func closed(_ claim: Claim, cut: Bool) {
        let now = started.secondsAgo
        state.withLock { state in state.budgets[claim.host]?.closed(claim.download, cut: cut, now: now) }
    }

    /// A request was refused: true when that is the host's connection limit (see `HostBudget.refused`).
    func refused(_ claim: Claim, working: Int, retryAfter: Double?) -> Bool {
        let now = started.secondsAgo
        return state.withLock { state in
            state.budgets[claim.host]?.refused(claim.download, working: working, retryAfter: retryAfter, now: now) ?? false
        }
    }

    func accepted(_ claim: Claim, working: Int) {
        state.withLock { state in state.budgets[claim.host]?.accepted(claim.download, working: working) }
    }

    /// What a host is to the budget: scheme, name and port, as a client's connections to it are counted.
    static func host(of url: String) -> String {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), let name = parts.host?.lowercased()
        else { return url }
        let port = parts.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(name):\(port)"
    }
}
