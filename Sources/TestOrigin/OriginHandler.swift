import NIOCore
import NIOHTTP1

/// One TCP connection's HTTP/1.1 server side: routes each request and streams the answer.
///
/// It runs only on its channel's event loop, so its fields need no lock. NIO's pipelining
/// handler in front of it holds back the next request until this response's end is written,
/// so there is at most one response in flight.
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Unthrottled bodies are written in chunks of this size, never as one huge buffer.
    private static let chunkSize = 64 * 1024
    /// Unthrottled chunks written per event-loop turn before yielding to other connections.
    private static let chunksPerTurn = 16

    /// The body being written and where it stands.
    private struct BodyStream {
        var body: ResponseBody
        /// The next offset into `body.bytes` to write.
        var offset: Int
        /// Body bytes still allowed before the connection is cut (nil = send everything).
        var untilDrop: Int?
        /// Bytes still to send before the throttle applies.
        var burst: Int
        /// The largest chunk one link booking may take (nil = no link cap).
        var linkChunkSize: Int?
        /// A chunk already through the throttle and booked on the link, waiting for its slot.
        var bookedCount: Int? = nil
        var keepAlive: Bool
    }

    private let core: OriginCore
    private let connection: Int
    /// The client's IP address, for `maxResponsesPerClient`.
    private let client: String
    private var requestHead: HTTPRequestHead?
    /// The answer held back by `latency`, if any.
    private var delayedAnswer: Scheduled<Void>?
    private var stream: BodyStream?
    /// Per connection, so a throttle holds across keep-alive requests.
    private var bucket: TokenBucket?
    /// The pending resumption of `pump` (throttle wait or yield), if any.
    private var wakeUp: Scheduled<Void>?
    /// Set while `pump` runs, to ignore re-entrant calls.
    private var isPumping = false

    init(core: OriginCore, connection: Int, client: String) {
        self.core = core
        self.connection = connection
        self.client = client
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
        case .body:
            break  // request bodies are not used
        case .end:
            if let head = requestHead {
                requestHead = nil
                let latency = core.state.withLock { $0.configuration.latency }
                guard latency > .zero else { return respond(to: head, context: context) }
                let delay = TimeAmount.nanoseconds(Int64(latency / .nanoseconds(1)))
                delayedAnswer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
                    delayedAnswer = nil
                    respond(to: head, context: context)
                }
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopStreaming()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopStreaming()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Resets and broken pipes are what clients do; close quietly instead of logging.
        stopStreaming()
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = String(head.uri.prefix { $0 != "?" })
        let request = RoutedRequest(
            method: head.method.rawValue, path: path, headers: head.headers, connection: connection, client: client)
        let now = OriginCore.now()
        let plan = core.state.withLock { $0.respond(to: request, now: now) }
        if plan.closeWithoutAnswer {
            context.close(promise: nil)
            return
        }

        var headers = plan.headers
        if !head.isKeepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if head.version.major == 1 && head.version.minor == 0 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        let status = HTTPResponseStatus(statusCode: plan.status)
        let responseHead = wrapOutboundOut(
            .head(HTTPResponseHead(version: head.version, status: status, headers: headers)))
        if plan.body != nil && plan.dropAfterBytes == 0 {
            // The drop fault at byte 0: headers, then the connection goes away.
            if let path = plan.body?.servedPath { core.state.withLock { $0.responseEnded(path, client: client) } }
            closeAfter(context.writeAndFlush(responseHead), context: context)
            return
        }
        // Flushed at once: a throttled body may not start for a while, but headers go out promptly.
        context.writeAndFlush(responseHead, promise: nil)

        if let rate = plan.bytesPerSecond {
            if bucket?.bytesPerSecond != rate {
                bucket = TokenBucket(bytesPerSecond: rate, now: .now())
            }
        } else {
            bucket = nil
        }
        if let body = plan.body {
            stream = BodyStream(
                body: body, offset: body.range.lowerBound, untilDrop: plan.dropAfterBytes, burst: plan.burstBytes,
                linkChunkSize: plan.linkChunkSize, keepAlive: head.isKeepAlive)
            pump(context: context)
        } else {
            finish(context: context, keepAlive: head.isKeepAlive)
        }
    }

    /// Writes body chunks while the channel is writable and the throttle and link allow, then arranges to
    /// be called again: by `channelWritabilityChanged`, a throttle timer, or a yield.
    private func pump(context: ChannelHandlerContext) {
        // A flush can fire channelWritabilityChanged synchronously and so re-enter here; the
        // outer loop re-checks writability each round, so the inner call has nothing to do.
        guard wakeUp == nil, !isPumping else { return }
        isPumping = true
        defer { isPumping = false }
        var chunksWritten = 0
        while var current = stream {
            let remaining = current.body.range.upperBound - current.offset
            if remaining == 0 {
                break
            }
            guard context.channel.isWritable else { return }  // back-pressure: wait for writability
            guard var count = nextChunkSize(&current, remaining: remaining, chunksWritten: chunksWritten, context: context) else {
                stream = current  // a chunk booked on the link, or burst bytes counted
                return
            }
            // A body longer than its bytes repeats them.
            let start = current.offset % current.body.bytes.count
            count = min(count, current.body.bytes.count - start)
            let slice = current.body.bytes[start..<start + count]
            let chunk = context.channel.allocator.buffer(bytes: slice)
            let part = wrapOutboundOut(.body(.byteBuffer(chunk)))
            if let path = current.body.servedPath {
                let now = OriginCore.now()
                let rate = core.state.withLock {
                    $0.noteServed(path, count: count, now: now)
                    return $0.changedRate
                }
                // `rateChange` reaches responses in flight at their next chunk.
                if let rate, bucket?.bytesPerSecond != rate {
                    bucket = TokenBucket(bytesPerSecond: rate, now: .now())
                }
            }
            if current.untilDrop == count {
                // The drop fault: cut the connection mid-body once these bytes are out.
                endStream()
                closeAfter(context.writeAndFlush(part), context: context)
                return
            }
            current.offset += count
            current.untilDrop = current.untilDrop.map { $0 - count }
            stream = current
            chunksWritten += 1
            context.writeAndFlush(part, promise: nil)
        }
        guard let done = stream else { return }
        if let path = done.body.servedPath { core.state.withLock { $0.completedResponses.append(path) } }
        endStream()
        finish(context: context, keepAlive: done.keepAlive)
    }

    /// The size of the next chunk of `current` when the throttle and the link let it go now; otherwise
    /// nil, having arranged for `pump` to be called again when they will.
    private func nextChunkSize(
        _ current: inout BodyStream, remaining: Int, chunksWritten: Int, context: ChannelHandlerContext
    ) -> Int? {
        if let booked = current.bookedCount {
            current.bookedCount = nil  // its throttle tokens and link slot were taken before the wait
            return booked
        }
        var count = min(remaining, Self.chunkSize)
        if let untilDrop = current.untilDrop {
            count = min(count, untilDrop)
        }
        if let linkChunkSize = current.linkChunkSize {
            count = min(count, linkChunkSize)
        }
        if current.burst > 0 {
            count = min(count, current.burst)
            current.burst -= count
        } else if var throttle = bucket {
            count = min(count, throttle.chunkSize)
            let wait = throttle.take(count, now: .now())
            bucket = throttle
            if let wait {
                schedulePump(in: wait, context: context)
                return nil
            }
        } else if chunksWritten == Self.chunksPerTurn {
            schedulePump(in: .zero, context: context)
            return nil
        }
        // The link is shared, so its slot is booked last, once the chunk is sure to go.
        if current.linkChunkSize != nil, let wait = core.state.withLock({ $0.link?.book(count, now: .now()) }) {
            current.bookedCount = count
            schedulePump(in: wait, context: context)
            return nil
        }
        return count
    }

    /// Closes the connection once `write` has completed, so the bytes before it reach the client.
    private func closeAfter(_ write: EventLoopFuture<Void>, context: ChannelHandlerContext) {
        write.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    private func schedulePump(in delay: TimeAmount, context: ChannelHandlerContext) {
        wakeUp = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            wakeUp = nil
            pump(context: context)
        }
    }

    /// Ends the response, and closes the connection afterwards when the client did not keep it alive.
    private func finish(context: ChannelHandlerContext, keepAlive: Bool) {
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            closeAfter(written, context: context)
        }
    }

    /// Forgets the body being written, telling the origin its response is over.
    private func endStream() {
        if let path = stream?.body.servedPath { core.state.withLock { $0.responseEnded(path, client: client) } }
        stream = nil
    }

    private func stopStreaming() {
        endStream()
        wakeUp?.cancel()
        wakeUp = nil
        delayedAnswer?.cancel()
        delayedAnswer = nil
    }
}
