import Foundation
import VFetchCore

/// What a player cache entry holds, as `vfetch cache ls` says it.
package enum CacheEntryState: Sendable, Equatable, CustomStringConvertible {
    /// Every byte of the file is saved.
    case complete
    /// Some bytes are saved: `fraction` of the file, above 0 and below 1.
    case partial(fraction: Double)
    /// Nothing is saved, or the length is not known yet (no manifest, or a length of 0).
    case empty
    /// The entry cannot be served, and why (an unreadable manifest).
    case failed(String)

    /// The state of an entry whose manifest records `bytesCached` of `length` (nil: no manifest),
    /// or that failed for `failure`.
    package init(length: Int64?, bytesCached: Int64, failure: String? = nil) {
        if let failure {
            self = .failed(failure)
        } else if let length, length > 0, bytesCached > 0 {
            self = bytesCached >= length ? .complete : .partial(fraction: Double(bytesCached) / Double(length))
        } else {
            self = .empty
        }
    }

    /// One word for `--json`: `complete`, `partial`, `empty` or `failed`.
    package var name: String {
        switch self {
        case .complete: "complete"
        case .partial: "partial"
        case .empty: "empty"
        case .failed: "failed"
        }
    }

    /// `complete`, `partial 41.3%` (rounded down: never `100.0%` before the last byte), `empty`,
    /// `failed: REASON`.
    package var description: String {
        switch self {
        case .complete: "complete"
        case .partial(let fraction): String(format: "partial %.1f%%", (fraction * 1000).rounded(.down) / 10)
        case .empty: "empty"
        case .failed(let reason): "failed: \(reason)"
        }
    }
}
