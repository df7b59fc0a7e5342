import NIOCore
import Synchronization
import VFetchCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One published file: its current bytes, validators and fault counters.
struct PublishedFile {
    var bytes: [UInt8]
    var behavior: OriginBehavior
    /// Strong ETag including the quotes, e.g. `"3f2a…"`.
    var etag: String
    /// Whole seconds since 1970, so the `Last-Modified` text compares exactly.
    var lastModifiedSeconds: Int
    var lastModified: String { HTTPDate.format(epochSeconds: lastModifiedSeconds) }
    /// Body bytes written for this file so far, for `changeAfterBytes`.
    var servedBytes = 0
    /// What `changeAfterBytes` switches to, prepared outside the lock; nil once it has fired.
    var nextBytes: [UInt8]?
    /// Requests answered so far, for `failFirst`.
    var requestCount = 0
    /// Responses cut short so far, for `dropTimes`.
    var dropsDone = 0
    /// Responses with a body being sent now (for `maxConcurrentResponses`).
    var inFlight = 0
}

/// Everything the origin knows, guarded by `OriginCore.state`.
struct OriginState {
    var files: [String: PublishedFile] = [:]
    var requests: [OriginRequest] = []
    /// The paths of the responses whose whole body went out, in that order.
    var completedResponses: [String] = []
    /// Accepted TCP connections so far; the next one gets this plus one.
    var acceptedConnections = 0
    /// Open child channels with their connection numbers, so handlers can learn their number
    /// and shutdown can close them.
    var openChannels: [ObjectIdentifier: (number: Int, channel: any Channel)] = [:]
    /// The origin-wide switches; changing the link rate starts a fresh link.
    var configuration = OriginConfiguration() {
        didSet {
            guard configuration.linkBytesPerSecond != link?.bytesPerSecond else { return }
            link = configuration.linkBytesPerSecond.map { LinkPacer(bytesPerSecond: $0, now: .now()) }
        }
    }
    /// The link every body write books its slot on (`linkBytesPerSecond`).
    var link: LinkPacer?
    /// Responses with a body being sent now per client address (for `maxResponsesPerClient`).
    var inFlightByClient: [String: Int] = [:]
    /// Body bytes written for all files so far, for `rateChange`.
    var totalServedBytes = 0
    /// Bumped for every new content, so every content gets its own ETag.
    var contentVersion: UInt64 = 0
    /// Random per origin: two origins never hand out the same ETag or signed token.
    let seed = UInt64.random(in: .min ... .max)

    /// Puts `bytes` at `path` with fresh validators; `Last-Modified` moves at least one second on.
    ///
    /// `keepCounters` keeps the fault counters and any pending change of the file being replaced;
    /// otherwise `nextBytes` becomes its pending `changeAfterBytes` content.
    mutating func store(
        _ path: String, _ bytes: [UInt8], behavior: OriginBehavior, nextBytes: [UInt8]?, now: Double,
        keepCounters: Bool
    ) {
        contentVersion += 1
        let etag = "\"" + hex(mix(seed &+ contentVersion)) + "\""
        var modified = Int(now.rounded(.down))
        if let previous = files[path] {
            modified = max(modified, previous.lastModifiedSeconds + 1)
        }
        var file = PublishedFile(
            bytes: bytes, behavior: behavior, etag: etag, lastModifiedSeconds: modified, nextBytes: nextBytes)
        file.inFlight = files[path]?.inFlight ?? 0  // responses under way go on
        if keepCounters, let previous = files[path] {
            file.servedBytes = previous.servedBytes
            file.requestCount = previous.requestCount
            file.dropsDone = previous.dropsDone
            file.nextBytes = previous.nextBytes
        }
        files[path] = file
    }

    /// A response with a body for `path` to `client` ended, whole or cut short.
    mutating func responseEnded(_ path: String, client: String) {
        files[path]?.inFlight -= 1
        inFlightByClient[client, default: 0] -= 1
    }

    /// The per-connection rate `rateChange` imposes by now, if it has fired.
    var changedRate: Int? {
        guard let change = configuration.rateChange, totalServedBytes >= change.afterBytes else { return nil }
        return change.bytesPerSecond
    }

    /// Counts `count` body bytes written for `path` and fires `changeAfterBytes` when due.
    mutating func noteServed(_ path: String, count: Int, now: Double) {
        totalServedBytes += count
        guard let file = files[path] else { return }
        files[path]?.servedBytes += count
        guard let threshold = file.behavior.changeAfterBytes, let next = file.nextBytes,
            file.servedBytes + count >= threshold
        else { return }
        store(path, next, behavior: file.behavior, nextBytes: nil, now: now, keepCounters: true)
        files[path]?.nextBytes = nil  // the change happens once
    }
}

/// The state shared by the public `TestOrigin` and every connection's handler.
final class OriginCore: Sendable {
    let state = Mutex(OriginState())

    /// Wall-clock seconds since 1970, for `Last-Modified` and signed-URL expiry.
    static func now() -> Double {
        Date().timeIntervalSince1970
    }

    /// Numbers a newly accepted connection (1-based, in accept order) and remembers it until it closes.
    ///
    /// Called by `ConnectionTracker` on the server channel, which sees connections in accept order.
    func register(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { state in
            state.acceptedConnections += 1
            state.openChannels[id] = (state.acceptedConnections, channel)
        }
        channel.closeFuture.whenComplete { [self] _ in
            _ = state.withLock { $0.openChannels.removeValue(forKey: id) }
        }
    }

    /// The number `register` gave `channel`.
    func connectionNumber(of channel: any Channel) -> Int {
        state.withLock { $0.openChannels[ObjectIdentifier(channel)]?.number ?? 0 }
    }

    /// The channels still open.
    func openChannels() -> [any Channel] {
        state.withLock { $0.openChannels.values.map(\.channel) }
    }
}

/// SplitMix64's finaliser: spreads a counter over all 64 bits.
func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// The default `changeAfterBytes` content: every byte inverted, so every offset differs.
///
/// Word by word, because a byte-wise `map` over 64 MiB takes seconds in debug builds.
func inverted(_ bytes: [UInt8]) -> [UInt8] {
    guard !bytes.isEmpty else { return [] }
    return [UInt8](unsafeUninitializedCapacity: bytes.count) { output, initialized in
        bytes.withUnsafeBytes { input in
            let words = input.count / 8
            let source = UnsafeRawPointer(input.baseAddress!)
            let target = UnsafeMutableRawPointer(output.baseAddress!)
            for word in 0..<words {
                let value = source.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self)
                target.storeBytes(of: ~value, toByteOffset: word * 8, as: UInt64.self)
            }
            for index in (words * 8)..<input.count {
                output[index] = ~input[index]
            }
        }
        initialized = bytes.count
    }
}

/// Lower-case hex, zero-padded to 16 digits.
func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}
