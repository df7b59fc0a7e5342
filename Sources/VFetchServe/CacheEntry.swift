import NIOCore
import Synchronization
import VFetch
import VFetchCore

/// One remote file in the player cache, while the server runs: the download that fills it, the
/// bytes on disk, and the readers waiting for more.
///
/// A download starts with the first reader (its probe also revalidates what earlier runs cached:
/// a changed remote file is discarded) and runs until the file is complete; with `--prefetch
/// window|none` it is stopped once no reader is left. Readers are served only bytes the running
/// download reported as written, or those of an entry completed in this run. Each download has a
/// `version`: a response started under one version ends when another download starts, so two
/// files are never spliced into one response.
final class CacheEntry: Sendable {
    let id: String
    /// Where the download writes: `path.part`, with its manifest `path.vfetch`.
    let path: String
    private let options: DownloadOptions
    private let prefetch: ReaderDemand.Prefetch
    /// Called when a download ends, and with the bytes written as the file grows (the cache then
    /// checks its size).
    private let downloadEnded: @Sendable () -> Void
    private let grew: @Sendable (Int64) -> Void
    /// The cache's size: a file larger than that is fetched only where readers read, since what
    /// was fetched ahead would take the room their next bytes need.
    private let maxBytes: Int64

    /// What the cache's size lets this entry fetch (see `PlayerCache.trim`).
    enum Allowance: Sendable {
        /// As `--prefetch` says.
        case prefetch
        /// Only what readers ask for.
        case readersOnly
        /// Nothing: the cache is full.
        case nothing
    }

    /// A complete entry is checked against the origin again (one request) when read after this long.
    static let revalidateAfter: Duration = .seconds(60)

    private struct Waiter {
        var offset: Int64
        var promise: EventLoopPromise<Void>
    }

    private struct State {
        /// The URL readers asked for last: a signed URL's latest signature.
        var url: String
        /// Whether the reader that asked last was a web page: the next download connects only to
        /// public addresses.
        var publicOnly = false
        var version = 0
        var download: Download?
        var demand: ReaderDemand?
        var remote: RemoteInfo?
        var written = ByteRangeSet()
        var complete = false
        /// When the origin last confirmed this entry (its download's probe).
        var validated: ContinuousClock.Instant?
        /// A complete entry's facts while its revalidation runs: served again if the origin is out of reach.
        var completeBefore: RemoteInfo?
        var opening: [EventLoopPromise<(RemoteInfo, version: Int)>] = []
        var waiters: [Waiter] = []
        /// Where each reader reads, by reader number.
        var readers: [Int: Int64] = [:]
        var nextReader = 0
        /// Bumped when a download starts and when a reader joins, so a late idle timer does nothing.
        var generation = 0
        var allowance = Allowance.prefetch
        /// What the running download fetches beyond readers' needs.
        var downloadPrefetch = ReaderDemand.Prefetch.full
    }

    private let state: Mutex<State>

    init(
        id: String, url: String, path: String, options: DownloadOptions, prefetch: ReaderDemand.Prefetch,
        maxBytes: Int64, downloadEnded: @escaping @Sendable () -> Void, grew: @escaping @Sendable (Int64) -> Void
    ) {
        self.maxBytes = maxBytes
        self.id = id
        state = Mutex(State(url: url))
        self.path = path
        self.options = options
        self.prefetch = prefetch
        self.downloadEnded = downloadEnded
        self.grew = grew
    }

    /// The remote file's facts and the download version to serve, once its download has probed it (at
    /// once when already known). `url` is what the reader asked for, the key's latest URL;
    /// `publicOnly` when a web page asked, so a download it starts reaches only public addresses.
    func open(url: String, publicOnly: Bool, on loop: any EventLoop) -> EventLoopFuture<(RemoteInfo, version: Int)> {
        let promise = loop.makePromise(of: (RemoteInfo, version: Int).self)
        let known: (RemoteInfo, Int)? = state.withLock { state in
            state.url = url
            state.publicOnly = publicOnly
            // A complete entry is checked again after a while, but not under readers of it.
            let fresh = state.validated.map { ContinuousClock.now - $0 < Self.revalidateAfter } ?? false
            // A full cache serves what it has (and 507 for the rest) rather than start a download.
            let full = state.allowance == .nothing
            if let remote = state.remote, state.download != nil || full || (state.complete && (fresh || !state.readers.isEmpty)) {
                return (remote, state.version)
            }
            state.opening.append(promise)
            if state.download == nil { startDownload(&state) }
            return nil
        }
        if let known { promise.succeed(known) }
        return promise.futureResult
    }

    /// The download whose bytes are served now; see the type's comment.
    var version: Int { state.withLock { $0.version } }

    /// How many bytes from `offset` on are on disk without a gap.
    func presentBytes(from offset: Int64) -> Int64 {
        state.withLock { state in
            if state.complete, let length = state.remote?.length { return max(0, length - offset) }
            guard let run = state.written.ranges.first(where: { $0.contains(offset) }) else { return 0 }
            return run.upperBound - offset
        }
    }

    /// Succeeds once the byte at `offset` is on disk; fails when the download fails first. The byte
    /// goes to the front of the download's queue.
    func whenPresent(_ offset: Int64, on loop: any EventLoop) -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        let ready: Bool? = state.withLock { state in
            if state.complete { return offset < state.remote?.length ?? 0 ? true : nil }  // nil: past the end
            if state.written.contains(offset) { return true }
            if state.allowance == .nothing { return nil }
            state.waiters.append(Waiter(offset: offset, promise: promise))
            if state.download == nil { startDownload(&state) }
            state.demand?.wait(at: offset)
            state.download?.wake()
            return false
        }
        switch ready {
        case true?: promise.succeed()
        case nil: promise.fail(DownloadError.badResponse("read past the end of the file, or the cache is full"))
        case false?: break
        }
        return promise.futureResult
    }

    /// Whether a reader starting at `offset` would wait for a byte the cache has no room for.
    func refuses(at offset: Int64) -> Bool {
        state.withLock { state in
            state.allowance == .nothing && !state.complete && !state.written.contains(offset)
        }
    }

    /// Sets what the cache's size allows: a running download narrows to its readers' windows, or
    /// stops (it checkpoints) when nothing more may be fetched.
    func allow(_ allowance: Allowance) {
        let (download, stop): (Download?, Bool) = state.withLock { state in
            state.allowance = allowance
            if allowance == .readersOnly { Self.fetchOnlyForReaders(&state) }
            return (state.download, allowance == .nothing)
        }
        if stop { download?.cancel() } else { download?.wake() }
    }

    /// The running download (and the next) fetches only what readers ask for.
    private static func fetchOnlyForReaders(_ state: inout State) {
        guard state.downloadPrefetch != .none else { return }
        state.downloadPrefetch = .none
        state.demand?.fetchOnlyForReaders()
    }

    // MARK: - Readers

    /// A reader starts at `offset`; returns its number for `move` and `leave`.
    func join(at offset: Int64) -> Int {
        state.withLock { state in
            state.nextReader += 1
            state.generation += 1
            state.readers[state.nextReader] = offset
            state.demand?.setPosition(offset, of: state.nextReader)
            return state.nextReader
        }
    }

    func move(_ reader: Int, to offset: Int64) {
        state.withLock { state in
            state.readers[reader] = offset
            state.demand?.setPosition(offset, of: reader)
        }
    }

    func leave(_ reader: Int) {
        let idle: (Download, Int)? = state.withLock { state in
            state.readers[reader] = nil
            state.demand?.setPosition(nil, of: reader)
            state.download?.wake()
            guard state.readers.isEmpty, state.downloadPrefetch != .full, let download = state.download else { return nil }
            return (download, state.generation)
        }
        // Without full prefetch an entry nobody reads stops downloading after a grace period (a
        // player seeking closes one connection before it opens the next).
        guard let (download, generation) = idle else { return }
        Task {
            try? await Task.sleep(for: .seconds(5))
            let stillIdle = state.withLock { $0.readers.isEmpty && $0.generation == generation }
            if stillIdle { download.cancel() }
        }
    }

    // MARK: - Status

    struct Status: Sendable {
        var readers: Int
        var downloading: Bool
        var complete: Bool
        var bytesPresent: Int64
        var length: Int64?
        var contentType: String?
        var present: [Range<Int64>]
    }

    var status: Status {
        state.withLock { state in
            let present = state.complete ? [0..<(state.remote?.length ?? 0)] : state.written.ranges
            return Status(
                readers: state.readers.count, downloading: state.download != nil, complete: state.complete,
                bytesPresent: present.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) },
                length: state.remote?.length, contentType: state.remote?.contentType, present: present)
        }
    }

    /// Read or written now: never evicted.
    var isInUse: Bool { state.withLock { !$0.readers.isEmpty || $0.download != nil } }

    /// Stops the download, which checkpoints; for shutdown.
    func stop() async {
        let download = state.withLock { $0.download }
        download?.cancel()
        while state.withLock({ $0.download != nil }) { try? await Task.sleep(for: .milliseconds(20)) }
    }

    // MARK: - The download

    private func startDownload(_ state: inout State) {
        var options = options
        options.stream = true  // head and tail first, then the MP4 index
        options.overwrite = true
        options.publicAddressesOnly = options.publicAddressesOnly || state.publicOnly
        let version = state.version + 1
        state.downloadPrefetch = state.allowance == .prefetch ? prefetch : .none
        let demand = ReaderDemand(prefetch: state.downloadPrefetch) { [weak self] written in
            self?.wrote(written, version: version)
        }
        for (reader, offset) in state.readers { demand.setPosition(offset, of: reader) }
        let download = Download(url: state.url, to: .file(path), options: options, demand: demand)
        state.generation += 1
        state.version = version
        state.download = download
        state.demand = demand
        // Complete as this run knows it, or as an earlier run left it on disk.
        state.completeBefore = state.complete ? state.remote : RemoteInfo(finishedAt: path)
        // Until this download's probe answers, nothing is known: its file may turn out to be another.
        state.remote = nil
        state.complete = false
        state.written = ByteRangeSet()
        Task { [self] in
            let run = Task { () -> Result<DownloadSummary, DownloadError> in
                do throws(DownloadError) { return .success(try await download.run()) } catch { return .failure(error) }
            }
            // The events end when the download does, so `started` is always seen before `ended`.
            for await event in download.events {
                if case .started(let info) = event { started(info, version: version) }
            }
            ended(download, await run.value)
        }
    }

    private func started(_ info: RemoteInfo, version: Int) {
        let opening = state.withLock { state in
            guard state.version == version else { return [EventLoopPromise<(RemoteInfo, version: Int)>]() }
            state.remote = info
            state.validated = .now
            if let length = info.length, length > maxBytes { Self.fetchOnlyForReaders(&state) }
            defer { state.opening.removeAll() }
            return state.opening
        }
        for promise in opening { promise.succeed((info, version)) }
    }

    /// Called on the download's thread with all bytes written so far.
    private func wrote(_ written: ByteRangeSet, version: Int) {
        let (ready, growth) = state.withLock { state in
            guard state.version == version else { return ([Waiter](), Int64(0)) }
            let growth = written.count - state.written.count
            state.written = written
            let ready = state.waiters.filter { written.contains($0.offset) }
            state.waiters.removeAll { written.contains($0.offset) }
            return (ready, growth)
        }
        for waiter in ready { waiter.promise.succeed() }
        if growth > 0 { grew(growth) }
    }

    private func ended(_ download: Download, _ result: Result<DownloadSummary, DownloadError>) {
        let (opening, waiters) = state.withLock { state in
            guard state.download === download else { return ([EventLoopPromise<(RemoteInfo, version: Int)>](), [Waiter]()) }
            state.download = nil
            state.demand = nil
            if case .success = result { state.complete = true }
            // The origin was out of reach before its probe answered, so the file is untouched: a
            // complete entry stays playable offline, and is checked again a minute later.
            if case .failure(.connectFailed) = result, state.remote == nil, let before = state.completeBefore {
                state.remote = before
                state.complete = true
                state.validated = .now
            }
            state.completeBefore = nil
            defer {
                state.opening.removeAll()
                state.waiters.removeAll()
            }
            return (state.opening, state.waiters)
        }
        downloadEnded()
        switch result {
        case .success:
            for waiter in waiters { waiter.promise.succeed() }
            // A download that completed without a probe answer (empty file) still opens.
            if let (remote, version) = state.withLock({ state in state.remote.map { ($0, state.version) } }) {
                for promise in opening { promise.succeed((remote, version)) }
            } else {
                for promise in opening { promise.fail(DownloadError.badResponse("no answer from the origin")) }
            }
        case .failure(let error):
            for waiter in waiters { waiter.promise.fail(error) }
            // Stopped because the cache is full: what it has is still served, the rest refused.
            let servable = { (state: State) in state.complete || (state.allowance == .nothing && error == .interrupted) }
            if let (remote, version) = state.withLock({ state in servable(state) ? state.remote.map { ($0, state.version) } : nil }) {
                for promise in opening { promise.succeed((remote, version)) }
            } else {
                for promise in opening { promise.fail(error) }
            }
        }
    }
}
