/// The sources of one file for one run: the primary URL (source 0, whose identity the manifest records)
/// and the mirrors given beside it (`--mirror`, a Metalink's URLs). A mirror serves segments only once it
/// has proved it serves the same file: the same length, and a sample of bytes the primary delivered
/// fetched from it and found equal. A mirror whose sample differs, or whose requests keep failing, is
/// dropped; the download goes on with the rest. Segments go to whichever trusted source is least busy, so
/// the faster ones, freed sooner, take more of the file. Pure: the engine fetches and compares.
package struct MirrorSet: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        /// Waiting for bytes of the primary to compare with.
        case unproven
        /// Its sample is being fetched.
        case proving
        /// Serves segments (the primary always does).
        case trusted
        case dropped(String)
    }

    package struct Source: Sendable, Equatable {
        package let url: String
        package fileprivate(set) var state: State
        /// Its requests that failed since one last finished.
        package fileprivate(set) var failures = 0
    }

    /// What a mirror's sample showed.
    package enum Proof: Sendable, Equatable {
        /// The same bytes as the primary's.
        case same
        /// Another length or other bytes: another file.
        case different(String)
        /// The request failed (refused, reset, 5xx): nothing learned, it counts as a failure.
        case failed(String)
    }

    /// How many bytes a sample compares: enough that another file's bytes cannot pass by chance.
    package static let sampleSize: Int64 = 64 << 10

    package private(set) var sources: [Source]
    /// Failed requests in a row after which a mirror is dropped.
    package let maxFailures: Int

    /// `mirrors` without repeats and without the primary itself.
    package init(primary: String, mirrors: [String], maxFailures: Int = 3) {
        var seen: Set<String> = [primary]
        sources = [Source(url: primary, state: .trusted)]
        for mirror in mirrors where seen.insert(mirror).inserted { sources.append(Source(url: mirror, state: .unproven)) }
        self.maxFailures = max(1, maxFailures)
    }

    /// The source `url` names; the primary for any URL that is not a mirror's (the primary's redirects).
    package func source(of url: String) -> Int { sources.indices.dropFirst().first { sources[$0].url == url } ?? 0 }

    /// Which unproven mirrors can be sampled now, and the bytes to fetch from each: the last
    /// `sampleSize` bytes (fewer for a smaller file) of the latest run the primary wrote.
    package mutating func samplesToFetch(written: ByteRangeSet, total: Int64) -> [(source: Int, range: Range<Int64>)] {
        let size = min(Self.sampleSize, total)
        guard size > 0, let run = written.ranges.last(where: { $0.count >= size }) else { return [] }
        let range = (run.upperBound - size)..<run.upperBound
        var samples: [(source: Int, range: Range<Int64>)] = []
        for index in sources.indices where sources[index].state == .unproven {
            sources[index].state = .proving
            samples.append((index, range))
        }
        return samples
    }

    /// A sample came back; returns the reason when the mirror is dropped.
    package mutating func sampled(_ source: Int, _ proof: Proof) -> String? {
        guard sources.indices.contains(source), sources[source].state == .proving else { return nil }
        switch proof {
        case .same:
            sources[source].state = .trusted
            return nil
        case .different(let reason):
            return drop(source, reason)
        case .failed(let reason):
            sources[source].state = .unproven
            return failed(source, reason)
        }
    }

    /// Where the next segment goes: the trusted source with the fewest of `running` whose host has room
    /// (`room`, per source); the primary first on a tie.
    package func sourceForSegment(running: [Int], room: [Int]) -> Int? {
        sources.indices.filter { sources[$0].state == .trusted && running[$0] < room[$0] }.min { running[$0] < running[$1] }
    }

    /// How many of `limit` segment transfers each source may hold: an even share (rounded up) for each
    /// trusted source, none for the others. A mirror just trusted takes its share from the busier ones,
    /// which give back their newest requests' ranges.
    package func shares(limit: Int) -> [Int] {
        let trusted = sources.filter { $0.state == .trusted }.count
        let share = (max(1, limit) + trusted - 1) / max(1, trusted)
        return sources.map { $0.state == .trusted ? share : 0 }
    }

    /// A mirror's segment request finished.
    package mutating func finished(_ source: Int) {
        guard sources.indices.contains(source) else { return }
        sources[source].failures = 0
    }

    /// A mirror's request failed; returns the reason when it is dropped. The primary's failures are the
    /// segments' retries' business, not this.
    package mutating func failed(_ source: Int, _ reason: String) -> String? {
        guard source > 0, sources.indices.contains(source), !isDropped(source) else { return nil }
        sources[source].failures += 1
        return sources[source].failures >= maxFailures ? drop(source, "\(reason), \(maxFailures) times") : nil
    }

    package func isDropped(_ source: Int) -> Bool {
        if case .dropped = sources[source].state { true } else { false }
    }

    /// The sources that may take segments now or soon (the primary, trusted and unproven mirrors).
    package var usable: [Int] { sources.indices.filter { !isDropped($0) } }

    /// A mirror's sample could not be sent now (no room at its host): it is asked again later.
    package mutating func postpone(_ source: Int) {
        guard sources.indices.contains(source), sources[source].state == .proving else { return }
        sources[source].state = .unproven
    }

    /// Drops a mirror at once (an answer no request of it can mend: another length, no ranges); returns
    /// the reason, or nil when it was the primary or dropped already.
    @discardableResult
    package mutating func drop(_ source: Int, _ reason: String) -> String? {
        guard source > 0, sources.indices.contains(source), !isDropped(source) else { return nil }
        sources[source].state = .dropped(reason)
        return reason
    }
}
