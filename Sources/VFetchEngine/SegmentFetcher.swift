import VFetchCore
import VFetchStreams

/// Fetches many small resources (a stream's segments, init sections, keys and documents) as a
/// `SegmentFetchPlan` says, each into memory or a file of its own: the plan's adapter on a `Driver`,
/// which runs the requests. It feeds the plan what happened and does what it answers; it holds no
/// policy of its own. Runs on the calling thread; confined to it.
///
/// The driver outlives each run, so the next segment to the same host reuses a connection.
final class SegmentFetcher {
    /// One resource: the whole of `url`, or the bytes `range` of it.
    struct Request: Sendable, Equatable {
        var url: String
        var range: Range<Int64>?
        /// The largest body accepted, so a hostile origin cannot fill memory.
        var limit: Int64 = 256 << 20
        /// A 304 is an answer, not a failure: the request carried validators (`If-None-Match`).
        var acceptsNotModified = false
        /// Where the body goes as it arrives, at its offsets: this file (created if missing; a request for the
        /// whole fetch empties it), so that memory holds no segment, however large and however many connections;
        /// nil: memory (small documents).
        var file: String?
        /// Bytes of the file an earlier run left, synced, which are not asked for again (the plan's `held`).
        var held = ByteRangeSet()
        /// The length of the fetch, when known before asking: a byte range's, or a held fetch's.
        var length: Int64?
        /// The version the held bytes came from (`ResponseHead.rangeValidator`): the rest is asked for with it
        /// as `If-Range`, so another version comes whole rather than spliced in.
        var validator: String?
    }

    /// What a checkpoint found synced of a fetch still arriving (`Request.file`): its `bytes` of `length`,
    /// of the version `validator`. Recorded, they let a killed run ask only for the rest. No bytes: what was
    /// recorded of it before is gone (the fetch started over).
    struct Arrived {
        /// The index of its request.
        var request: Int
        var length: Int64
        var validator: String
        var bytes: ByteRangeSet
    }

    /// A finished body: what the request named, where it ended up after redirects, and its type.
    struct Body {
        /// The body, when it was fetched into memory.
        var bytes: [UInt8] = []
        /// The request's `file`, closed, when it was fetched into one: `length` bytes.
        var file: String?
        var length: Int64 = 0
        var finalURL: String
        var contentType: String?
        /// The origin answered 304 to a conditional request: no body, the copy the caller holds is current.
        var notModified = false
        var etag: String?
        var lastModified: String?
    }

    let driver: Driver
    private let options: DownloadOptions
    private let headers: HeaderList
    /// Each fetch's latest failed request, by fetch: what kind of failure gave a fetch up, which the
    /// plan's reason (a line of text) no longer tells.
    private(set) var lastFailures: [Int: RequestFailure] = [:]

    /// `urgent`: a player waits on the first request (see `HostBudget`).
    init(options: DownloadOptions, signal: CancelSignal, urgent: Bool = false) throws(DownloadError) {
        driver = try Driver(options: options, signal: signal, urgent: urgent)
        self.options = options
        headers = HeaderList(requestsFor: options)
    }

    /// Requests in flight.
    var active: Int { driver.transfers.count }

    private var running: FetchJob?

    /// The bytes that arrived of the fetches not delivered yet, in the run going on.
    var bytesInFlight: Int64 { running?.bytesInFlight ?? 0 }

    /// Seconds since the fetcher started: the plan's clock.
    var now: Double { driver.elapsed }

    /// Fetches every request the plan starts, until the plan is finished or fails. `deliver` gets each
    /// fetch's body, its pieces put together, on this thread, and may refuse it (an HTML page where a
    /// segment belongs): the plan then counts a failure. `progress` is called a few times a second, so that
    /// a large segment shows its progress as it arrives (`bytesInFlight`). As `checkpoints` pace it, the
    /// files of the fetches still arriving are synced and `hold` gets what they hold (nil: never).
    func run(
        _ requests: [Request], plan: inout SegmentFetchPlan, progress: () -> Void = {}, checkpoints: CheckpointPacing? = nil,
        hold: ([Arrived]) -> Void = { _ in }, deliver: (Int, Body) -> RequestFailure?
    ) -> Result<Void, DownloadError> {
        withoutActuallyEscaping(deliver) { deliver in
            withoutActuallyEscaping(progress) { progress in
                withoutActuallyEscaping(hold) { hold in
                    run(requests, &plan, progress: progress, checkpoints: checkpoints, hold: hold, deliver: deliver)
                }
            }
        }
    }

    private func run(
        _ requests: [Request], _ plan: inout SegmentFetchPlan, progress: @escaping () -> Void, checkpoints: CheckpointPacing?,
        hold: @escaping ([Arrived]) -> Void, deliver: @escaping (Int, Body) -> RequestFailure?
    ) -> Result<Void, DownloadError> {
        var resuming: [Int: HeaderList] = [:]
        for (index, request) in requests.enumerated() where !request.held.isEmpty {
            resuming[index] = HeaderList(requestsFor: options, ifRange: request.validator)
        }
        let job = FetchJob(requests: requests, plan: plan, headers: headers, resuming: resuming, deliver: deliver, progress: progress)
        job.checkpoints = checkpoints
        job.hold = hold
        running = job
        defer { running = nil }
        driver.run(job)
        job.closeSinks()
        plan = job.plan
        lastFailures.merge(job.lastFailures) { $1 }
        return job.result ?? .failure(.interrupted)
    }
}

/// One run of a `SegmentFetcher`: the plan's actions started on the driver, and its events fed back.
private final class FetchJob: DriverJob {
    let requests: [SegmentFetcher.Request]
    var plan: SegmentFetchPlan
    let headers: HeaderList
    /// The headers of requests that continue held bytes (`If-Range`), by request.
    let resuming: [Int: HeaderList]
    let deliver: (Int, SegmentFetcher.Body) -> RequestFailure?
    let progress: () -> Void
    private var lastProgress = 0.0
    var checkpoints: CheckpointPacing?
    var hold: ([SegmentFetcher.Arrived]) -> Void = { _ in }
    private var lastCheckpoint = 0.0
    private var checkpointCost = 0.0
    /// Bytes received since the last checkpoint.
    private var unrecorded: Int64 = 0
    var result: Result<Void, DownloadError>?
    var lastFailures: [Int: RequestFailure] = [:]
    /// Fetches whose pieces are arriving, each into its sink.
    private var sinks: [Int: FetchSink] = [:]
    /// The pieces in flight, by the plan's piece number (their transfers' names).
    private var pieces: [Int: Piece] = [:]
    private var fatal: DownloadError?

    init(
        requests: [SegmentFetcher.Request], plan: SegmentFetchPlan, headers: HeaderList, resuming: [Int: HeaderList],
        deliver: @escaping (Int, SegmentFetcher.Body) -> RequestFailure?, progress: @escaping () -> Void
    ) {
        self.requests = requests
        self.plan = plan
        self.headers = headers
        self.resuming = resuming
        self.deliver = deliver
        self.progress = progress
    }

    var bytesInFlight: Int64 { sinks.values.reduce(0) { $0 + $1.received } }

    func closeSinks() {
        for sink in sinks.values { sink.close() }
        sinks = [:]
    }

    func turn(_ driver: Driver) -> Bool {
        if let fatal {
            result = .failure(fatal)
            return false
        }
        if driver.signal.isCancelled {
            result = .failure(.interrupted)
            return false
        }
        var hostFull = false
        for action in plan.next(now: driver.now) {
            switch action {
            case .fail(let index, let reason):
                result = .failure(.segmentUnavailable(requests[index].url, reason: reason))
                return false
            case .fetch(let id, let index, let range):
                // Once the host's budget had no room, the rest of the turn's requests wait too.
                if hostFull { plan.notStarted(id) } else { hostFull = !start(id, index, range, driver) }
            }
        }
        if plan.isFinished, driver.transfers.isEmpty {
            result = .success(())
            return false
        }
        return true
    }

    func settle(_ driver: Driver) -> Double {
        guard fatal == nil, !(plan.isFinished && driver.transfers.isEmpty) else { return 0 }
        let now = driver.now
        if now - lastProgress >= 0.25 {
            lastProgress = now
            progress()
        }
        if let checkpoints, unrecorded > 0,
            checkpoints.isDue(seconds: now - lastCheckpoint, received: unrecorded, cost: checkpointCost)
        {
            checkpoint(driver)
        }
        return min(1, max(0.001, plan.wakeup(after: now).map { $0 - now } ?? 1))
    }

    func wanted(onHost host: String) -> Int { plan.wanted }

    /// Syncs the files of the fetches still arriving, then hands what they hold to `hold` to be recorded.
    private func checkpoint(_ driver: Driver) {
        let began = driver.elapsed
        var arrived: [SegmentFetcher.Arrived] = []
        do throws(DownloadError) {
            for (fetch, sink) in sinks.sorted(by: { $0.key < $1.key }) {
                if let synced = try sink.sync() {
                    arrived.append(.init(request: fetch, length: synced.length, validator: synced.validator, bytes: synced.bytes))
                }
            }
        } catch {
            fatal = fatal ?? error
            return
        }
        if !arrived.isEmpty { hold(arrived) }
        unrecorded = 0
        lastCheckpoint = driver.now
        checkpointCost = driver.elapsed - began
    }

    /// Starts the request for `part` of fetch `index` (nil: all of it), as piece `id`; false when the
    /// host's budget had no room for it.
    private func start(_ id: Int, _ index: Int, _ part: Range<Int64>?, _ driver: Driver) -> Bool {
        let request = requests[index]
        guard isFetchableURL(request.url) else {
            failed(id, index, .transfer(.badURL, message: "not an http(s) URL: \(request.url)"), now: driver.now)
            return true
        }
        let sink: FetchSink
        do {
            sink = try sinks[index] ?? FetchSink(request)
            // A request for the whole fetch starts it over.
            if part == nil { try sink.reset() }
        } catch {
            failed(id, index, .transfer(.permanent, message: "\(error)"), now: driver.now)
            return true
        }
        sinks[index] = sink
        let piece = Piece(fetch: index, request: request, part: part, sink: sink)
        do {
            let headers = part == nil ? headers : resuming[index] ?? headers
            guard try driver.start(request.url, bytes: piece.asked.map(Transfer.Bytes.range), headers: headers, name: id) != nil else {
                plan.notStarted(id)
                return false
            }
            pieces[id] = piece
        } catch {
            failed(id, index, .transfer(.permanent, message: "cannot start a request: \(error)"), now: driver.now)
        }
        return true
    }

    private func failed(_ id: Int, _ fetch: Int, _ failure: RequestFailure, now: Double) {
        lastFailures[fetch] = failure
        plan.failed(id, failure, now: now, jitter: .random(in: 0..<1))
    }

    func responded(_ transfer: Transfer) -> Bool {
        guard let piece = transfer.name.flatMap({ pieces[$0] }) else { return false }
        if let refused = piece.accept(transfer.head) {
            transfer.cut = .refused(refused)
            return false
        }
        // What a first answer told of its fetch's length: the rest is asked for at once.
        if let length = piece.totalLength {
            plan.learned(length: length, of: piece.fetch)
            piece.sink.length = piece.sink.length ?? length
        }
        if transfer.head.status == 200 {
            // The whole fetch anew, of whatever version it is now; its length unknown, nothing a later run could continue.
            (piece.sink.validator, piece.sink.length) = (transfer.head.rangeValidator, nil)
        } else if piece.sink.isAnotherVersion(transfer.head, length: piece.totalLength) {
            // A part of another version than the bytes written (a server that ignores If-Range, edges serving two
            // versions): none of it is kept, and the fetch starts over whole.
            let failure = RequestFailure.invalid("the segment changed on the server while it was fetched")
            transfer.cut = .refused(failure)
            startOver(piece.fetch, failure, except: transfer)
            return false
        } else if piece.sink.validator == nil {
            piece.sink.validator = transfer.head.rangeValidator
        }
        transfer.sink = piece.sink
        return true
    }

    /// Asks for `fetch` again whole, after a backoff: the requests of it still running stop.
    private func startOver(_ fetch: Int, _ failure: RequestFailure, except current: Transfer) {
        lastFailures[fetch] = failure
        plan.rejected(fetch, failure, now: current.driver.now, jitter: .random(in: 0..<1))
        stopPieces(of: fetch, except: current, current.driver)
    }

    /// Stops the requests of `fetch` still running but `current`; they belong to no piece from now on.
    private func stopPieces(of fetch: Int, except current: Transfer? = nil, _ driver: Driver) {
        for other in driver.transfers.values where other !== current && other.name.flatMap({ pieces[$0]?.fetch }) == fetch {
            pieces[other.name!] = nil
            try? driver.stop(other)
        }
    }

    func received(_ count: Int, from transfer: Transfer) -> BodyStep {
        unrecorded += Int64(count)
        guard let piece = transfer.name.flatMap({ pieces[$0] }), var window = piece.window else { return .stop(.stopped) }
        // A whole answer of another version came meanwhile: this part's bytes would be spliced into it.
        if piece.head.status == 206, piece.sink.isAnotherVersion(piece.head, length: nil) { return .stop(.stopped) }
        let step = window.take(count)
        piece.window = window
        switch step {
        case .refuse(let reason):
            return .stop(.refused(.invalid(reason)))
        case .keep(let slice, let offset, let done):
            // The whole file for a byte range: read up to the range's end, then stop.
            return BodyStep(keep: slice, offset: offset, then: done && piece.head.status == 200 ? .enough : nil)
        }
    }

    func ended(_ transfer: Transfer, _ end: TransferEnd) {
        guard let id = transfer.name, let piece = pieces.removeValue(forKey: id) else { return }
        let now = transfer.driver.now
        switch end {
        case .finished:
            guard let window = piece.window, window.isComplete else {
                let asked = piece.answered ?? piece.request.range
                failed(id, piece.fetch, .invalid("the answer is shorter than the range \(asked?.describedAsHTTP ?? "asked for")"), now: now)
                return
            }
            arrived(id, piece, finalURL: transfer.finalURL, transfer.driver)
        case .stopped: plan.notStarted(id)
        case .hostLimit: plan.refusedByHost(id)
        case .failed(let failure): failed(id, piece.fetch, failure, now: now)
        case .unwritable(let error): fatal = fatal ?? error
        }
    }

    /// A piece arrived whole: once its fetch is complete, the fetch is delivered, or refused.
    private func arrived(_ id: Int, _ piece: Piece, finalURL: String, _ driver: Driver) {
        let now = driver.now
        let sink = piece.sink
        sink.first = sink.first ?? (piece.head, finalURL)
        if piece.part == nil || piece.answeredWhole {
            // One answer is the whole fetch: exactly what it kept, whatever an earlier attempt left.
            sink.extent = piece.window?.keptEnd ?? 0
        }
        if piece.answeredWhole { plan.answeredWhole(id) } else { plan.fetched(id) }
        guard plan.isComplete(piece.fetch) else { return }
        sinks[piece.fetch] = nil
        switch sink.finish() {
        case .failure(let failure):
            plan.rejected(piece.fetch, failure, now: now, jitter: .random(in: 0..<1))
        case .success(let body):
            if let refused = deliver(piece.fetch, body) {
                plan.rejected(piece.fetch, refused, now: now, jitter: .random(in: 0..<1))
            } else {
                plan.kept(piece.fetch)
            }
        }
        // What still runs of this fetch (after a whole answer to one piece) belongs to no piece now.
        stopPieces(of: piece.fetch, driver)
    }
}

/// Where one fetch's bytes go as its pieces arrive, each at its offset: memory (documents and keys, a
/// few MiB at most) or the request's file. Confined to the driver's thread.
private final class FetchSink: ByteSink {
    let file: String?
    private var descriptor: Int32 = -1
    private var bytes: [UInt8] = []
    /// The fetch's length: the end of the bytes written, or what a whole answer kept.
    var extent: Int64 = 0
    /// The bytes written since the fetch (re)started in this run.
    private(set) var received: Int64 = 0
    /// The first piece's answer and where it came from: they describe the fetch.
    var first: (head: ResponseHead, finalURL: String)?
    /// The bytes written (a file's: held from an earlier run, or arrived in this one).
    private var arrived = ByteRangeSet()
    /// How many of `arrived` the last `sync` found.
    private var synced: Int64 = 0
    /// A checkpoint recorded bytes since written over: the next says they are gone.
    private var forgotten = false
    /// The fetch's length, once known; and the version its bytes are of (`ResponseHead.rangeValidator`).
    var length: Int64?
    var validator: String?

    /// A file's bytes gather here first: libcurl hands 16 KiB at a time, and each small write cost the
    /// driver's thread time between two polls.
    private var gathered: WriteBuffer?

    /// A sink for `request`: its file opened as an earlier run left it, with the bytes it holds.
    init(_ request: SegmentFetcher.Request) throws(FileSystemError) {
        file = request.file
        guard let file else { return }
        if let validator = request.validator, let length = request.length, !request.held.isEmpty {
            (self.validator, self.length, arrived) = (validator, length, request.held)
            extent = request.held.ranges.last!.upperBound
            synced = request.held.count
        } else {
            length = request.length
        }
        let descriptor = try FileSystem.open(file, .readWrite, creating: 0o600)
        self.descriptor = descriptor
        gathered = WriteBuffer(capacity: 256 << 10) { (bytes, offset) throws(DownloadError) in
            do throws(Errno) { try FileSystem.write(bytes, to: descriptor, at: offset) } catch {
                throw .forOutput(FileSystemError(error, path: file))
            }
        }
    }

    /// Whether an answer (a 206) is of another version than the bytes written: another validator, or
    /// another length.
    func isAnotherVersion(_ head: ResponseHead, length answered: Int64?) -> Bool {
        if let validator, let other = head.rangeValidator, other != validator { return true }
        if let length, let answered, answered != length { return true }
        return false
    }

    /// Forgets what was written: the fetch starts over. What a checkpoint recorded of it is withdrawn at the next.
    func reset() throws(FileSystemError) {
        forgotten = forgotten || synced > 0
        extent = 0
        received = 0
        arrived = ByteRangeSet()
        synced = 0
        validator = nil
        bytes = []
        gathered?.discard()
        if let file { do { try FileSystem.setLength(descriptor, 0) } catch { throw FileSystemError(error, path: file) } }
    }

    func write(_ chunk: UnsafeRawBufferPointer, at offset: Int64) throws(DownloadError) {
        extent = max(extent, offset + Int64(chunk.count))
        received += Int64(chunk.count)
        guard let gathered else {
            let end = Int(offset) + chunk.count
            if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
            bytes.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[Int(offset)..<end]).copyMemory(from: chunk) }
            return
        }
        try gathered.write(chunk, at: offset)
        arrived.insert(offset..<offset + Int64(chunk.count))
    }

    /// Writes out and syncs a file that gained bytes since the last call: what it holds now (no bytes: what was
    /// recorded before is gone), or nil when nothing changed, or its length or version is unknown or cannot be
    /// recorded (nothing could resume it).
    func sync() throws(DownloadError) -> (length: Int64, validator: String, bytes: ByteRangeSet)? {
        guard let file else { return nil }
        guard let length, let validator, StreamManifest.canRecord(validator: validator), arrived.count > synced else {
            guard forgotten else { return nil }
            forgotten = false
            return (0, "", ByteRangeSet())
        }
        try flush()
        do throws(Errno) { try FileSystem.syncData(descriptor) } catch { throw .forOutput(FileSystemError(error, path: file)) }
        (synced, forgotten) = (arrived.count, false)
        return (length, validator, arrived)
    }

    func flush() throws(DownloadError) {
        try gathered?.flush()
    }

    /// The fetch as a body: its bytes, or its file cut to its length and closed.
    func finish() -> Result<SegmentFetcher.Body, RequestFailure> {
        defer { close() }
        let head = first?.head ?? ResponseHead()
        var body = SegmentFetcher.Body(
            finalURL: first?.finalURL ?? "", contentType: head.header("content-type"), notModified: head.status == 304,
            etag: head.header("etag"), lastModified: head.header("last-modified"))
        body.length = extent
        guard let file else {
            body.bytes = Array(bytes.prefix(Int(extent)))
            return .success(body)
        }
        do {
            try flush()
            try FileSystem.setLength(descriptor, extent)
        } catch {
            return .failure(.transfer(.permanent, message: "cannot write \(file): \(error)"))
        }
        body.file = file
        return .success(body)
    }

    func close() {
        first = nil
        if descriptor >= 0 { FileSystem.close(descriptor) }
        descriptor = -1
    }
}

/// One request of a fetch and what arrived of it. Confined to the driver's thread.
private final class Piece {
    let fetch: Int
    let request: SegmentFetcher.Request
    /// The bytes of the fetch this piece asks for; nil: all of it.
    let part: Range<Int64>?
    let sink: FetchSink
    var head = ResponseHead()
    /// Where the body's bytes go, once the head is accepted.
    var window: ResponseWindow?
    /// The fetch's length, when the answer to a part of a whole resource tells it (`Content-Range`).
    var totalLength: Int64?
    /// The bytes a 206 says it sends.
    var answered: Range<Int64>?

    init(fetch: Int, request: SegmentFetcher.Request, part: Range<Int64>?, sink: FetchSink) {
        self.fetch = fetch
        self.request = request
        self.part = part
        self.sink = sink
    }

    /// The byte range of the resource asked for: the part within the fetch's own range, if it has one.
    var asked: Range<Int64>? {
        guard let part else { return request.range }
        let base = request.range?.lowerBound ?? 0
        let upper = request.range.map { min($0.upperBound, base + part.upperBound) } ?? base + part.upperBound
        return (base + part.lowerBound)..<upper
    }

    /// Whether a 200 answered a part: the whole fetch came.
    var answeredWhole: Bool { part != nil && head.status == 200 }

    /// Judges the final answer (`ResponseVerdict`) and opens the window its body is read through; nil
    /// when it may be read, or why not.
    func accept(_ head: ResponseHead) -> RequestFailure? {
        self.head = head
        let limit = request.limit
        let whole = request.range == nil
        // A 206 sends what it says; a 200 the resource from its first byte, of which the fetch is `request.range`.
        let start: Int64
        let wanted: Range<Int64>?
        switch ResponseVerdict.check(head, asked: asked, conditional: request.acceptsNotModified && whole) {
        case .part(let range, let total):
            (start, wanted, answered) = (range.lowerBound, range, range)
            // A fetch of a whole resource learns its length here; one of a byte range knew it.
            if whole, let total { totalLength = total }
        case .whole, .notModified:
            (start, wanted) = (0, request.range)
        case .wrongRange, .remoteChanged:
            return .invalid("a 206 for other bytes than asked (\(head.header("content-range") ?? "no Content-Range"))")
        case .retry(let status, let after):
            return .status(status, retryAfter: after)
        case .expired(let status), .fail(let status):
            return .status(status, retryAfter: nil)
        }
        if let length = head.header("content-length").flatMap(Int64.init), length > limit, head.status == 206 || whole {
            return .invalid("\(length) bytes, more than a segment may have (\(limit))")
        }
        if let total = totalLength, total > limit {
            return .invalid("\(total) bytes, more than a segment may have (\(limit))")
        }
        switch ResponseWindow.opening(start: start, wanted: wanted, base: request.range?.lowerBound ?? 0, limit: limit) {
        case .success(let window): self.window = window
        case .failure(let refusal):
            return .invalid(head.status == 200 ? "a whole file (200) for a byte range: \(refusal.reason)" : refusal.reason)
        }
        return nil
    }
}
