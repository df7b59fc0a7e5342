import VFetchCore

/// One HTTP request in flight: its easy handle and what has been learned of its response.
/// Confined to the transfer thread.
final class Transfer {
    /// Why the engine aborted this transfer from a callback, read when libcurl reports it done.
    enum Abort {
        /// On the scheduler's word: its part is written, it lost a race, or it was too slow.
        case stopped
        /// The response said to try again (408, 429, 5xx).
        case retry(status: Int, after: Double?)
        /// 403/410: the URL may have expired.
        case expired(status: Int)
        /// The engine recorded a fatal error.
        case fatal
    }

    /// The scheduler's name for it; the probe gets one only once its response is understood.
    var id: TransferID?
    let easy: EasyHandle
    let url: String
    /// The bytes asked for; nil for the whole file.
    let range: Range<Int64>?
    let isProbe: Bool
    /// `--stream`'s request for the end of the file, sent with the probe before the length is known.
    var isTail = false
    /// The tail answered before the probe: it is bound to its segment once the probe has answered.
    var waitsForProbe = false
    var head = ResponseHead()
    var abort: Abort?
    /// True once its response was judged to be the bytes asked for.
    var accepted = false
    /// True once a byte of the body arrived.
    var delivering = false
    /// When it was paused (see `Engine.admit`); nil while it may receive.
    var pausedSince: Double?
    /// Received bytes on their way to the file.
    let pending = WriteBuffer(capacity: 256 << 10)
    unowned let engine: Engine

    init(id: TransferID?, url: String, range: Range<Int64>?, isProbe: Bool, engine: Engine) throws {
        self.id = id
        self.url = url
        self.range = range
        self.isProbe = isProbe
        self.engine = engine
        easy = try EasyHandle()
    }
}

@available(*, unavailable)
extension Transfer: Sendable {}

// libcurl callbacks: they capture nothing; the userdata is the Transfer, unretained because the
// engine's table of running transfers keeps it alive for as long as libcurl may call back.

let transferWriteCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    guard transfer.engine.admit(size * count, from: transfer) else { return EasyHandle.pauseReceiving }
    transfer.engine.multi.bytesDelivered += size * count
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    return transfer.engine.receive(bytes, from: transfer) ? size * count : 0
}

let transferHeaderCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    let blockEnded = transfer.head.add(line: line)
    // Redirects are followed by libcurl and informational responses are skipped; judge the final response.
    guard blockEnded, transfer.head.status >= 200, !transfer.head.isRedirect else { return size * count }
    return transfer.engine.responseArrived(transfer) ? size * count : 0
}
