import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection to serve (a player's, a page's, an API client's): reads each request,
/// has the `RequestGate` judge it, and hands what the gate admits to the `Router`. Between requests
/// it is idle: first to go when there are too many connections, and closed after `idleTimeout`.
///
/// It runs only on its channel's event loop, so its fields need no lock. NIO's pipelining handler in
/// front of it holds back the next request until this answer's end is written.
final class PlayerConnection: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request bodies (API calls) larger than this are refused.
    static let maxRequestBody = 1 << 20

    /// The gate's rules, the same for every connection (set once the server knows its port).
    private let gate: ServerGate
    private let router: Router
    private let connections: OpenConnections
    /// A connection with no request for this long (or sending one slower) is closed, as nginx's
    /// client_header_timeout and keepalive_timeout do; players open another when they need one.
    private let idleTimeout: TimeAmount
    private var idleTimer: Scheduled<Void>?
    private var requestHead: HTTPRequestHead?
    private var requestBody: [UInt8] = []
    /// Bumped per request, so a late callback of an earlier answer does nothing (`Exchange.isCurrent`).
    private(set) var generation = 0
    /// Stops the answer being sent over time (a cache file's bytes, the event stream) when the
    /// connection goes first.
    private var stopAnswer: (() -> Void)?

    init(gate: ServerGate, router: Router, connections: OpenConnections, idleTimeout: TimeAmount) {
        self.gate = gate
        self.router = router
        self.connections = connections
        self.idleTimeout = idleTimeout
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.accepted(context.channel)
        waitForRequest(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            idleTimer?.cancel()
            idleTimer = nil
            connections.busy(context.channel)
            requestHead = head
            requestBody = []
        case .body(var part):
            if requestBody.count <= Self.maxRequestBody { requestBody += part.readBytes(length: part.readableBytes) ?? [] }
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            generation += 1
            let verdict: RequestGate.Verdict =
                requestBody.count > Self.maxRequestBody
                ? .answer(.failure(.payloadTooLarge, "request body over 1 MiB")) : gate.current.decide(head)
            switch verdict {
            case .answer(let reply):
                Exchange(head: head, body: [], corsHeaders: [], connection: self, context: context).send(reply)
            case .admit(let request):
                let exchange = Exchange(
                    head: head, body: requestBody, corsHeaders: request.corsHeaders, connection: self, context: context)
                router.handle(request, exchange)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        answered()?()
        idleTimer?.cancel()
        connections.closed(context.channel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { answered()?() }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Players reset connections when they seek or quit: close quietly.
        answered()?()
        context.close(promise: nil)
    }

    /// An answer is sent over time until it calls `answered`; `stop` ends it if the connection goes first.
    func answering(until stop: @escaping () -> Void) { stopAnswer = stop }

    /// The answer being sent over time has ended; returns what would have stopped it.
    @discardableResult
    func answered() -> (() -> Void)? {
        defer { stopAnswer = nil }
        return stopAnswer
    }

    /// Between requests: idle, so first to go when there are too many connections, and closed
    /// after `idleTimeout`.
    func waitForRequest(_ context: ChannelHandlerContext) {
        connections.idle(context.channel)
        idleTimer?.cancel()
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { context.close(promise: nil) }
    }
}
