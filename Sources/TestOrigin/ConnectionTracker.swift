import NIOCore

/// Sits on the listening channel and numbers each accepted connection in accept order.
///
/// Child channels are initialised on several event loops, so only the listening channel sees
/// connections in the order they were accepted.
final class ConnectionTracker: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let core: OriginCore

    init(core: OriginCore) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.register(unwrapInboundIn(data))
        context.fireChannelRead(data)
    }
}
