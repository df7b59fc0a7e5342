import CCurl
import VFetchCore

/// What a driver carries out: the adapter of a planner (a whole file's `Engine`, a stream's
/// `SegmentFetcher`), which decides every request and judges every answer while the driver runs them.
protocol DriverJob: AnyObject {
    /// The turn before libcurl runs: starts what the planner wants now (`Driver.start`), stops what it
    /// no longer wants; false when the job is over.
    func turn(_ driver: Driver) -> Bool
    /// The final answer's head arrived (redirects followed): whether its body is wanted. A job that takes
    /// it gives the transfer its `sink`; one that does not says why in `transfer.cut`.
    func responded(_ transfer: Transfer) -> Bool
    /// `count` bytes of an accepted body arrived: which of them to keep, where.
    func received(_ count: Int, from transfer: Transfer) -> BodyStep
    /// A transfer ended on its own (not by `Driver.stop`) and has left libcurl.
    func ended(_ transfer: Transfer, _ end: TransferEnd)
    /// After the turn's transfers ended: how long the driver may wait for sockets, in seconds (0: not at all).
    func settle(_ driver: Driver) -> Double
    /// How many transfers it would hold on `host` if the host were its alone: its want in the host's budget.
    func wanted(onHost host: String) -> Int
}

/// How a transfer ended, judged in one place for every job.
enum TransferEnd: Equatable {
    /// Every byte the job wanted arrived.
    case finished
    /// Stopped on the job's word, from a callback.
    case stopped
    /// Refused at the host's connection limit, as the host's budget judged over every download of the
    /// process: its bytes go to a working connection, or wait for room, with no failure counted.
    case hostLimit(retryAfter: Double?)
    /// A status (with its `Retry-After`), a failure below HTTP, an answer that cannot be used.
    case failed(RequestFailure)
    /// Its bytes could not be written.
    case unwritable(DownloadError)
}

/// Runs a job's transfers on one libcurl multi handle, on the calling thread: starts the requests the
/// job's planner asks for as the host's budget allows, hands every answer and every chunk to the job,
/// writes what it keeps, holds `--max-speed`, and says how each transfer ended. It decides nothing
/// else. A driver outlives several runs (a stream's documents, keys and segments) and keeps its
/// connections, TLS sessions and places in the hosts' budgets between them.
final class Driver {
    let options: DownloadOptions
    let signal: CancelSignal
    let multi: MultiHandle
    private let share: ShareHandle
    /// A player waits on the first request to each host (see `HostBudget.allowance`).
    private let urgent: Bool
    /// Data gathers before each wake (`WakePacing`): for a file's long requests, where it saves the CPU
    /// of waking for every TLS record of many HTTP/2 streams. A stream's pieces and info's ranges are
    /// short: each late wake would leave a connection idle between two of them.
    private let pacesWakes: Bool
    private(set) var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    /// The job being run; set for the length of `run`.
    private(set) var job: (any DriverJob)!
    /// This driver's place in the budget of each host it asked, and what each allowed at this turn.
    private var claims: [String: HostConnections.Claim] = [:]
    private var allowances: [String: Int] = [:]
    private var lastHost: (url: String, host: String)?
    /// A start was held back this turn for want of room at a host: the next turn comes soon.
    private var waitingForRoom = false
    /// `--max-speed`, over all transfers together.
    var speedLimit: SpeedLimit?
    private(set) var connectionsOpened = 0
    private(set) var peakTransfers = 0
    private let started = ContinuousClock.now
    /// Seconds since the driver started, read once per turn: the callbacks of one `multi.perform()`
    /// (thousands of chunks a second) share it.
    private(set) var now = 0.0

    /// How soon a turn comes again when a host had no room: another download's transfer may end any time.
    static let roomWait = 0.02

    init(options: DownloadOptions, signal: CancelSignal, urgent: Bool = false, pacesWakes: Bool = false) throws(DownloadError) {
        self.options = options
        self.signal = signal
        self.urgent = urgent
        self.pacesWakes = pacesWakes
        do {
            multi = try MultiHandle()
            share = try ShareHandle()
        } catch {
            throw .transferFailed("cannot start libcurl: \(error)")
        }
        speedLimit = options.maxBytesPerSecond.map(SpeedLimit.init(bytesPerSecond:))
    }

    deinit {
        for claim in claims.values { HostConnections.shared.leave(claim) }
    }

    /// Seconds since the driver started, now.
    var elapsed: Double { started.secondsAgo }

    /// Runs `job` until its `turn` says it is over: start, run, end, wait, and again.
    func run(_ job: any DriverJob) {
        self.job = job
        signal.attach(multi.raw)
        defer {
            signal.detach()
            try? stopAll()
            // Between runs this driver fetches nothing: its hosts go to the others.
            for claim in claims.values { _ = HostConnections.shared.report(claim, wanted: 0, working: 0) }
            self.job = nil
        }
        while true {
            now = started.secondsAgo
            waitingForRoom = false
            for (host, claim) in claims {
                allowances[host] = HostConnections.shared.report(claim, wanted: job.wanted(onHost: host), working: working(on: claim))
            }
            guard job.turn(self) else { return }
            resumePaused()
            multi.perform()
            for (easy, code) in multi.completed() { transferFinished(easy, code: code) }
            var wait = job.settle(self)
            guard wait > 0, !signal.isCancelled else { continue }
            if waitingForRoom { wait = min(wait, Self.roomWait) }
            wait = min(wait, pauseWait)
            multi.poll(timeoutMilliseconds: max(1, Int((wait * 1000).rounded(.up))), paced: pacesWakes)
        }
    }

    // MARK: - Starting and stopping

    /// Starts a request for `bytes` of `url` (nil: all of it) with `headers`, over HTTP/2 or HTTP/1.1 as
    /// `http2` says (nil: as the options say), named `name` for the job. Returns nil when the host's
    /// budget has no room for it now.
    func start(_ url: String, bytes: Transfer.Bytes?, headers: HeaderList, http2: Bool? = nil, name: Int? = nil) throws -> Transfer? {
        let claim = claim(for: url)
        guard HostConnections.shared.open(claim) else {
            waitingForRoom = true
            return nil
        }
        do {
            let transfer = try Transfer(name: name, url: url, bytes: bytes, headers: headers, claim: claim, driver: self)
            try configure(transfer, http2: http2)
            try multi.add(transfer.easy)
            transfers[transfer.easy.raw] = transfer
            peakTransfers = max(peakTransfers, transfers.count)
            return transfer
        } catch {
            HostConnections.shared.closed(claim, cut: false)
            throw error
        }
    }

    private func configure(_ transfer: Transfer, http2: Bool?) throws {
        let easy = transfer.easy
        try easy.configure(url: transfer.url, options: options, headers: transfer.headers)
        try easy.set(CURLOPT_BUFFERSIZE, receiveBufferSize)
        try easy.set(CURLOPT_SHARE, pointer: share.raw)
        if let http2 { try easy.useHTTP2(http2, url: transfer.url) }
        switch transfer.bytes {
        case .from(let offset)?: try easy.set(CURLOPT_RANGE, "\(offset)-")
        case .last(let count)?: try easy.set(CURLOPT_RANGE, "-\(count)")
        case .range(let range)?: try easy.set(CURLOPT_RANGE, range.describedAsHTTP)
        case nil: break
        }
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        try easy.setWriteCallback(transferWriteCallback, userdata: userdata)
        try easy.setHeaderCallback(transferHeaderCallback, userdata: userdata)
    }

    /// How many transfers the budget of `url`'s host allows the job at this turn.
    func allowance(for url: String) -> Int {
        allowances[claim(for: url).host] ?? 0
    }

    /// Stops a transfer on the job's word and writes out what its sink holds.
    func stop(_ transfer: Transfer) throws(DownloadError) {
        guard transfers.removeValue(forKey: transfer.easy.raw) != nil else { return }
        try remove(transfer, cut: true)
    }

    /// Stops every transfer; the first sink that cannot be written out says why.
    func stopAll() throws(DownloadError) {
        var failure: DownloadError?
        for transfer in Array(transfers.values) {
            do { try stop(transfer) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Takes a transfer out of libcurl and out of its host's count, and writes out what its sink holds.
    /// `cut`: the host was still sending it.
    private func remove(_ transfer: Transfer, cut: Bool) throws(DownloadError) {
        multi.remove(transfer.easy)
        connectionsOpened += transfer.easy.info(CURLINFO_NUM_CONNECTS)
        HostConnections.shared.closed(transfer.claim, cut: cut)
        try transfer.sink?.flush()
    }

    // MARK: - Answers and ends

    /// The final answer of `transfer` arrived; called from the header callback.
    func responded(_ transfer: Transfer) -> Bool {
        guard job.responded(transfer) else {
            transfer.cut = transfer.cut ?? .stopped
            return false
        }
        transfer.accepted = true
        HostConnections.shared.accepted(transfer.claim, working: working(on: transfer.claim))
        return true
    }

    /// libcurl finished a transfer (or a resume failed it): judged, taken out, and told to the job.
    func transferFinished(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        guard let transfer = transfers.removeValue(forKey: easy) else { return }
        var end = self.end(of: transfer, code: code)
        do { try remove(transfer, cut: Self.wasCut(transfer, end)) } catch { end = .unwritable(error) }
        job.ended(transfer, end)
    }

    /// How `transfer` ended: the one place where a refusal at the host's connection limit is told from a
    /// failure, by the host's budget, for every job.
    private func end(of transfer: Transfer, code: CURLcode) -> TransferEnd {
        if let error = transfer.writeError { return .unwritable(error) }
        let failure: RequestFailure
        switch transfer.cut {
        case .stopped?: return .stopped
        case .enough?: return .finished
        case .refused(let refusal)?: failure = refusal
        case nil:
            if code == CURLE_OK { return .finished }
            failure = .transfer(Curl.failure(code), message: Curl.describe(code, detail: transfer.easy.errorMessage))
        }
        if failure.mayBeHostLimit(answered: transfer.accepted),
            HostConnections.shared.refused(transfer.claim, working: working(on: transfer.claim), retryAfter: failure.retryAfter)
        {
            return .hostLimit(retryAfter: failure.retryAfter)
        }
        return .failed(failure)
    }

    /// Whether the host may still count a transfer that ended so: it was stopped while the host sent it.
    /// A refusal, or a connection the host closed, counts no more.
    private static func wasCut(_ transfer: Transfer, _ end: TransferEnd) -> Bool {
        switch end {
        case .finished: transfer.cut == .enough
        case .stopped, .unwritable, .failed(.invalid): true
        case .hostLimit, .failed(.status): false
        case .failed(.transfer(let kind, _)): !kind.mayBeHostLimit
        }
    }

    /// Transfers on `claim`'s host whose answers were accepted: what the host allows at once, as far as known.
    private func working(on claim: HostConnections.Claim) -> Int {
        transfers.values.reduce(0) { $0 + ($1.accepted && $1.claim == claim ? 1 : 0) }
    }

    /// This driver's place in the budget of `url`'s host, taken at the first request there.
    private func claim(for url: String) -> HostConnections.Claim {
        let host: String
        if let last = lastHost, last.url == url {
            host = last.host
        } else {
            host = HostConnections.host(of: url)
            lastHost = (url, host)
        }
        if let claim = claims[host] { return claim }
        let claim = HostConnections.shared.join(
            host: host, maximum: options.connections, maxRetryAfter: options.maxRetryWait, urgent: urgent)
        claims[host] = claim
        allowances[host] = HostConnections.shared.report(claim, wanted: job.wanted(onHost: host), working: 0)
        return claim
    }
}

@available(*, unavailable)
extension Driver: Sendable {}
