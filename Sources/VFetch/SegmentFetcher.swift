import CCurl
import Foundation
import VFetchCore
import VFetchStreams

/// Fetches many small resources (a stream's segments, init sections and keys) over parallel connections,
/// each into memory, as a `SegmentFetchPlan` says. Executes the plan's actions and feeds it events; holds
/// no policy of its own. Runs on the calling thread; confined to it.
///
/// libcurl's multi handle keeps finished connections open, so the next segment to the same host reuses one.
final class SegmentFetcher {
    /// One resource: the whole of `url`, or the bytes `range` of it.
    struct Request: Sendable, Equatable {
        var url: String
        var range: Range<Int64>?
        /// The largest body accepted, so a hostile origin cannot fill memory.
        var limit: Int64 = 256 << 20
        /// A 304 is an answer, not a failure: the request carried validators (`If-None-Match`).
        var acceptsNotModified = false
        /// Where the body goes as it arrives, at its offsets: this file (created afresh), so that memory holds
        /// no segment, however large and however many connections; nil: memory (small documents).
        var file: String?
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

    let options: DownloadOptions
    let signal: CancelSignal
    private let multi: MultiHandle
    private let share: ShareHandle
    private let headers: HeaderList
    private var running: [UnsafeMutableRawPointer: Piece] = [:]
    /// Fetches whose pieces are arriving, each into its sink.
    private var sinks: [Int: FetchSink] = [:]
    /// Each fetch's latest failed request, by fetch: what kind of failure gave a fetch up, which the
    /// plan's reason (a line of text) no longer tells.
    private(set) var lastFailures: [Int: SegmentFetchPlan.Failure] = [:]
    /// `--max-speed`, over all requests together (the engine's token bucket, `SpeedLimit`).
    private var speedLimit: SpeedLimit?
    private let started = ContinuousClock.now

    init(options: DownloadOptions, signal: CancelSignal) throws(DownloadError) {
        self.options = options
        self.signal = signal
        do {
            multi = try MultiHandle()
            share = try ShareHandle()
        } catch {
            throw .transferFailed("cannot start libcurl: \(error)")
        }
        headers = HeaderList(requestsFor: options)
        speedLimit = options.maxBytesPerSecond.map(SpeedLimit.init(bytesPerSecond:))
    }

    /// Whether a piece may take a chunk of `count` bytes now; if not, it waits paused until `resumePaused`.
    /// Called from the write callback.
    fileprivate func admit(_ count: Int, from piece: Piece) -> Bool {
        guard speedLimit != nil else { return true }
        speedLimit?.refill(now: now)
        guard speedLimit?.take(count) == true else {
            piece.pausedSince = piece.pausedSince ?? now
            return false
        }
        piece.pausedSince = nil
        return true
    }

    /// Resumes paused pieces, those that waited longest first, while the speed limit allows.
    private func resumePaused() {
        guard speedLimit != nil else { return }
        let waiting = running.values.filter { $0.pausedSince != nil }.sorted { $0.pausedSince! < $1.pausedSince! }
        for piece in waiting {
            speedLimit?.refill(now: now)
            guard let speedLimit, speedLimit.allowance > 0 else { return }
            // libcurl hands over the chunk it kept from inside this call, through the write callback.
            try? piece.easy.resumeReceiving()
        }
    }

    /// Requests in flight.
    var active: Int { running.count }

    /// Seconds since the fetcher started: the plan's clock.
    var now: Double { started.secondsAgo }

    /// Fetches every request the plan starts, until the plan is finished or fails. `deliver` gets each
    /// fetch's body, its pieces put together, on this thread, and may refuse it (an HTML page where a
    /// segment belongs): the plan then counts a failure.
    func run(
        _ requests: [Request], plan: inout SegmentFetchPlan,
        deliver: (Int, Body) -> SegmentFetchPlan.Failure?
    ) -> Result<Void, DownloadError> {
        signal.attach(multi.raw)
        defer {
            signal.detach()
            for piece in running.values { multi.remove(piece.easy) }
            running = [:]
            for sink in sinks.values { sink.close() }
            sinks = [:]
        }
        while true {
            if signal.isCancelled { return .failure(.interrupted) }
            let time = now
            for action in plan.next(now: time) {
                switch action {
                case .fail(let index, let reason):
                    return .failure(.segmentUnavailable(requests[index].url, reason: reason))
                case .fetch(let id, let index, let range):
                    if let failure = start(id, index, requests[index], part: range) {
                        lastFailures[index] = failure
                        plan.failed(id, failure, now: time, jitter: .random(in: 0..<1))
                    }
                }
            }
            if plan.isFinished, running.isEmpty { return .success(()) }
            resumePaused()
            multi.perform()
            // What first answers told of their fetches' lengths, so the rest is asked for at once.
            for piece in running.values where !piece.lengthReported {
                guard let length = piece.totalLength else { continue }
                piece.lengthReported = true
                plan.learned(length: length, of: piece.fetch)
            }
            for (easy, result) in multi.completed() {
                guard let piece = running.removeValue(forKey: easy) else { continue }
                multi.remove(piece.easy)
                switch outcome(of: piece, result: result) {
                case .failure(let failure):
                    lastFailures[piece.fetch] = failure
                    plan.failed(piece.id, failure, now: now, jitter: .random(in: 0..<1))
                    continue
                case .success:
                    let sink = piece.sink
                    sink.first = sink.first ?? piece
                    if piece.part == nil || piece.answeredWhole {
                        // One answer is the whole fetch: exactly what it kept, whatever an earlier attempt left.
                        sink.extent = piece.window?.keptEnd ?? 0
                    }
                    if piece.answeredWhole {
                        plan.answeredWhole(piece.id)
                    } else {
                        plan.fetched(piece.id)
                    }
                    guard plan.isComplete(piece.fetch) else { continue }
                    sinks[piece.fetch] = nil
                    let whole: Body
                    switch sink.finish() {
                    case .failure(let failure):
                        plan.rejected(piece.fetch, failure, now: now, jitter: .random(in: 0..<1))
                        continue
                    case .success(let body): whole = body
                    }
                    if let refused = deliver(piece.fetch, whole) {
                        plan.rejected(piece.fetch, refused, now: now, jitter: .random(in: 0..<1))
                    } else {
                        plan.kept(piece.fetch)
                    }
                    // What still runs of this fetch (after a whole answer to one piece) belongs to no piece now.
                    for (easy, other) in running where other.fetch == piece.fetch {
                        multi.remove(other.easy)
                        running[easy] = nil
                    }
                }
            }
            if !signal.isCancelled, !(plan.isFinished && running.isEmpty) {
                var wait = plan.wakeup(after: now).map { max(0, $0 - now) } ?? 1
                // A paused request's socket does not wake the poll: come back when the bucket has refilled.
                if let speedLimit, running.values.contains(where: { $0.pausedSince != nil }) {
                    wait = min(wait, speedLimit.secondsUntilAllowed)
                }
                multi.poll(timeoutMilliseconds: min(1000, Int(wait * 1000) + 1))
            }
        }
    }

    /// Starts the request for `part` of fetch `index` (nil: all of it), as piece `id`.
    private func start(_ id: Int, _ index: Int, _ request: Request, part: Range<Int64>?) -> SegmentFetchPlan.Failure? {
        guard isFetchableURL(request.url) else { return .transfer(.badURL, message: "not an http(s) URL: \(request.url)") }
        let sink: FetchSink
        do {
            sink = try sinks[index] ?? FetchSink(file: request.file)
            // A request for the whole fetch starts it over.
            if part == nil { try sink.reset() }
        } catch {
            return .transfer(.permanent, message: "\(error)")
        }
        sinks[index] = sink
        do {
            let easy = try EasyHandle()
            let piece = Piece(id: id, fetch: index, request: request, part: part, easy: easy, sink: sink, owner: self)
            try easy.configure(url: request.url, options: options, headers: headers)
            try easy.set(CURLOPT_SHARE, pointer: share.raw)
            if let asked = piece.asked { try easy.set(CURLOPT_RANGE, asked.describedAsHTTP) }
            if let speedLimit { try easy.set(CURLOPT_BUFFERSIZE, speedLimit.receiveBufferSize(connections: options.connections)) }
            let userdata = Unmanaged.passUnretained(piece).toOpaque()
            try easy.setWriteCallback(fetchWriteCallback, userdata: userdata)
            try easy.setHeaderCallback(fetchHeaderCallback, userdata: userdata)
            try multi.add(easy)
            running[easy.raw] = piece
            return nil
        } catch {
            return .transfer(.permanent, message: "cannot start a request: \(error)")
        }
    }

    /// Whether the piece's bytes all arrived, or why they are not the bytes asked for.
    private func outcome(of piece: Piece, result: CURLcode) -> Result<Void, SegmentFetchPlan.Failure> {
        if let refused = piece.refused { return .failure(refused) }
        guard result == CURLE_OK || (result == CURLE_WRITE_ERROR && piece.hasEnough) else {
            return .failure(.transfer(Curl.failure(result), message: "\(Curl.describe(result)): \(piece.easy.errorMessage)"))
        }
        piece.finalURL = piece.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? piece.request.url
        guard let window = piece.window, window.isComplete else {
            let asked = piece.answered ?? piece.request.range
            return .failure(.invalid("the answer is shorter than the range \(asked?.describedAsHTTP ?? "asked for")"))
        }
        return .success(())
    }
}

/// Where one fetch's bytes go as its pieces arrive, each at its offset: memory (documents and keys, a
/// few MiB at most) or the request's file. Confined to the fetcher's thread.
private final class FetchSink {
    let file: String?
    private var descriptor: Int32 = -1
    private var bytes: [UInt8] = []
    /// The fetch's length: the end of the bytes written, or what a whole answer kept.
    var extent: Int64 = 0
    /// The first piece that arrived: its answer's head describes the fetch.
    var first: Piece?
    /// A write to the file failed: the fetch cannot be kept.
    var writeFailure: String?

    init(file: String?) throws(FileSystemError) {
        self.file = file
        if let file { descriptor = try FileSystem.open(file, .readWrite, creating: 0o600) }
    }

    /// Forgets what was written: the fetch starts over.
    func reset() throws(FileSystemError) {
        extent = 0
        bytes = []
        if let file { do { try FileSystem.setLength(descriptor, 0) } catch { throw FileSystemError(error, path: file) } }
    }

    func write(_ chunk: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        extent = max(extent, offset + Int64(chunk.count))
        guard let file else {
            let end = Int(offset) + chunk.count
            if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
            bytes.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[Int(offset)..<end]).copyMemory(from: chunk) }
            return true
        }
        do throws(Errno) {
            try FileSystem.write(chunk, to: descriptor, at: offset)
            return true
        } catch {
            writeFailure = writeFailure ?? "cannot write \(file): \(error)"
            return false
        }
    }

    /// The fetch as a body: its bytes, or its file cut to its length and closed.
    func finish() -> Result<SegmentFetcher.Body, SegmentFetchPlan.Failure> {
        defer { close() }
        if let writeFailure { return .failure(.transfer(.permanent, message: writeFailure)) }
        let head = first?.head ?? ResponseHead()
        var body = SegmentFetcher.Body(
            finalURL: first?.finalURL ?? "", contentType: head.header("content-type"), notModified: head.status == 304,
            etag: head.header("etag"), lastModified: head.header("last-modified"))
        body.length = extent
        guard let file else {
            body.bytes = Array(bytes.prefix(Int(extent)))
            return .success(body)
        }
        do { try FileSystem.setLength(descriptor, extent) } catch {
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

/// One request in flight and what arrived of it. Confined to the fetcher's thread.
private final class Piece {
    let id: Int
    let fetch: Int
    let request: SegmentFetcher.Request
    /// The bytes of the fetch this piece asks for; nil: all of it.
    let part: Range<Int64>?
    let easy: EasyHandle
    let sink: FetchSink
    var head = ResponseHead()
    /// Where the body's bytes go, once the head is accepted.
    var window: ResponseWindow?
    var finalURL = ""
    /// Set by a callback that stopped the transfer: the status was wrong, or the body too long.
    var refused: SegmentFetchPlan.Failure?
    /// The fetch's length, when the answer to a part of a whole resource tells it (`Content-Range`).
    var totalLength: Int64?
    /// The bytes a 206 says it sends.
    var answered: Range<Int64>?
    /// A 200 for a byte range has sent as far as the range's end: the rest of the file is not needed.
    var hasEnough = false
    var lengthReported = false
    /// When `--max-speed` paused it; nil while it may receive.
    var pausedSince: Double?
    unowned let owner: SegmentFetcher

    init(
        id: Int, fetch: Int, request: SegmentFetcher.Request, part: Range<Int64>?, easy: EasyHandle, sink: FetchSink,
        owner: SegmentFetcher
    ) {
        self.owner = owner
        self.id = id
        self.fetch = fetch
        self.request = request
        self.part = part
        self.easy = easy
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

    /// Judges the final response's head (`ResponseVerdict`) and opens the window its body is read through.
    func accept() -> Bool {
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
            refused = .invalid("a 206 for other bytes than asked (\(head.header("content-range") ?? "no Content-Range"))")
            return false
        case .retry(let status, let after):
            refused = .status(status, retryAfter: after)
            return false
        case .expired(let status), .fail(let status):
            refused = .status(status, retryAfter: nil)
            return false
        }
        if let length = head.header("content-length").flatMap(Int64.init), length > limit, head.status == 206 || whole {
            refused = .invalid("\(length) bytes, more than a segment may have (\(limit))")
            return false
        }
        if let total = totalLength, total > limit {
            refused = .invalid("\(total) bytes, more than a segment may have (\(limit))")
            return false
        }
        switch ResponseWindow.opening(start: start, wanted: wanted, base: request.range?.lowerBound ?? 0, limit: limit) {
        case .success(let window): self.window = window
        case .failure(let refusal):
            refused = .invalid(head.status == 200 ? "a whole file (200) for a byte range: \(refusal.reason)" : refusal.reason)
            return false
        }
        return true
    }
}

private let fetchWriteCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let piece = Unmanaged<Piece>.fromOpaque(userdata!).takeUnretainedValue()
    // Bytes before a head `accept` took (a redirect's page) are not the fetch's.
    guard piece.window != nil else { return size * count }
    guard piece.owner.admit(size * count, from: piece) else { return EasyHandle.pauseReceiving }
    switch piece.window!.take(size * count) {
    case .refuse(let reason):
        piece.refused = .invalid(reason)
        return 0
    case .keep(let slice, let offset, let done):
        let chunk = UnsafeRawBufferPointer(start: data, count: size * count)
        if !slice.isEmpty, !piece.sink.write(UnsafeRawBufferPointer(rebasing: chunk[slice]), at: offset) {
            piece.refused = .transfer(.permanent, message: piece.sink.writeFailure ?? "cannot write")
            return 0
        }
        piece.hasEnough = done
        // The whole file for a byte range: read up to the range's end, then stop.
        return done && piece.head.status == 200 ? 0 : size * count
    }
}

private let fetchHeaderCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let piece = Unmanaged<Piece>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    guard piece.head.add(line: line), piece.head.status >= 200, !piece.head.isRedirect else { return size * count }
    return piece.accept() ? size * count : 0
}
