import VFetchCore
import VFetchEngine

extension CacheEntry {
    /// The life of one cache entry as a value: `CacheEntry` tells it what happened (a reader arrived,
    /// moved or left, the probe answered, bytes landed, the fetch ended, the cache evicts) and performs
    /// what it answers (start, steer, wake or stop the fetch; answer or wake readers; remove the files).
    ///
    /// It knows a byte space and the one fetch that fills it, not how the fetch is done, nor event
    /// loops, files or clocks: `Opener` and `Waiter` are the caller's tokens for a reader waiting for
    /// the file's facts and for a byte, handed back in the actions, and times are passed in. A segment
    /// of an HLS or DASH stream (an entry keyed by URL and byte range) runs the same machine with
    /// another fetch.
    ///
    /// Each fetch has a `version`: events of an earlier fetch change nothing, and a response started
    /// under one version ends when another starts, so two files are never spliced into one response.
    struct StateMachine<Opener, Waiter> {
        /// What the fetch does and has done.
        enum State {
            /// Nothing runs and nothing is known: a new entry.
            case idle
            /// A fetch runs and its probe has not answered: nothing is served yet, since the file
            /// may turn out to be another. `before`: the complete file this run knew, served again
            /// if the origin is out of reach.
            case probing(Fetch, before: RemoteInfo?)
            /// A fetch runs and its probe said what the file is.
            case filling(Fetch, remote: RemoteInfo, validated: ContinuousClock.Instant)
            /// Every byte is on disk; `validated` is when the origin last confirmed it.
            case complete(remote: RemoteInfo, validated: ContinuousClock.Instant)
            /// The last fetch ended short (the origin failed, or it was stopped): what it wrote is
            /// still served, and a reader at a missing byte starts another.
            case failed(remote: RemoteInfo?, written: ByteRangeSet, error: DownloadError)
            /// Evicted: its files are gone. A reader that still holds it starts afresh.
            case evicting
        }

        /// The running fetch.
        struct Fetch: Equatable {
            var version: Int
            /// The bytes it reported as on disk.
            var written = ByteRangeSet()
            /// What it fetches beyond readers' needs.
            var prefetch: ReaderDemand.Prefetch
        }

        /// What starting a fetch needs.
        struct FetchStart: Equatable {
            var version: Int
            var url: String
            /// Reach only public addresses (a web page asked).
            var publicOnly: Bool
            var prefetch: ReaderDemand.Prefetch
            /// Where each reader reads, by reader number.
            var positions: [Int: Int64]
        }

        /// The remote file's facts and the fetch version a reader is served.
        struct Opened: Equatable {
            var remote: RemoteInfo
            var version: Int
        }

        struct Settings {
            /// What a fetch gets beyond readers' needs while the cache has room.
            var prefetch: ReaderDemand.Prefetch
            /// The cache's size: a file larger than that is fetched only where readers read, since
            /// what was fetched ahead would take the room their next bytes need.
            var maxBytes: Int64
            /// A complete entry is checked against the origin again when opened after this long.
            var revalidateAfter: Duration
        }

        private var settings: Settings
        private(set) var state = State.idle
        /// The fetch whose bytes are served now (0: none yet).
        private(set) var version = 0
        /// The URL readers asked for last (a signed URL's latest signature), for the next fetch.
        private var url: String
        /// Whether the reader that asked last was a web page: the next fetch reaches only public addresses.
        private var publicOnly = false
        private(set) var allowance = Allowance.prefetch
        /// Where each reader reads, by reader number.
        private(set) var readers: [Int: Int64] = [:]
        private var nextReader = 0
        /// Bumped when a fetch starts and when a reader arrives, so a late idle check does nothing.
        private(set) var generation = 0
        private var openers: [Opener] = []
        private var waiters: [(offset: Int64, waiter: Waiter)] = []

        init(url: String, settings: Settings) {
            self.url = url
            self.settings = settings
        }

        // MARK: - Queries

        var isFetching: Bool {
            switch state {
            case .probing, .filling: true
            case .idle, .complete, .failed, .evicting: false
            }
        }

        /// Read or written now: never evicted.
        var isInUse: Bool { !readers.isEmpty || isFetching }

        /// The facts of the file being served, once a probe said them.
        var remote: RemoteInfo? {
            switch state {
            case .filling(_, let remote, _), .complete(let remote, _): remote
            case .failed(let remote, _, _): remote
            case .idle, .probing, .evicting: nil
            }
        }

        /// The bytes on disk that may be served (all of them when complete).
        var present: [Range<Int64>] {
            switch state {
            case .complete(let remote, _): [0..<(remote.length ?? 0)]
            case .probing(let fetch, _), .filling(let fetch, _, _): fetch.written.ranges
            case .failed(_, let written, _): written.ranges
            case .idle, .evicting: []
            }
        }

        var isComplete: Bool {
            if case .complete = state { true } else { false }
        }

        /// How many bytes from `offset` on are on disk without a gap.
        func presentBytes(from offset: Int64) -> Int64 {
            guard let run = present.first(where: { $0.contains(offset) }) else { return 0 }
            return run.upperBound - offset
        }

        /// Whether a reader starting at `offset` would wait for a byte the cache has no room for.
        func refuses(at offset: Int64) -> Bool {
            allowance == .nothing && !isComplete && presentBytes(from: offset) == 0
        }

        /// Whether a fetch that ended with `error` may have left a complete file from an earlier run
        /// worth serving: its probe never answered, so the file is untouched, and this run did not
        /// know it complete. The caller then reads the file's manifest for `fetchEnded`.
        func needsFileOnDisk(endingFetch version: Int, with error: DownloadError) -> Bool {
            guard case .connectFailed = error, case .probing(let fetch, nil) = state else { return false }
            return fetch.version == version
        }

        // MARK: - Readers

        enum OpenAction {
            /// Answer the reader at once.
            case answer(Opened)
            /// The reader waits for the running fetch's probe.
            case wait
            /// The reader waits for the probe of a fetch to start now.
            case startFetch(FetchStart)
        }

        /// A reader asks for the file's facts; `url` is what it asked for (the key's latest URL),
        /// `publicOnly` when a web page asked.
        mutating func open(url: String, publicOnly: Bool, opener: Opener, now: ContinuousClock.Instant) -> OpenAction {
            self.url = url
            self.publicOnly = publicOnly
            // A full cache serves what it has (and refuses the rest) rather than start a fetch.
            if let remote, allowance == .nothing { return .answer(Opened(remote: remote, version: version)) }
            switch state {
            case .filling(_, let remote, _):
                return .answer(Opened(remote: remote, version: version))
            case .complete(let remote, let validated) where now - validated < settings.revalidateAfter || !readers.isEmpty:
                // Checked against the origin again after a while, but not under readers of it.
                return .answer(Opened(remote: remote, version: version))
            case .probing:
                openers.append(opener)
                return .wait
            case .idle, .complete, .failed, .evicting:
                openers.append(opener)
                return .startFetch(startFetch())
            }
        }

        enum WaitAction {
            /// The byte is on disk.
            case ready
            /// Past the end of the file, or the cache has no room for it.
            case refuse
            /// The reader waits: the fetch (started first when `starting`) gets this offset first.
            case fetchFirst(Int64, starting: FetchStart?)
        }

        /// A reader needs the byte at `offset`.
        mutating func wait(for offset: Int64, waiter: Waiter) -> WaitAction {
            if case .complete(let remote, _) = state { return offset < remote.length ?? 0 ? .ready : .refuse }
            if presentBytes(from: offset) > 0 { return .ready }
            if allowance == .nothing { return .refuse }
            waiters.append((offset, waiter))
            return .fetchFirst(offset, starting: isFetching ? nil : startFetch())
        }

        enum ReaderAction: Equatable {
            case none
            /// Tell the fetch where the reader reads.
            case setPosition(Int64, reader: Int)
            /// Tell the fetch the reader is gone, and wake it. With `idleCheck`, call
            /// `idleCheck(generation:)` with it after a grace period (a player seeking closes one
            /// connection before it opens the next).
            case leave(reader: Int, idleCheck: Int?)
        }

        /// A reader starts at `offset`; returns its number for `readerMoved` and `readerLeft`.
        mutating func readerArrived(at offset: Int64) -> (reader: Int, action: ReaderAction) {
            nextReader += 1
            generation += 1
            readers[nextReader] = offset
            return (nextReader, isFetching ? .setPosition(offset, reader: nextReader) : .none)
        }

        /// A reader reads on (or elsewhere) from `offset`.
        mutating func readerMoved(_ reader: Int, to offset: Int64) -> ReaderAction {
            guard readers[reader] != nil else { return .none }
            readers[reader] = offset
            return isFetching ? .setPosition(offset, reader: reader) : .none
        }

        mutating func readerLeft(_ reader: Int) -> ReaderAction {
            guard readers.removeValue(forKey: reader) != nil, let fetch = runningFetch else { return .none }
            // Without full prefetch an entry nobody reads stops fetching after a grace period.
            let idle = readers.isEmpty && fetch.prefetch != .full
            return .leave(reader: reader, idleCheck: idle ? generation : nil)
        }

        enum FetchChange: Equatable {
            case none
            /// Have the fetch look at its readers now.
            case wake
            /// The fetch gets only what readers ask for from now on (and looks at them now).
            case narrow
            /// Stop the fetch (it checkpoints).
            case cancel
        }

        /// The grace period after the last reader left is over: stop the fetch if nobody came back.
        mutating func idleCheck(generation: Int) -> FetchChange {
            readers.isEmpty && generation == self.generation && isFetching ? .cancel : .none
        }

        /// Sets what the cache's size allows.
        mutating func allow(_ allowance: Allowance) -> FetchChange {
            self.allowance = allowance
            guard isFetching else { return .none }
            switch allowance {
            case .prefetch: return .wake
            case .readersOnly: return narrowFetch() ? .narrow : .wake
            case .nothing: return .cancel
            }
        }

        // MARK: - Evicting

        enum EvictAction: Equatable {
            /// Remove the entry's files.
            case removeFiles
            /// In use: it stays.
            case keep
        }

        mutating func evict() -> EvictAction {
            guard !isInUse else { return .keep }
            state = .evicting
            return .removeFiles
        }

        // MARK: - The fetch

        enum ProbeAction {
            case none
            /// Answer the readers waiting to open; with `narrow`, the fetch gets only what readers
            /// ask for (the file is larger than the cache).
            case answer([Opener], Opened, narrow: Bool)
        }

        /// The cache's size changed: fetches that ask the origin from now on go by it.
        mutating func setMaxBytes(_ bytes: Int64) { settings.maxBytes = bytes }

        /// The fetch's probe said what the file is.
        mutating func probeAnswered(_ remote: RemoteInfo, version: Int, now: ContinuousClock.Instant) -> ProbeAction {
            guard var fetch = runningFetch, fetch.version == version else { return .none }
            var narrow = false
            if let length = remote.length, length > settings.maxBytes, fetch.prefetch != .none {
                fetch.prefetch = .none
                narrow = true
            }
            state = .filling(fetch, remote: remote, validated: now)
            defer { openers.removeAll() }
            return .answer(openers, Opened(remote: remote, version: version), narrow: narrow)
        }

        enum LandedAction {
            case none
            /// Wake the readers waiting for bytes now on disk; the entry grew by `growth` bytes.
            case landed(wake: [Waiter], growth: Int64)
        }

        /// The fetch reports every byte it has on disk.
        mutating func bytesLanded(_ written: ByteRangeSet, version: Int) -> LandedAction {
            guard var fetch = runningFetch, fetch.version == version else { return .none }
            let growth = written.count - fetch.written.count
            fetch.written = written
            update(fetch)
            let ready = waiters.filter { written.contains($0.offset) }.map(\.waiter)
            waiters.removeAll { written.contains($0.offset) }
            return .landed(wake: ready, growth: growth)
        }

        enum EndAction {
            case none
            /// Wake the readers waiting for bytes (with `failure`, they fail) and answer those
            /// waiting to open.
            case ended(wake: [Waiter], failure: DownloadError?, openers: [Opener], opened: Result<Opened, DownloadError>)
        }

        /// The fetch ended: completed when `error` is nil. `fileOnDisk`: what the entry's manifest
        /// says of a complete file, read when `needsFileOnDisk` asked for it.
        mutating func fetchEnded(
            version: Int, error: DownloadError?, fileOnDisk: RemoteInfo? = nil, now: ContinuousClock.Instant
        ) -> EndAction {
            guard let fetch = runningFetch, fetch.version == version else { return .none }
            let remote = self.remote
            switch error {
            case nil:
                if let remote {
                    state = .complete(remote: remote, validated: validated ?? now)
                } else {
                    // Completed without a probe answer: nothing to serve.
                    state = .failed(remote: nil, written: fetch.written, error: .badResponse("no answer from the origin"))
                }
            case .connectFailed(let reason)?:
                // The origin was out of reach before its probe answered, so the file is untouched: a
                // complete entry stays playable offline, and is checked again a while later.
                if case .probing(_, let before) = state, let before = before ?? fileOnDisk {
                    state = .complete(remote: before, validated: now)
                } else {
                    state = .failed(remote: remote, written: fetch.written, error: .connectFailed(reason))
                }
            case let error?:
                state = .failed(remote: remote, written: fetch.written, error: error)
            }
            defer {
                openers.removeAll()
                waiters.removeAll()
            }
            let opened: Result<Opened, DownloadError>
            if let served = self.remote, isComplete || (allowance == .nothing && error == .interrupted) {
                // Stopped because the cache is full: what it has is still served, the rest refused.
                opened = .success(Opened(remote: served, version: version))
            } else {
                opened = .failure(error ?? .badResponse("no answer from the origin"))
            }
            return .ended(wake: waiters.map(\.waiter), failure: error, openers: openers, opened: opened)
        }

        // MARK: - Helpers

        private var runningFetch: Fetch? {
            switch state {
            case .probing(let fetch, _), .filling(let fetch, _, _): fetch
            case .idle, .complete, .failed, .evicting: nil
            }
        }

        private var validated: ContinuousClock.Instant? {
            if case .filling(_, _, let validated) = state { validated } else { nil }
        }

        private mutating func update(_ fetch: Fetch) {
            switch state {
            case .probing(_, let before): state = .probing(fetch, before: before)
            case .filling(_, let remote, let validated): state = .filling(fetch, remote: remote, validated: validated)
            case .idle, .complete, .failed, .evicting: break
            }
        }

        /// The running fetch gets only what readers ask for; false when it already did.
        private mutating func narrowFetch() -> Bool {
            guard var fetch = runningFetch, fetch.prefetch != .none else { return false }
            fetch.prefetch = .none
            update(fetch)
            return true
        }

        private mutating func startFetch() -> FetchStart {
            version += 1
            generation += 1
            let prefetch = allowance == .prefetch ? settings.prefetch : .none
            let before: RemoteInfo? = if case .complete(let remote, _) = state { remote } else { nil }
            state = .probing(Fetch(version: version, prefetch: prefetch), before: before)
            return FetchStart(version: version, url: url, publicOnly: publicOnly, prefetch: prefetch, positions: readers)
        }
    }
}

extension CacheEntry.StateMachine.OpenAction: Equatable where Opener: Equatable {}
extension CacheEntry.StateMachine.WaitAction: Equatable {}
extension CacheEntry.StateMachine.ProbeAction: Equatable where Opener: Equatable {}
extension CacheEntry.StateMachine.LandedAction: Equatable where Waiter: Equatable {}
extension CacheEntry.StateMachine.EndAction: Equatable where Opener: Equatable, Waiter: Equatable {}
