import Foundation
import Synchronization
import VFetchCore

/// The process's connections to each host: every download (the player cache's, the queue's, `get`'s)
/// takes a place in its host's `HostBudget`, so that downloads from one host split what it allows
/// instead of fighting over it. Engines on their own threads call in once per turn of their loops.
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
    /// One clock for every engine: a host's `Retry-After` holds whichever download reads it.
    private let started = ContinuousClock.now

    /// Takes a place for a download of `url` that opens at most `maximum` connections.
    func join(url: String, maximum: Int, maxRetryAfter: Double) -> Claim {
        let host = Self.host(of: url)
        return state.withLock { state in
            state.nextDownload += 1
            let claim = Claim(host: host, download: state.nextDownload)
            var budget = state.budgets[host] ?? HostBudget(ceiling: HostCeiling(maxRetryAfter: maxRetryAfter))
            budget.join(claim.download, maximum: maximum)
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

    /// Moves a download's place to the host of `url` (where redirects led), when that is another host.
    func move(_ claim: Claim, to url: String, maximum: Int, maxRetryAfter: Double) -> Claim {
        guard Self.host(of: url) != claim.host else { return claim }
        leave(claim)
        return join(url: url, maximum: maximum, maxRetryAfter: maxRetryAfter)
    }

    /// Records what the download holds and wants; returns how many connections it may hold now.
    func report(_ claim: Claim, wanted: Int, open: Int, working: Int) -> Int {
        let now = started.secondsAgo
        return state.withLock { state in
            state.budgets[claim.host]?.report(claim.download, wanted: wanted, open: open, working: working, now: now) ?? 0
        }
    }

    /// The download stopped transfers to hold fewer connections: `open` and `working` are left.
    func gaveBack(_ claim: Claim, open: Int, working: Int) {
        let now = started.secondsAgo
        state.withLock { state in state.budgets[claim.host]?.gaveBack(claim.download, open: open, working: working, now: now) }
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
