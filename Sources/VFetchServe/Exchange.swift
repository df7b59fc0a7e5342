import Foundation
import NIOCore
import NIOHTTP1
import VFetchCore

/// One admitted request and the ways to answer it, as its route sees them: a `Reply` at once, or a
/// head and then a body over time. On the connection's event loop only.
///
/// Routes answer from callbacks that may come late: once the connection has closed or moved on to
/// another request `isCurrent` is false, and the callback drops its answer.
final class Exchange {
    let head: HTTPRequestHead
    /// The request's body (API calls), at most `PlayerConnection.maxRequestBody` bytes.
    let body: [UInt8]
    private let corsHeaders: [(String, String)]
    private let connection: PlayerConnection
    private let context: ChannelHandlerContext
    private let generation: Int

    init(
        head: HTTPRequestHead, body: [UInt8], corsHeaders: [(String, String)], connection: PlayerConnection,
        context: ChannelHandlerContext
    ) {
        self.head = head
        self.body = body
        self.corsHeaders = corsHeaders
        self.connection = connection
        self.context = context
        generation = connection.generation
    }

    var eventLoop: any EventLoop { context.eventLoop }
    var allocator: ByteBufferAllocator { context.channel.allocator }
    /// The port the request came to, for `ServerProof`.
    var localPort: Int? { context.channel.localAddress?.port }

    /// Whether answers still go out: the connection is open and still on this request.
    var isCurrent: Bool { generation == connection.generation && context.channel.isActive }

    /// Sends `reply` whole; the connection then waits for the next request (or closes, if asked to).
    func send(_ reply: Reply) {
        context.write(wrap(.head(responseHead(reply.status, reply.headers))), promise: nil)
        if let body = reply.body, head.method != .HEAD {
            context.write(wrap(.body(.byteBuffer(allocator.buffer(bytes: body)))), promise: nil)
        }
        finish()
    }

    /// Starts an answer sent over time: its head now, its body in `write`s until `finish`. `stop` is
    /// called if the connection goes first.
    func begin(_ status: HTTPResponseStatus, headers: HTTPHeaders, stop: @escaping () -> Void) {
        connection.answering(until: stop)
        context.writeAndFlush(wrap(.head(responseHead(status, headers))), promise: nil)
    }

    /// Sends part of the body now; the future tells when the socket took it.
    func write(_ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        context.writeAndFlush(wrap(.body(.byteBuffer(buffer))))
    }

    /// Ends the answer; the connection waits for the next request, or closes if this one asked so.
    func finish() {
        connection.answered()
        let written = context.writeAndFlush(wrap(.end(nil)))
        if !head.isKeepAlive { written.assumeIsolated().whenComplete { [context] _ in context.close(promise: nil) } }
        connection.waitForRequest(context)
    }

    /// Ends the answer short by closing the connection: a player sees a short body and asks again.
    func close() { context.close(promise: nil) }

    private func wrap(_ part: HTTPServerResponsePart) -> NIOAny { connection.wrapOutboundOut(part) }

    /// The head of the answer, with what every answer carries: no answer is ever sniffed into a page
    /// or runs as one, the CORS headers the gate decided, and the connection's keep-alive.
    private func responseHead(_ status: HTTPResponseStatus, _ headers: HTTPHeaders) -> HTTPResponseHead {
        var headers = headers
        headers.replaceOrAdd(name: "Date", value: HTTPDate.format(epochSeconds: Int(Date().timeIntervalSince1970)))
        headers.replaceOrAdd(name: "X-Content-Type-Options", value: "nosniff")
        for (name, value) in corsHeaders { headers.replaceOrAdd(name: name, value: value) }
        if !headers.contains(name: "Content-Security-Policy") {
            headers.add(name: "Content-Security-Policy", value: "sandbox; default-src 'none'")
        }
        if !head.isKeepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if head.version.major == 1 && head.version.minor == 0 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        return HTTPResponseHead(version: head.version, status: status, headers: headers)
    }
}

/// What an origin did wrong, in serve's log, secrets redacted.
func logLine(_ line: String) {
    ServeLog.serve.warning("\(redactingCredentials(in: line))")
}
