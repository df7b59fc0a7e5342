import CCurl
import Foundation
import VFetchCore
import VFetchStreams

/// Runs one download on the calling thread: owns the libcurl multi handle, the transfers, the scheduler
/// and the output file, and loops on `curl_multi_poll` until the file is complete or the download fails.
///
/// Data goes from libcurl's write callback straight to its offset in the side file.
final class Engine {
    let url: String
    let destination: Destination
    let options: DownloadOptions
    let events: AsyncStream<DownloadEvent>.Continuation
    let signal: CancelSignal
    /// The player cache's readers, when the download serves them.
    let demand: ReaderDemand?
    let multi: MultiHandle
    let share: ShareHandle
    let requestHeaders: HeaderList
    let started = ContinuousClock.now

    var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    var scheduler: SegmentScheduler?
    var remote: RemoteFile?
    var file: OutputFile?
    var outputPath = ""
    /// What checkpoints record beside the file, and the file they write it to; nil when the download
    /// cannot be resumed (no ranges).
    var journal: ManifestJournal?
    var manifestFile: ManifestFile?
    var manifestPath: String { SideFiles(output: outputPath).manifest }
    /// When the last checkpoint began, `bytesReceived` then, and how many seconds it took.
    var lastCheckpoint = (time: 0.0, bytes: Int64(0), cost: 0.0)
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
    var requestURL: String
    var fatal: DownloadError?
    var lastFailure: DownloadError?
    var fallbackReason: String?
    /// `--connections`, or 1 once ranges failed; the controller decides below it.
    var connectionLimit: Int
    var controller: ConnectionController?
    /// Whether new requests go as HTTP/2 streams or on HTTP/1.1 connections: only where the user left it
    /// to vfetch and the origin speaks HTTP/2.
    var protocolTrial: ProtocolTrial?
    /// This download's place in its host's connection budget, shared with the process's other downloads
    /// from that host; and how many connections the budget allowed at the last turn.
    var hostClaim: HostConnections.Claim?
    var hostAllowance = 0
    /// The first request's failures and when it may be sent again.
    lazy var probeRetries = ProbeRetries(policy: retryPolicy)
    /// Where the probe asks the file from (`probeStart`); 0 again once an answer from there is unusable.
    var probeOffset: Int64 = 0
    /// Until when the last "waiting (Retry-After)" notice holds: one notice per wait, not one per segment.
    var retryNoticeUntil = 0.0
    var connectionsOpened = 0
    var peakConnections = 0
    var lastTick = 0.0
    var lastProgress = -1.0
    var rateSamples: [(time: Double, bytes: Int64)] = []
    /// `--max-speed`, over all transfers together.
    var speedLimit: SpeedLimit?
    var lastReaderFlush = 0.0
    /// Offsets readers wait for that are not on disk yet: written as soon as they arrive.
    var awaitedOffsets: [Int64] = []
    /// `bytesWritten` when readers were last told; -1: not yet.
    var reportedBytes: Int64 = -1

    init(
        url: String, destination: Destination, options: DownloadOptions,
        events: AsyncStream<DownloadEvent>.Continuation, signal: CancelSignal, demand: ReaderDemand? = nil
    ) throws {
        self.url = url
        self.demand = demand
        self.destination = destination
        self.options = options
        self.events = events
        self.signal = signal
        multi = try MultiHandle()
        share = try ShareHandle()
        requestURL = url
        connectionLimit = max(1, options.connections)
        requestHeaders = HeaderList(requestsFor: options)
        speedLimit = options.maxBytesPerSecond.map(SpeedLimit.init(bytesPerSecond:))
    }

    /// Seconds since the engine started, read once per turn of the loop: the callbacks of one
    /// `multi.perform()` (thousands of chunks a second) share it.
    private(set) var now = 0.0

    func readClock() { now = started.secondsAgo }

    // MARK: - The loop

    func run() -> Result<DownloadSummary, DownloadError> {
        // Another vfetch writing there is refused at once, not after a round trip (the lock itself is taken later).
        if case .file(let path) = destination {
            let part = SideFiles(output: path).part
            if OutputFile.isLocked(part) { return .failure(.busy(part)) }
        }
        probeOffset = probeStart()
        signal.attach(multi.raw)
        hostClaim = HostConnections.shared.join(url: url, maximum: connectionLimit, maxRetryAfter: options.maxRetryWait)
        defer {
            signal.detach()
            removeAllTransfers()
            if let hostClaim { HostConnections.shared.leave(hostClaim) }
        }
        while true {
            readClock()
            if signal.isCancelled, fatal == nil { fatal = .interrupted }
            if let fatal {
                removeAllTransfers()
                // Whatever stopped us, what is durable stays usable by the next run.
                try? checkpoint(force: true)
                return .failure(fatal)
            }
            if let scheduler, scheduler.isComplete {
                removeAllTransfers()
                if let fatal { return .failure(fatal) }
                do { return .success(try finish()) } catch { return .failure(error) }
            }
            startTransfers()
            resumePausedTransfers()
            multi.perform()
            for (easy, result) in multi.completed() { transferDone(easy, result: result) }
            applyFallback()
            serveReaders()
            locateIndex()
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
            if fatal == nil, scheduler?.isComplete != true, !signal.isCancelled {
                multi.poll(timeoutMilliseconds: pollTimeout)
            }
        }
    }

    func startTransfers() {
        guard fatal == nil else { return }
        guard scheduler != nil else {
            // The probe too waits for the host's budget: another download may hold all the host allows.
            if !transfers.values.contains(where: \.isProbe), now >= probeRetries.notBefore, reportToHost(wanted: 1) >= 1 {
                start(url: url, range: nil, id: nil, isProbe: true)
                if wantsTailAtOnce, !transfers.values.contains(where: \.isTail) { startTail() }
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
        var assignments: [SegmentScheduler.Assignment] = []
        while transfers.count + assignments.count < limit, let assignment = scheduler?.assign(now: now) {
            assignments.append(assignment)
        }
        for assignment in assignments where fatal == nil {
            let range = scheduler?.settledRange(of: assignment.transfer) ?? assignment.range
            start(url: requestURL, range: range, id: assignment.transfer, isProbe: false)
        }
    }

    func start(url: String, range: Range<Int64>?, id: TransferID?, isProbe: Bool, isTail: Bool = false) {
        do {
            let transfer = try Transfer(id: id, url: url, range: range, isProbe: isProbe, engine: self)
            transfer.isTail = isTail
            try configure(transfer)
            try multi.add(transfer.easy)
            transfers[transfer.easy.raw] = transfer
            peakConnections = max(peakConnections, transfers.count)
        } catch {
            fatal = .transferFailed("cannot start a transfer: \(error)")
        }
    }

    func configure(_ transfer: Transfer) throws {
        let easy = transfer.easy
        let headers = transfer.isProbe ? requestHeaders : segmentHeaders ?? requestHeaders
        try easy.configure(url: transfer.url, options: options, headers: headers)
        try easy.set(CURLOPT_BUFFERSIZE, receiveBufferSize)
        try easy.set(CURLOPT_SHARE, pointer: share.raw)
        if let protocolTrial { try easy.useHTTP2(protocolTrial.current == .http2, url: transfer.url) }
        // The probe asks for `0-` (or from the first byte not saved) so its 206 tells range support and
        // length, and its body is kept.
        if transfer.isProbe {
            try easy.set(CURLOPT_RANGE, "\(probeOffset)-")
        } else if transfer.isTail {
            try easy.set(CURLOPT_RANGE, "-\(Self.playbackTail)")
        } else if let range = transfer.range {
            try easy.set(CURLOPT_RANGE, range.describedAsHTTP)
        }
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        try easy.setWriteCallback(transferWriteCallback, userdata: userdata)
        try easy.setHeaderCallback(transferHeaderCallback, userdata: userdata)
    }

    // MARK: - Callbacks (called from inside `multi.perform()`)

    /// Judges a final response before any of its body is written. Returns false to abort the transfer.
    func responseArrived(_ transfer: Transfer) -> Bool {
        if transfer.isProbe { return probeAnswered(transfer) }
        if transfer.isTail { return tailAnswered(transfer) }
        guard let remote else { return false }
        switch ResponseVerdict.check(transfer.head, asked: transfer.range, remote: remote) {
        case .part,
            .whole where (transfer.range?.lowerBound ?? 0) == 0:
            transfer.accepted = true
            if let hostClaim { HostConnections.shared.accepted(hostClaim, working: answeredTransfers) }
            return true
        case .whole:
            fallbackReason = fallbackReason ?? "200 with the whole file to a ranged request"
            transfer.abort = .stopped
        case .wrongRange(let reason):
            fallbackReason = fallbackReason ?? reason
            transfer.abort = .stopped
        case .remoteChanged(let reason):
            fail(.remoteChanged(reason), transfer)
        case .retry(let status, let after):
            transfer.abort = .retry(status: status, after: after)
        case .expired(let status):
            transfer.abort = .expired(status: status)
        case .fail(let status):
            fail(.httpStatus(status, url: transfer.url), transfer)
        case .notModified:
            fail(.httpStatus(304, url: transfer.url), transfer)
        }
        return false
    }

    func probeAnswered(_ transfer: Transfer) -> Bool {
        guard let found = RemoteFile(probe: transfer.head, from: probeOffset) else {
            if probeOffset > 0, transfer.head.status == 206 || transfer.head.status == 416 {
                // Not the bytes from there (the file may be shorter now): ask again from the start.
                probeOffset = 0
                transfer.abort = .stopped
                return false
            }
            switch ResponseVerdict.forStatus(transfer.head) {
            case .retry(let status, let after): transfer.abort = .retry(status: status, after: after)
            case .expired(let status), .fail(let status): fail(.httpStatus(status, url: transfer.url), transfer)
            default: fail(.badResponse("no usable Content-Range in the answer to a range request"), transfer)
            }
            return false
        }
        if options.detectsStreams,
            StreamFormat.detect(contentType: found.contentType, path: URL(string: url)?.path ?? "", firstBytes: []) != nil
        {
            // A playlist, not the video: `StreamDownload` fetches what it lists.
            fail(.segmentedStream(url), transfer)
            return false
        }
        if found.isWebPage(forMediaPath: url) {
            fail(.badResponse("the server sent a web page (text/html), not the file"), transfer)
            return false
        }
        remote = found
        requestURL = transfer.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? url
        let resumed: ByteRangeSet
        do {
            resumed = try openOutput(for: found)
        } catch {
            fail(error, transfer)
            return false
        }
        var configuration = SegmentScheduler.Configuration()
        configuration.minSplitSize = SegmentScheduler.Configuration.minSplitSize(
            length: found.length, connections: connectionLimit, asked: options.minSplitSize)
        configuration.retry = retryPolicy
        configuration.learnsBursts = options.maxBytesPerSecond == nil
        scheduler = SegmentScheduler(
            total: found.length, rangeRequests: found.acceptsRanges, completed: resumed, configuration: configuration)
        controller = ConnectionController(.init(maximum: connectionLimit), now: now, bytesDone: resumed.count)
        if options.httpVersion == .automatic, transfer.easy.info(CURLINFO_HTTP_VERSION) == Int(CURL_HTTP_VERSION_2_0) {
            protocolTrial = ProtocolTrial(now: now)
        }
        if let hostClaim {
            self.hostClaim = HostConnections.shared.move(
                hostClaim, to: requestURL, maximum: connectionLimit, maxRetryAfter: options.maxRetryWait)
        }
        transfer.accepted = true
        if options.stream, found.acceptsRanges, let length = found.length { planPlayback(length: length) }
        events.yield(
            .started(
                RemoteInfo(
                    url: url, finalURL: requestURL, length: found.length, acceptsRanges: found.acceptsRanges,
                    etag: found.etag, lastModified: found.lastModified, contentType: found.contentType,
                    outputPath: outputPath, resumedBytes: resumedBytes)))
        if resumedBytes > 0, let length = found.length {
            let percent = Double(resumedBytes) * 100 / Double(max(1, length))
            events.yield(.notice("resuming: \(resumedBytes) of \(length) bytes (\(String(format: "%.1f", percent))%) already saved"))
        }
        if !found.acceptsRanges {
            let why = found.length == nil ? "the server does not say the length" : "the server does not support byte ranges"
            events.yield(.notice("\(why); downloading over one connection"))
        }
        // A 200's body starts at 0 whatever was asked.
        let bodyStart = transfer.head.status == 206 ? probeOffset : 0
        transfer.id = scheduler?.adopt(at: bodyStart, requestedUpTo: found.length, now: now)
        for tail in transfers.values where tail.waitsForProbe {
            tail.waitsForProbe = false
            _ = bindTail(tail)
        }
        scheduler?.trimToWindows()
        if transfer.id == nil { transfer.abort = .stopped }  // its bytes are saved already (or the file is empty)
        return transfer.id != nil
    }

    /// Writes what the scheduler says of a chunk. Returns false to abort the transfer.
    func receive(_ bytes: UnsafeRawBufferPointer, from transfer: Transfer) -> Bool {
        guard fatal == nil, let id = transfer.id, let file,
            let receipt = scheduler?.receive(id, count: Int64(bytes.count), now: now)
        else {
            transfer.abort = transfer.abort ?? .stopped
            return false
        }
        duplicateBytes += Int64(bytes.count - (receipt.write?.count ?? 0))
        if let write = receipt.write {
            bytesReceived += Int64(write.count)
            let start = Int(receipt.skip)
            do {
                try transfer.pending.append(
                    UnsafeRawBufferPointer(rebasing: bytes[start..<(start + write.count)]), at: write.lowerBound, to: file)
            } catch {
                fail(error, transfer)
                return false
            }
        }
        transfer.delivering = true
        if receipt.stop { transfer.abort = .stopped }
        return !receipt.stop
    }

    func fail(_ error: DownloadError, _ transfer: Transfer) {
        fatal = fatal ?? error
        transfer.abort = .fatal
    }

    // MARK: - Transfers ending

    func transferDone(_ easy: UnsafeMutableRawPointer, result: CURLcode) {
        guard let transfer = transfers[easy] else { return }
        retire(transfer)
        guard let outcome = outcome(of: transfer, result: result) else { return }
        if let id = transfer.id {
            if scheduler?.transferEnded(id, outcome: outcome, now: now) == false {
                fatal = fatal ?? scheduler?.refusedRetryAfter.map(waitRefused) ?? lastFailure ?? .transferFailed("retries exhausted")
            } else if case .failed(let after?) = outcome {
                noteWait(after)
            }
        } else if transfer.isTail {
            // It never got its segment: the tail comes the usual way.
            if let length = remote?.length, remote?.acceptsRanges == true { fetchTail(length: length) }
        } else if case .failed(let after) = outcome {
            // The probe failed before the file was known: try it again, or give up.
            switch probeRetries.failed(retryAfter: after, now: now, jitter: Double.random(in: 0..<1)) {
            case .retry:
                if let after { noteWait(after) }
            case .exhausted:
                fatal = fatal ?? lastFailure ?? .transferFailed("retries exhausted")
            case .waitTooLong(let after):
                fatal = fatal ?? waitRefused(after)
            }
        }
    }

    /// How failed requests are retried: `--retries`, and `Retry-After` up to `--max-retry-wait`.
    var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: options.retries, maxRetryAfter: options.maxRetryWait) }

    /// The error for an origin whose `Retry-After` asks for more than `--max-retry-wait`, naming its status.
    func waitRefused(_ seconds: Double) -> DownloadError {
        // The refused response set `lastFailure` just before.
        guard case .httpStatus(let status, let url)? = lastFailure else {
            return .transferFailed("Retry-After: \(DownloadError.seconds(seconds)) s is longer than vfetch waits (--max-retry-wait)")
        }
        return .retryAfterTooLong(status, url: url, seconds: seconds, limit: options.maxRetryWait)
    }

    /// Says once per wait that the origin's `Retry-After` holds the download, when it is long enough to notice.
    func noteWait(_ seconds: Double) {
        guard seconds >= 1, now >= retryNoticeUntil else { return }
        retryNoticeUntil = now + seconds
        events.yield(.notice("waiting \(DownloadError.seconds(seconds.rounded(.up))) s (Retry-After)"))
    }

    /// What a finished transfer means for its segment; nil when the download cannot go on.
    func outcome(of transfer: Transfer, result: CURLcode) -> SegmentScheduler.Outcome? {
        if result == CURLE_OK, transfer.abort == nil { return .finished }
        switch transfer.abort {
        case .stopped:
            return .stopped
        case .fatal:
            return nil
        case .retry(let status, let after):
            lastFailure = .httpStatus(status, url: transfer.url)
            if status == 429 || status == 503, refusedForConcurrency(retryAfter: after) { return .stopped }
            return .failed(retryAfter: after)
        case .expired(let status):
            guard transfer.url != url else {
                fatal = fatal ?? .httpStatus(status, url: transfer.url)
                return nil
            }
            // A signed URL expired: ask the original URL again, which redirects to a fresh one.
            requestURL = url
            lastFailure = .httpStatus(status, url: transfer.url)
            return .failed(retryAfter: 0)
        case nil:
            break
        }
        let message = "\(Curl.describe(result)): \(transfer.easy.errorMessage)"
        let verdict = Curl.failure(result).verdict(fileKnown: scheduler != nil, answered: transfer.accepted) {
            refusedForConcurrency(retryAfter: nil)
        }
        switch verdict {
        case .unreachable: fatal = fatal ?? .connectFailed(message)
        case .badURL: fatal = fatal ?? .badURL("\(transfer.url) (\(message))")
        case .permanent: fatal = fatal ?? .transferFailed(message)
        case .hostLimit: return .stopped
        case .retry:
            lastFailure = .transferFailed(message)
            return .failed(retryAfter: nil)
        }
        return nil
    }

    /// Whether a refused request met the host's connection limit (others still work, this download's or
    /// another's from the same host), as the host's budget judges. Its range then goes to a working
    /// connection without counting as a failure.
    func refusedForConcurrency(retryAfter: Double?) -> Bool {
        guard let hostClaim else { return false }
        return HostConnections.shared.refused(hostClaim, working: answeredTransfers, retryAfter: retryAfter)
    }

    /// Tells the host's budget what this download holds and wants; returns what it may hold.
    func reportToHost(wanted: Int) -> Int {
        guard let hostClaim else {
            hostAllowance = connectionLimit
            return hostAllowance
        }
        hostAllowance = HostConnections.shared.report(
            hostClaim, wanted: wanted, open: transfers.count, working: answeredTransfers)
        return hostAllowance
    }

    /// Transfers whose response was accepted: what the host allows at once, as the controller counts it.
    var answeredTransfers: Int { transfers.values.reduce(0) { $0 + ($1.accepted ? 1 : 0) } }

    /// Follows the controller and the host's budget: when they allow fewer connections, those not answered
    /// yet and then the newest give their segments back.
    func adjustConnections() {
        guard var controller, let scheduler else { return }
        let delivering = transfers.values.reduce(0) { $0 + ($1.delivering ? 1 : 0) }
        let allowance = reportToHost(wanted: controller.wanted)
        decideProtocol(scheduler)
        let limit = min(
            allowance,
            controller.update(bytesDone: scheduler.completed.count, delivering: delivering, allowed: allowance, now: now))
        if controller.oneConnectionIsFast, self.controller?.oneConnectionIsFast == false { self.scheduler?.requestWholeSegments() }
        self.controller = controller
        guard transfers.count > limit else { return }
        // The controller weighs connections for bulk throughput; `--stream`'s tail is not one of them.
        let bulk = transfers.values.filter { !$0.isTail && $0.id != nil }
        guard bulk.count > limit else { return }
        let transfers = bulk.compactMap { transfer in transfer.id.map { (id: $0, answered: transfer.accepted) } }
        for id in SegmentScheduler.transfersToStop(transfers, keeping: limit) {
            self.scheduler?.release(id)
            stop(id)
        }
        if let hostClaim { HostConnections.shared.gaveBack(hostClaim, open: self.transfers.count, working: answeredTransfers) }
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

    /// Aborts a transfer on the scheduler's word.
    func stop(_ id: TransferID) {
        guard let transfer = transfers.values.first(where: { $0.id == id }) else { return }
        retire(transfer)
        _ = scheduler?.transferEnded(id, outcome: .stopped, now: now)
    }

    func removeAllTransfers() {
        for transfer in transfers.values { retire(transfer) }
    }

    /// Takes a transfer out of libcurl and writes out what it still holds.
    func retire(_ transfer: Transfer) {
        transfers.removeValue(forKey: transfer.easy.raw)
        multi.remove(transfer.easy)
        connectionsOpened += transfer.easy.info(CURLINFO_NUM_CONNECTS)
        guard let file else { return }
        do { try transfer.pending.flush(to: file) } catch { fatal = fatal ?? error }
    }

    /// A range request got the whole file or the wrong bytes: start over with one plain request.
    func applyFallback() {
        guard let reason = fallbackReason, let remote, scheduler?.rangeRequests == true else {
            fallbackReason = nil
            return
        }
        fallbackReason = nil
        events.yield(.notice("the server does not honour range requests (\(reason)); continuing over one connection"))
        removeAllTransfers()
        // One plain request rewrites everything; the next run could not resume with ranges anyway.
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

@available(*, unavailable)
extension Engine: Sendable {}
