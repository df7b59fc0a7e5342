import NIOCore

/// Closes a connection whose answer makes no progress for `timeout`: a client that asks and never
/// reads would otherwise hold its connection slot, the cache file and their descriptors forever,
/// and enough of them keep every player out.
///
/// As nginx's `send_timeout`: it counts only while bytes wait to be sent, and any byte the socket
/// takes is progress, so a slow reader stays, and so does a player waiting for the origin's next
/// byte (nothing waits to be sent then). First in the pipeline, next to the socket, where writes are bytes.
final class SendProgressTimeout: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let timeout: TimeAmount
    /// Writes not completed yet.
    private var pending = 0
    /// Bytes handed to the socket's channel so far, and how many of them it had sent when last seen.
    private var queued: Int64 = 0
    private var sent: Int64 = 0
    private var lastProgress = NIODeadline.now()
    private var check: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data)
        queued += Int64(bytes.readableBytes)
        if pending == 0 { lastProgress = .now() }
        pending += 1
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.assumeIsolated().whenComplete { _ in
            self.pending -= 1
            guard self.pending == 0 else { return }
            self.sent = self.queued
            self.check?.cancel()
            self.check = nil
        }
        scheduleCheck(context)
        context.write(wrapOutboundOut(bytes), promise: written)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }

    /// Looks again a quarter of the timeout later, so a stalled connection goes at most a quarter late.
    private func scheduleCheck(_ context: ChannelHandlerContext) {
        guard check == nil else { return }
        check = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.nanoseconds / 4)) {
            self.check = nil
            self.inspect(context)
        }
    }

    private func inspect(_ context: ChannelHandlerContext) {
        guard pending > 0, context.channel.isActive else { return }
        // What the channel still buffers falls with every byte the socket takes, partial writes too.
        let buffered = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if queued - Int64(buffered) > sent {
            sent = queued - Int64(buffered)
            lastProgress = .now()
        }
        guard NIODeadline.now() - lastProgress < timeout else { return context.close(promise: nil) }
        scheduleCheck(context)
    }
}
