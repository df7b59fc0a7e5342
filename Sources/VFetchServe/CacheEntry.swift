import NIOCore
import NIOPosix
import Synchronization
import VFetchCore
import VFetchEngine

/// One remote file in the player cache, while the server runs: the download that fills it, the
/// bytes on disk, and the readers waiting for more.
///
/// A download starts with the first reader (its probe also revalidates what earlier runs cached:
/// a changed remote file is discarded) and runs until the file is complete; with `--prefetch
/// window|none` it is stopped once no reader is left. Readers are served only bytes the running
/// download reported as written, or those of an entry completed in this run. Every decision is
/// its `StateMachine`'s; this class performs what the machine answers.
final class CacheEntry: Sendable {
    let id: String
    /// A segment of a playlist serve rewrote: it has no index at its end to fetch first (`ReaderDemand.tailFirst`).
    let isSegment: Bool
    /// Where the download writes: `path.part`, with its manifest `path.vfetch`.
    let path: String
    private let options: DownloadOptions
    /// Where the entry's blocking file reads run (see `PlayerCache.disk`).
    private let disk: NIOThreadPool
    /// Called when a download ends, and with the bytes written as the file grows (the cache then
    /// checks its size).
    private let downloadEnded: @Sendable () -> Void
    private let grew: @Sendable (Int64) -> Void

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
    /// How long a download without full prefetch goes on after its last reader left: a player
    /// seeking closes one connection before it opens the next.
    static let idleGrace: Duration = .seconds(5)

    typealias Opener = EventLoopPromise<(RemoteInfo, version: Int)>
    typealias Waiter = EventLoopPromise<Void>

    /// The machine and the running download's objects, under one lock: the objects are touched only
    /// to perform the machine's answers, so they always match its state.
    private struct Locked {
        var machine: StateMachine<Opener, Waiter>
        var download: FileDownload?
        var demand: ReaderDemand?
    }

    private let state: Mutex<Locked>

    init(
        id: String, url: String, path: String, options: DownloadOptions, prefetch: ReaderDemand.Prefetch,
        isSegment: Bool = false, maxBytes: Int64, disk: NIOThreadPool, downloadEnded: @escaping @Sendable () -> Void,
        grew: @escaping @Sendable (Int64) -> Void
    ) {
        self.id = id
        self.isSegment = isSegment
        let settings = StateMachine<Opener, Waiter>.Settings(
            prefetch: prefetch, maxBytes: maxBytes, revalidateAfter: Self.revalidateAfter)
        state = Mutex(Locked(machine: StateMachine(url: url, settings: settings)))
        self.path = path
        self.options = options
        self.disk = disk
        self.downloadEnded = downloadEnded
        self.grew = grew
    }

    /// The cache's size changed (see `PlayerCache.setMaxBytes`).
    func setMaxBytes(_ bytes: Int64) { state.withLock { $0.machine.setMaxBytes(bytes) } }

    /// The remote file's facts and the download version to serve, once its download has probed it (at
    /// once when already known). `url` is what the reader asked for, the key's latest URL;
    /// `publicOnly` when a web page asked, so a download it starts reaches only public addresses.
    func open(url: String, publicOnly: Bool, on loop: any EventLoop) -> EventLoopFuture<(RemoteInfo, version: Int)> {
        let promise = loop.makePromise(of: (RemoteInfo, version: Int).self)
        let known: StateMachine<Opener, Waiter>.Opened? = state.withLock { locked in
            switch locked.machine.open(url: url, publicOnly: publicOnly, opener: promise, now: .now) {
            case .answer(let opened): return opened
            case .wait: return nil
            case .startFetch(let fetch):
                start(fetch, &locked)
                return nil
            }
        }
        if let known { promise.succeed((known.remote, known.version)) }
        return promise.futureResult
    }

    /// The download whose bytes are served now; see `StateMachine`.
    var version: Int { state.withLock { $0.machine.version } }

    /// How many bytes from `offset` on are on disk without a gap.
    func presentBytes(from offset: Int64) -> Int64 { state.withLock { $0.machine.presentBytes(from: offset) } }

    /// Succeeds once the byte at `offset` is on disk; fails when the download fails first. The byte
    /// goes to the front of the download's queue.
    func whenPresent(_ offset: Int64, on loop: any EventLoop) -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        let action = state.withLock { locked in
            let action = locked.machine.wait(for: offset, waiter: promise)
            if case .fetchFirst(let offset, let starting) = action {
                if let starting { start(starting, &locked) }
                locked.demand?.wait(at: offset)
                locked.download?.wake()
            }
            return action
        }
        switch action {
        case .ready: promise.succeed()
        case .refuse: promise.fail(DownloadError.badResponse("read past the end of the file, or the cache is full"))
        case .fetchFirst: break
        }
        return promise.futureResult
    }

    /// Whether a reader starting at `offset` would wait for a byte the cache has no room for.
    func refuses(at offset: Int64) -> Bool { state.withLock { $0.machine.refuses(at: offset) } }

    /// Sets what the cache's size allows: a running download narrows to its readers' windows, or
    /// stops (it checkpoints) when nothing more may be fetched.
    func allow(_ allowance: Allowance) {
        state.withLock { locked in perform(locked.machine.allow(allowance), &locked) }
    }

    /// Marks the entry evicted unless it is in use; true when its files may go.
    func evict() -> Bool {
        state.withLock { $0.machine.evict() } == .removeFiles
    }

    // MARK: - Readers

    /// A reader starts at `offset`; returns its number for `move` and `leave`.
    func join(at offset: Int64) -> Int {
        state.withLock { locked in
            let (reader, action) = locked.machine.readerArrived(at: offset)
            perform(action, &locked)
            return reader
        }
    }

    func move(_ reader: Int, to offset: Int64) {
        state.withLock { locked in perform(locked.machine.readerMoved(reader, to: offset), &locked) }
    }

    func leave(_ reader: Int) {
        let idleCheck: Int? = state.withLock { locked in
            let action = locked.machine.readerLeft(reader)
            perform(action, &locked)
            return if case .leave(_, let idleCheck?) = action { idleCheck } else { nil }
        }
        guard let idleCheck else { return }
        Task {
            try? await Task.sleep(for: Self.idleGrace)
            state.withLock { locked in perform(locked.machine.idleCheck(generation: idleCheck), &locked) }
        }
    }

    private func perform(_ action: StateMachine<Opener, Waiter>.ReaderAction, _ locked: inout Locked) {
        switch action {
        case .none: break
        case .setPosition(let offset, let reader):
            // The reader's window moves with it now, not at the engine's next poll (up to 100 ms later).
            locked.demand?.setPosition(offset, of: reader)
            locked.download?.wake()
        case .leave(let reader, _):
            locked.demand?.setPosition(nil, of: reader)
            locked.download?.wake()
        }
    }

    private func perform(_ change: StateMachine<Opener, Waiter>.FetchChange, _ locked: inout Locked) {
        switch change {
        case .none: break
        case .wake: locked.download?.wake()
        case .narrow:
            locked.demand?.fetchOnlyForReaders()
            locked.download?.wake()
        case .cancel: locked.download?.cancel()
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
        state.withLock { locked in
            let machine = locked.machine
            let present = machine.present
            return Status(
                readers: machine.readers.count, downloading: machine.isFetching, complete: machine.isComplete,
                bytesPresent: present.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) },
                length: machine.remote?.length, contentType: machine.remote?.contentType, present: present)
        }
    }

    /// Read or written now: never evicted.
    var isInUse: Bool { state.withLock { $0.machine.isInUse } }

    /// Stops a download started ahead of a player that went elsewhere (it checkpoints), unless
    /// someone reads the entry now or it is complete; a later read starts it again where it stopped.
    func cancelUnread() {
        state.withLock { locked in
            guard locked.machine.readers.isEmpty, !locked.machine.isComplete else { return }
            locked.download?.cancel()
        }
    }

    /// Stops the download, which checkpoints; for shutdown.
    func stop() async {
        let download = state.withLock { $0.download }
        download?.cancel()
        while state.withLock({ $0.download != nil }) { try? await Task.sleep(for: .milliseconds(20)) }
    }

    // MARK: - The download

    private func start(_ fetch: StateMachine<Opener, Waiter>.FetchStart, _ locked: inout Locked) {
        var options = options
        options.playbackOrder = true  // head and tail first, then the MP4 index
        options.overwrite = true
        options.publicAddressesOnly = options.publicAddressesOnly || fetch.publicOnly
        let version = fetch.version
        let demand = ReaderDemand(prefetch: fetch.prefetch, tailFirst: !isSegment) { [weak self] written in
            self?.landed(written, version: version)
        }
        for (reader, offset) in fetch.positions { demand.setPosition(offset, of: reader) }
        let download = FileDownload(url: fetch.url, to: .file(path), options: options, demand: demand)
        locked.download = download
        locked.demand = demand
        Task { [self] in
            let run = Task { () -> Result<DownloadSummary, DownloadError> in
                do throws(DownloadError) { return .success(try await download.run()) } catch { return .failure(error) }
            }
            // The events end when the download does, so `started` is always seen before `ended`.
            for await event in download.events {
                if case .started(let info) = event { probed(info, version: version) }
            }
            await ended(version: version, await run.value)
        }
    }

    private func probed(_ info: RemoteInfo, version: Int) {
        let action = state.withLock { locked in
            let action = locked.machine.probeAnswered(info, version: version, now: .now)
            if case .answer(_, _, narrow: true) = action { locked.demand?.fetchOnlyForReaders() }
            return action
        }
        guard case .answer(let openers, let opened, _) = action else { return }
        for promise in openers { promise.succeed((opened.remote, opened.version)) }
    }

    /// Called on the download's thread with all bytes written so far.
    private func landed(_ written: ByteRangeSet, version: Int) {
        let action = state.withLock { $0.machine.bytesLanded(written, version: version) }
        guard case .landed(let ready, let growth) = action else { return }
        for waiter in ready { waiter.succeed() }
        if growth > 0 { grew(growth) }
    }

    private func ended(version: Int, _ result: Result<DownloadSummary, DownloadError>) async {
        let error: DownloadError? = if case .failure(let error) = result { error } else { nil }
        var fileOnDisk: RemoteInfo?
        if let error, state.withLock({ $0.machine.needsFileOnDisk(endingFetch: version, with: error) }) {
            let path = path
            fileOnDisk = try? await disk.runIfActive { RemoteInfo(finishedAt: path) }
        }
        let action = state.withLock { locked in
            let action = locked.machine.fetchEnded(version: version, error: error, fileOnDisk: fileOnDisk, now: .now)
            if case .ended = action {
                locked.download = nil
                locked.demand = nil
            }
            return action
        }
        downloadEnded()
        guard case .ended(let waiters, let failure, let openers, let opened) = action else { return }
        for waiter in waiters {
            if let failure { waiter.fail(failure) } else { waiter.succeed() }
        }
        for promise in openers {
            switch opened {
            case .success(let opened): promise.succeed((opened.remote, opened.version))
            case .failure(let error): promise.fail(error)
            }
        }
    }
}
