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
    }

    /// A finished body: what the request named, where it ended up after redirects, and its type.
    struct Body {
        var bytes: [UInt8]
        var finalURL: String
        var contentType: String?
    }

    let options: DownloadOptions
    let signal: CancelSignal
    private let multi: MultiHandle
    private let share: ShareHandle
    private let headers: HeaderList
    private var running: [UnsafeMutableRawPointer: Fetch] = [:]
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
    }

    /// Requests in flight.
    var active: Int { running.count }

    var now: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }

    /// Fetches every request the plan starts, until the plan is finished or fails. `deliver` gets each body
    /// on this thread and may refuse it (an HTML page where a segment belongs): the plan then counts a failure.
    func run(
        _ requests: [Request], plan: inout SegmentFetchPlan,
        deliver: (Int, Body) -> SegmentFetchPlan.Failure?
    ) -> Result<Void, DownloadError> {
        signal.attach(multi.raw)
        defer {
            signal.detach()
            for fetch in running.values { multi.remove(fetch.easy) }
            running = [:]
        }
        while true {
            if signal.isCancelled { return .failure(.interrupted) }
            let time = now
            for action in plan.next(now: time) {
                switch action {
                case .fail(let index, let reason):
                    return .failure(.segmentUnavailable(requests[index].url, reason: reason))
                case .fetch(let index):
                    if let failure = start(index, requests[index]) { plan.failed(index, failure, now: time, jitter: .random(in: 0..<1)) }
                }
            }
            if plan.isFinished, running.isEmpty { return .success(()) }
            multi.perform()
            for (easy, result) in multi.completed() {
                guard let fetch = running.removeValue(forKey: easy) else { continue }
                multi.remove(fetch.easy)
                let failure: SegmentFetchPlan.Failure?
                switch outcome(of: fetch, result: result) {
                case .success(let body): failure = deliver(fetch.index, body)
                case .failure(let refused): failure = refused
                }
                if let failure {
                    plan.failed(fetch.index, failure, now: now, jitter: .random(in: 0..<1))
                } else {
                    plan.fetched(fetch.index)
                }
            }
            if !signal.isCancelled, !(plan.isFinished && running.isEmpty) {
                let wait = plan.wakeup(after: now).map { max(0, $0 - now) } ?? 1
                multi.poll(timeoutMilliseconds: min(1000, Int(wait * 1000) + 1))
            }
        }
    }

    private func start(_ index: Int, _ request: Request) -> SegmentFetchPlan.Failure? {
        guard isFetchableURL(request.url) else { return .transfer(.badURL, message: "not an http(s) URL: \(request.url)") }
        do {
            let easy = try EasyHandle()
            let fetch = Fetch(index: index, request: request, easy: easy)
            try easy.configure(url: request.url, options: options, headers: headers)
            try easy.set(CURLOPT_SHARE, pointer: share.raw)
            if let range = request.range { try easy.set(CURLOPT_RANGE, range.describedAsHTTP) }
            let userdata = Unmanaged.passUnretained(fetch).toOpaque()
            try easy.setWriteCallback(fetchWriteCallback, userdata: userdata)
            try easy.setHeaderCallback(fetchHeaderCallback, userdata: userdata)
            try multi.add(easy)
            running[easy.raw] = fetch
            return nil
        } catch {
            return .transfer(.permanent, message: "cannot start a request: \(error)")
        }
    }

    /// The body, or why it is not the bytes asked for.
    private func outcome(of fetch: Fetch, result: CURLcode) -> Result<Body, SegmentFetchPlan.Failure> {
        if let refused = fetch.refused { return .failure(refused) }
        guard result == CURLE_OK else {
            return .failure(.transfer(Curl.failure(result), message: "\(Curl.describe(result)): \(fetch.easy.errorMessage)"))
        }
        var bytes = fetch.bytes
        if let range = fetch.request.range, fetch.head.status == 200 {
            // The server ignored the range and sent the whole resource: take the range from it.
            guard range.upperBound <= Int64(bytes.count) else { return .failure(.invalid("the answer is shorter than the range \(range.describedAsHTTP)")) }
            bytes = Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)])
        } else if let range = fetch.request.range, bytes.count != range.count {
            return .failure(.invalid("\(bytes.count) bytes where the range \(range.describedAsHTTP) has \(range.count)"))
        }
        let finalURL = fetch.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? fetch.request.url
        return .success(Body(bytes: bytes, finalURL: finalURL, contentType: fetch.head.header("content-type")))
    }
}

/// One request in flight and what arrived of it. Confined to the fetcher's thread.
private final class Fetch {
    let index: Int
    let request: SegmentFetcher.Request
    let easy: EasyHandle
    var head = ResponseHead()
    var bytes: [UInt8] = []
    /// Set by a callback that stopped the transfer: the status was wrong, or the body too long.
    var refused: SegmentFetchPlan.Failure?

    init(index: Int, request: SegmentFetcher.Request, easy: EasyHandle) {
        self.index = index
        self.request = request
        self.easy = easy
    }

    /// Judges the final response's head: the bytes asked for come with 200 or a 206 for exactly the range.
    func accept() -> Bool {
        let status = head.status
        let retryAfter = head.header("retry-after").flatMap { ResponseVerdict.retryAfter($0, now: Date()) }
        switch status {
        case 200: break
        case 206:
            guard let range = request.range, let answered = head.header("content-range").flatMap(ContentRange.init),
                answered.range == range
            else {
                refused = .invalid("a 206 for other bytes than asked (\(head.header("content-range") ?? "no Content-Range"))")
                return false
            }
        default:
            refused = .status(status, retryAfter: retryAfter)
            return false
        }
        if let length = head.header("content-length").flatMap(Int64.init), length > request.limit {
            refused = .invalid("\(length) bytes, more than a segment may have (\(request.limit))")
            return false
        }
        if let length = head.header("content-length").flatMap(Int.init), length > 0 {
            bytes.reserveCapacity(length)
        }
        return true
    }
}

private let fetchWriteCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let fetch = Unmanaged<Fetch>.fromOpaque(userdata!).takeUnretainedValue()
    guard Int64(fetch.bytes.count + size * count) <= fetch.request.limit else {
        fetch.refused = .invalid("more than \(fetch.request.limit) bytes, more than a segment may have")
        return 0
    }
    fetch.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private let fetchHeaderCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let fetch = Unmanaged<Fetch>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    guard fetch.head.add(line: line), fetch.head.status >= 200, !fetch.head.isRedirect else { return size * count }
    return fetch.accept() ? size * count : 0
}
