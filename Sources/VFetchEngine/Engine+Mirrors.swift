import VFetchCore

/// A mirror's sample in flight: whose, which bytes, and those that arrived (kept in memory, never in the file).
final class MirrorSample: ByteSink {
    let source: Int
    let range: Range<Int64>
    private(set) var bytes: [UInt8] = []

    init(source: Int, range: Range<Int64>) {
        self.source = source
        self.range = range
    }

    func write(_ chunk: UnsafeRawBufferPointer, at offset: Int64) {
        bytes.append(contentsOf: chunk.prefix(max(0, Int(range.count) - bytes.count)))
    }

    func flush() {}
}

// The engine's side of `MirrorSet`: it sends the samples and the segments the set chooses, compares,
// and tells the set how each request ended.
extension Engine {
    /// Uses the mirrors once the primary's answer says the file: one of known length, served in ranges.
    func startMirrors(for remote: RemoteFile) {
        guard !options.mirrors.isEmpty else { return }
        guard remote.acceptsRanges, remote.length != nil else {
            events.yield(.notice("mirrors unused: the server does not serve ranges of a known length"))
            return
        }
        let set = MirrorSet(primary: url, mirrors: options.mirrors, maxFailures: max(2, min(options.retries, 3)))
        mirrors = set
        sourceBytes = Array(repeating: 0, count: set.sources.count)
    }

    /// What each source gave this run, for the summary (nothing without mirrors); all the primary's when the
    /// mirrors went unused (no ranges) or were given up (ranges not honoured: one plain request rewrote the file).
    func bytesBySource(fetched: Int64) -> [SourceBytes] {
        guard !options.mirrors.isEmpty else { return [] }
        guard let mirrors else {
            let urls = MirrorSet(primary: url, mirrors: options.mirrors).sources.map(\.url)
            return urls.enumerated().map { SourceBytes(url: $0.element, bytes: $0.offset == 0 ? fetched : 0) }
        }
        return zip(mirrors.sources, sourceBytes).map { SourceBytes(url: $0.url, bytes: $1) }
    }

    /// Which source a transfer asks; nil without mirrors.
    func source(of transfer: Transfer) -> Int? { mirrors?.source(of: transfer.url) }

    /// The URL segments of `source` ask for: the primary's after its redirects, a mirror's as given.
    func segmentURL(_ source: Int) -> String { source == 0 ? requestURL : mirrors?.sources[source].url ?? requestURL }

    /// Sends the samples the set asks for, of bytes the primary wrote.
    func sampleMirrors() {
        guard var set = mirrors, let file, let total = remote?.length else { return }
        let wanted = set.samplesToFetch(written: file.written, total: total)
        mirrors = set
        for (source, range) in wanted {
            guard let transfer = start(url: set.sources[source].url, bytes: .range(range), id: nil, headers: requestHeaders) else {
                mirrors?.postpone(source)
                continue
            }
            samples[ObjectIdentifier(transfer)] = MirrorSample(source: source, range: range)
        }
    }

    /// Judges a mirror's answer (a sample's or a segment's): the bytes asked of a file of the primary's length.
    func mirrorAnswered(_ transfer: Transfer, sink: any ByteSink) -> Bool {
        switch ResponseVerdict.check(transfer.head, asked: transfer.asked) {
        case .part(_, let total) where total == remote?.length:
            transfer.sink = sink
            return true
        case .part(_, let total):
            transfer.cut = .refused(.invalid("\(total.map(String.init) ?? "no") length instead of \(remote?.length ?? 0)"))
        case .retry(let status, let after):
            transfer.cut = .refused(.status(status, retryAfter: after))
        case .whole: transfer.cut = .refused(.invalid("no ranges"))
        case .wrongRange(let reason), .remoteChanged(let reason): transfer.cut = .refused(.invalid(reason))
        case .expired(let status), .fail(let status): transfer.cut = .refused(.status(status, retryAfter: nil))
        case .notModified: transfer.cut = .refused(.status(304, retryAfter: nil))
        }
        return false
    }

    /// A sample ended: the mirror is trusted when its bytes are the primary's, dropped when they are not.
    func sampleEnded(_ sample: MirrorSample, _ end: TransferEnd) {
        let proof: MirrorSet.Proof
        switch end {
        case .finished:
            guard sample.bytes.count == sample.range.count,
                let ours = file?.bytes(at: sample.range.lowerBound, count: sample.bytes.count)
            else {
                proof = .failed("a short sample")
                break
            }
            if let at = ours.indices.first(where: { ours[$0] != sample.bytes[$0] }) {
                proof = .different("other bytes than the primary's at offset \(sample.range.lowerBound + Int64(at))")
            } else {
                proof = .same
            }
        case .failed(.invalid(let reason)): proof = .different(reason)
        case .failed(let failure): proof = .failed(Self.describe(failure))
        case .stopped, .hostLimit, .unwritable:
            mirrors?.postpone(sample.source)
            return
        }
        if let reason = mirrors?.sampled(sample.source, proof) { dropped(sample.source, reason) }
    }

    /// A mirror's segment request ended: the set counts its failures. Returns what the scheduler hears:
    /// a failed range goes back to be fetched from the others, counting no failure of its own.
    func mirrorSegmentEnded(_ source: Int, _ end: TransferEnd) -> TransferEnd {
        switch end {
        case .finished: mirrors?.finished(source)
        case .failed(.invalid(let reason)):
            if let reason = mirrors?.drop(source, reason) { dropped(source, reason) }
            return .stopped
        case .failed(let failure):
            if let reason = mirrors?.failed(source, Self.describe(failure)) { dropped(source, reason) }
            return .stopped
        case .stopped, .hostLimit, .unwritable: break
        }
        return end
    }

    /// Says so, and gives the dropped mirror's running segments back to the others.
    func dropped(_ source: Int, _ reason: String) {
        guard let url = mirrors?.sources[source].url else { return }
        events.yield(.notice("mirror \(redactedURL(url)) dropped: \(reason); going on without it"))
        for transfer in Array(transfers) where self.source(of: transfer) == source {
            if let id = transfer.transferID {
                scheduler?.release(id)
                stop(id)
            }
        }
    }

    /// How many segment transfers each source runs, and how many it may: its share of `limit`, within what
    /// its host allows now. A source over its share (a mirror was just trusted) stops its newest ones.
    func mirrorLoad(_ set: MirrorSet, limit: Int) -> (running: [Int], room: [Int]) {
        var bySource = [[(id: TransferID, answered: Bool)]](repeating: [], count: set.sources.count)
        for transfer in transfers where transfer !== tail {
            guard let id = transfer.transferID else { continue }
            bySource[set.source(of: transfer.url)].append((id, transfer.accepted))
        }
        let shares = set.shares(limit: limit)
        for (source, running) in bySource.enumerated() where running.count > shares[source] {
            for id in scheduler?.transfersToStop(running, keeping: shares[source], sparingNearlySent: false) ?? [] {
                scheduler?.release(id)
                stop(id)
                bySource[source].removeAll { $0.id == id }
            }
        }
        let room = set.sources.indices.map { shares[$0] == 0 ? 0 : min(shares[$0], driver.allowance(for: segmentURL($0))) }
        return (bySource.map(\.count), room)
    }

    /// What the hosts of the trusted sources allow together (each host once).
    func mirrorAllowance(_ set: MirrorSet) -> Int {
        var hosts: [String: Int] = [:]
        for source in set.sources.indices where set.sources[source].state == .trusted {
            let url = segmentURL(source)
            hosts[HostConnections.host(of: url)] = driver.allowance(for: url)
        }
        return hosts.values.reduce(0, +)
    }

    private static func describe(_ failure: RequestFailure) -> String {
        switch failure {
        case .status(let status, _): "HTTP \(status)"
        case .transfer(_, let message): message
        case .invalid(let reason): reason
        }
    }
}
