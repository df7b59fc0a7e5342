import CCurl
import Foundation
import VFetchCore
import VFetchStreams

/// One download of a whole file: the adapter of its planners (`SegmentScheduler`, `ConnectionController`,
/// `ProtocolTrial`) and the owner of the output file and its manifest. Its `Driver` runs the transfers
/// on the calling thread until the file is complete or the download fails.
final class Engine {
    let url: String
    let destination: Destination
    let options: DownloadOptions
    let events: AsyncStream<DownloadEvent>.Continuation
    let signal: CancelSignal
    /// The player cache's readers, when the download serves them.
    let demand: ReaderDemand?
    let driver: Driver
    let requestHeaders: HeaderList

    var scheduler: SegmentScheduler?
    var remote: RemoteFile?
    var file: OutputFile?
    var outputPath = ""
    /// What checkpoints record beside the file, and the file they write it to; nil when the download
    /// cannot be resumed (no ranges).
    var journal: ManifestJournal?
    var manifestFile: ManifestFile?
    var manifestPath: String { SideFiles(output: outputPath).manifest }
    /// When the last checkpoint began, `bytesReceived` then, and how many seconds its syncs took.
    var lastCheckpoint = (time: 0.0, bytes: Int64(0), cost: 0.0)
    /// Where checkpoints sync, off the transfers' thread.
    let checkpointSync = CheckpointSync()
    /// Bytes taken from transfers in this run, buffered or written: what a crash now would lose.
    var bytesReceived: Int64 = 0
    var resumedBytes: Int64 = 0
    /// Bytes received and dropped (see `DownloadSummary.duplicateBytes`).
    var duplicateBytes: Int64 = 0
    /// Playback: whether the container's index has been found (or there is none to fetch first); how
    /// many bytes were on disk when it was last looked for; the header asked for on the way to it.
    var indexSettled = false
    var indexCheckedAt: Int64 = -1
    var indexHeaderAskedAt: Int64?
    /// Sent with segment requests of a resumed download, so a changed file answers 200, not bytes of it.
    var segmentHeaders: HeaderList?
    /// What segments ask for: the URL redirects led to, or the original again after a signed URL expired.
    var requestURL: String { didSet { requestHost = HostConnections.host(of: requestURL) } }
    /// The host of `requestURL`, whose budget the download's segments count against.
    private(set) var requestHost: String
    /// The first request while it runs, and `--playback-order`'s request for the end of the file sent beside it.
    var probe: Transfer?
    var tail: Transfer?
    var fatal: DownloadError?
    var lastFailure: DownloadError?
    var fallbackReason: String?
    /// `--connections`, or 1 once ranges failed; the controller decides below it.
    var connectionLimit: Int
    var controller: ConnectionController?
    /// Whether new requests go as HTTP/2 streams or on HTTP/1.1 connections: only where the user left it
    /// to vfetch and the origin speaks HTTP/2.
    var protocolTrial: ProtocolTrial?
    /// The file's other sources for this run, and their samples in flight.
    var mirrors: MirrorSet?
    var samples: [ObjectIdentifier: MirrorSample] = [:]
    /// Bytes each of `mirrors`' sources wrote into the file (see `DownloadSummary.sources`).
    var sourceBytes: [Int64] = []
    /// How many connections the host's budget allowed at the last turn.
    var hostAllowance = 0
    /// The first request's failures and when it may be sent again.
    lazy var probeRetries = Retries(policy: retryPolicy)
    /// Where the probe asks the file from (`probeStart`); 0 again once an answer from there is unusable.
    var probeOffset: Int64 = 0
    /// Until when the last "waiting (Retry-After)" notice holds: one notice per wait, not one per segment.
    var retryNoticeUntil = 0.0
    var lastTick = 0.0
    var lastProgress = -1.0
    var rateSamples: [(time: Double, bytes: Int64)] = []
    var lastReaderFlush = 0.0
    /// Offsets readers wait for that are not on disk yet: written as soon as they arrive.
    var awaitedOffsets: [Int64] = []
    /// `bytesWritten` when readers were last told; -1: not yet.
    var reportedBytes: Int64 = -1
    /// How the download ended, once it has.
    private var result: Result<DownloadSummary, DownloadError>?

    init(
        url: String, destination: Destination, options: DownloadOptions,
        events: AsyncStream<DownloadEvent>.Continuation, signal: CancelSignal, demand: ReaderDemand? = nil
    ) throws(DownloadError) {
        self.url = url
        self.demand = demand
        self.destination = destination
        self.options = options
        self.events = events
        self.signal = signal
        // A player waits on the probe of a cache entry's download.
        driver = try Driver(options: options, signal: signal, urgent: demand != nil, pacesWakes: true)
        requestURL = url
        requestHost = HostConnections.host(of: url)
        connectionLimit = max(1, options.connections)
        requestHeaders = HeaderList(requestsFor: options)
    }

    /// Seconds since the download started, as of this turn of the loop.
    var now: Double { driver.now }

    var transfers: Dictionary<UnsafeMutableRawPointer, Transfer>.Values { driver.transfers.values }

    func run() -> Result<DownloadSummary, DownloadError> {
        // Another vfetch writing there is refused at once, not after a round trip (the lock itself is taken later).
        if case .file(let path) = destination {
            let part = SideFiles(output: path).part
            if OutputFile.isLocked(part) { return .failure(.busy(part)) }
        }
        probeOffset = probeStart()
        driver.run(self)
        checkpointSync.stop()
        return result ?? .failure(fatal ?? .interrupted)
    }

    func startTransfers() {
        guard fatal == nil else { return }
        guard scheduler != nil else {
            // The probe too waits for the host's budget: another download may hold all the host allows.
            if probe == nil, now >= probeRetries.notBefore {
                probe = start(url: url, bytes: .from(probeOffset), id: nil, headers: requestHeaders)
                if probe != nil, wantsTailAtOnce, tail == nil {
                    tail = start(url: url, bytes: .last(Self.playbackTail), id: nil, headers: requestHeaders)
                }
            }
            return
        }
        let limit = min(connectionLimit, controller?.limit ?? connectionLimit, hostAllowance)
        if transfers.count >= limit, let victim = scheduler?.transferToPreempt {
            scheduler?.release(victim)
            stop(victim)
        }
        // All of the turn's requests are chosen before any is sent, each then asking only up to where the
        // later ones split its segment.
        // With mirrors, each goes to the least busy trusted source with room.
        var assignments: [(assignment: SegmentScheduler.Assignment, source: Int)] = []
        var load = mirrors.map { mirrorLoad($0, limit: limit) }
        while transfers.count + assignments.count < limit {
            let source = load.map { mirrors?.sourceForSegment(running: $0.running, room: $0.room) } ?? 0
            guard let source, let assignment = scheduler?.assign(now: now) else { break }
            load?.running[source] += 1
            assignments.append((assignment, source))
        }
        for (assignment, source) in assignments where fatal == nil {
            let range = scheduler?.settledRange(of: assignment.transfer) ?? assignment.range
            // A resumed file's validators are the primary's: a mirror's differ.
            let headers = source == 0 ? segmentHeaders ?? requestHeaders : requestHeaders
            let url = segmentURL(source)
            if start(url: url, bytes: range.map(Transfer.Bytes.range), id: assignment.transfer, headers: headers) == nil {
                // Another download took the host's room first: the segment waits for the next turn.
                _ = scheduler?.transferEnded(assignment.transfer, outcome: .stopped, now: now)
            }
        }
    }

    func start(url: String, bytes: Transfer.Bytes?, id: TransferID?, headers: HeaderList) -> Transfer? {
        do {
            let http2 = protocolTrial.map { $0.current == .http2 }
            return try driver.start(url, bytes: bytes, headers: headers, http2: http2, name: id?.rawValue)
        } catch {
            fatal = fatal ?? .transferFailed("cannot start a transfer: \(error)")
            return nil
        }
    }

    /// Aborts a transfer on the scheduler's word.
    func stop(_ id: TransferID) {
        guard let transfer = transfers.first(where: { $0.transferID == id }) else { return }
        forget(transfer)
        do { try driver.stop(transfer) } catch { fatal = fatal ?? error }
        _ = scheduler?.transferEnded(id, outcome: .stopped, now: now)
    }

    /// A transfer that ended is neither the probe nor the tail any longer.
    func forget(_ transfer: Transfer) {
        if transfer === probe { probe = nil }
        if transfer === tail { tail = nil }
    }

    func stopAll() {
        probe = nil
        tail = nil
        samples = [:]
        do { try driver.stopAll() } catch { fatal = fatal ?? error }
    }

    /// Follows the controller and the host's budget: when they allow fewer connections, those not answered
    /// yet and then the newest give their segments back.
    func adjustConnections() {
        guard var controller, let scheduler else { return }
        let delivering = transfers.reduce(0) { $0 + ($1.delivering ? 1 : 0) }
        let allowance = mirrors.map(mirrorAllowance) ?? driver.allowance(for: requestURL)
        hostAllowance = allowance
        decideProtocol(scheduler)
        let limit = min(
            allowance,
            controller.update(bytesDone: scheduler.completed.count, delivering: delivering, allowed: allowance, now: now))
        if controller.oneConnectionIsFast, self.controller?.oneConnectionIsFast == false { self.scheduler?.requestWholeSegments() }
        self.controller = controller
        guard transfers.count > limit else { return }
        // The controller weighs connections for bulk throughput; `--playback-order`'s tail is not one of them.
        let bulk = transfers.filter { $0 !== tail && $0.transferID != nil }
        guard bulk.count > limit else { return }
        let transfers = bulk.compactMap { transfer in transfer.transferID.map { (id: $0, answered: transfer.accepted) } }
        for id in scheduler.transfersToStop(transfers, keeping: limit) {
            self.scheduler?.release(id)
            stop(id)
        }
    }

    /// Follows the protocol trial; says once when HTTP/1.1 won.
    func decideProtocol(_ scheduler: SegmentScheduler) {
        guard var trial = protocolTrial, let total = scheduler.total else { return }
        let before = trial.rates.http1
        _ = trial.update(bytesDone: scheduler.completed.count, remaining: total - scheduler.completed.count, now: now)
        protocolTrial = trial
        if before == nil, let http1 = trial.rates.http1, let http2 = trial.rates.http2, trial.current == .http1 {
            let rate = { (bytes: Double) in String(format: "%.1f MiB/s", bytes / 1_048_576) }
            events.yield(
                .notice(
                    "HTTP/1.1 connections are faster on this origin than HTTP/2 streams (\(rate(http1)) against \(rate(http2))): using them"
                ))
        }
    }

    /// A range request got the whole file or the wrong bytes: start over with one plain request.
    func applyFallback() {
        guard let reason = fallbackReason, let remote, scheduler?.rangeRequests == true else {
            fallbackReason = nil
            return
        }
        fallbackReason = nil
        events.yield(.notice("the server does not honour range requests (\(reason)); continuing over one connection"))
        stopAll()
        mirrors = nil
        // One plain request rewrites everything; the next run could not resume with ranges anyway.
        _ = checkpointSync.wait()
        manifestFile?.remove()
        manifestFile = nil
        journal = nil
        var configuration = scheduler!.configuration
        configuration.retry.maxRetries = options.retries
        scheduler = SegmentScheduler(total: remote.length, rangeRequests: false, configuration: configuration)
        connectionLimit = 1
    }

    // MARK: - Progress

    func reportProgress(force: Bool = false) {
        let time = now
        guard force || time - lastProgress >= 0.1, let scheduler else { return }
        lastProgress = time
        let done = scheduler.completed.count
        rateSamples.append((time, done))
        while let first = rateSamples.first, time - first.time > 2 { rateSamples.removeFirst() }
        let oldest = rateSamples[0]
        let rate = time > oldest.time ? Double(done - oldest.bytes) / (time - oldest.time) : 0
        events.yield(
            .progress(
                DownloadProgress(
                    bytesDone: done, totalBytes: scheduler.total, bytesPerSecond: max(0, rate),
                    activeConnections: transfers.count, doneRanges: file?.written.ranges ?? [], seconds: time)))
    }
}

// The driver's side of the engine: each turn's checks and starts, and everything that follows the turn's ends.
extension Engine: DriverJob {
    func turn(_ driver: Driver) -> Bool {
        if signal.isCancelled, fatal == nil { fatal = .interrupted }
        if let fatal {
            stopAll()
            // Whatever stopped us, what is durable stays usable by the next run.
            try? checkpoint(force: true)
            result = .failure(fatal)
            return false
        }
        if let scheduler, scheduler.isComplete {
            stopAll()
            if let fatal {
                result = .failure(fatal)
            } else {
                do { result = .success(try finish()) } catch { result = .failure(error) }
            }
            return false
        }
        startTransfers()
        return true
    }

    func settle(_ driver: Driver) -> Double {
        applyFallback()
        serveReaders()
        locateIndex()
        sampleMirrors()
        for id in scheduler?.takeOrphans() ?? [] { stop(id) }
        for id in scheduler?.restartPaused(now: now) ?? [] { stop(id) }
        adjustConnections()
        if now - lastTick >= 1 {
            lastTick = now
            for id in scheduler?.tick(now: now) ?? [] { stop(id) }
            scheduler?.trimToWindows()  // windows move on as their bytes arrive
        }
        reportProgress()
        do { try checkpoint() } catch { fatal = fatal ?? error }
        guard fatal == nil, scheduler?.isComplete != true, !signal.isCancelled else { return 0 }
        return min(0.1, controller?.nextDecision(after: now).map { max(0.001, $0 - now) } ?? 0.1)
    }

    /// One request before the file is known; then what the controller measured, on the host segments ask.
    func wanted(onHost host: String) -> Int {
        let mirrorHost = mirrors?.usable.contains { HostConnections.host(of: segmentURL($0)) == host } ?? false
        guard host == requestHost || mirrorHost else { return 0 }
        guard scheduler != nil, let controller else { return 1 }
        return controller.wanted
    }
}

extension Transfer {
    /// The scheduler's name for a whole file's transfer; the probe gets one only once its answer is understood.
    var transferID: TransferID? {
        get { name.map(TransferID.init) }
        set { name = newValue?.rawValue }
    }
}

@available(*, unavailable)
extension Engine: Sendable {}
