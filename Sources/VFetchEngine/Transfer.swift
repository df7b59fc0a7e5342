import CCurl
import VFetchCore

/// One HTTP request in flight: its easy handle, what has been learned of its response, and where its
/// bytes go. Its driver runs it; its job names it and judges it. Confined to the driver's thread.
final class Transfer {
    /// The bytes a request asks for (its `Range` header).
    enum Bytes: Equatable {
        /// From an offset to the end: `bytes=N-`.
        case from(Int64)
        /// The last `N` bytes, whatever the length: `bytes=-N`.
        case last(Int64)
        case range(Range<Int64>)
    }

    /// Why a callback stopped the transfer, read when libcurl reports it done.
    enum Cut: Equatable {
        /// On the job's word: its bytes are written, it lost a race, it was too slow.
        case stopped
        /// The job has every byte it wanted of the answer (a 200 read up to the end of the range asked).
        case enough
        /// The answer is not one the job can use, or asks to be tried again later.
        case refused(RequestFailure)
    }

    /// The job's name for it (its planner's transfer or piece); nil until the job gives it one.
    var name: Int?
    let easy: EasyHandle
    let url: String
    let bytes: Bytes?
    /// The request's headers: libcurl borrows them for as long as the transfer runs.
    let headers: HeaderList
    /// Its place in the budget of the host it asked.
    let claim: HostConnections.Claim
    var head = ResponseHead()
    var cut: Cut?
    /// Where the bytes the job keeps are written; the job sets it when it accepts the answer.
    var sink: (any ByteSink)?
    /// A write to `sink` failed: the transfer stopped, and the job learns why.
    var writeError: DownloadError?
    /// True once its response was accepted by the job.
    var accepted = false
    /// True once a byte of the body arrived.
    var delivering = false
    /// The job holds its body back (paused) until it lets go (see `Driver.admit`).
    var held = false
    /// When it was paused; nil while it may receive.
    var pausedSince: Double?
    unowned let driver: Driver

    init(name: Int?, url: String, bytes: Bytes?, headers: HeaderList, claim: HostConnections.Claim, driver: Driver) throws {
        self.name = name
        self.url = url
        self.bytes = bytes
        self.headers = headers
        self.claim = claim
        self.driver = driver
        easy = try EasyHandle()
    }

    /// The bytes of the resource asked for, when the request named both ends.
    var asked: Range<Int64>? { if case .range(let range) = bytes { range } else { nil } }

    /// Where redirects led.
    var finalURL: String { easy.info(string: CURLINFO_EFFECTIVE_URL) ?? url }
}

@available(*, unavailable)
extension Transfer: Sendable {}

/// Where a transfer's kept bytes go, each at its offset: a file's write buffer, a segment's file, a
/// document in memory.
protocol ByteSink: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(DownloadError)
    /// Writes out what it holds back; called when its transfer leaves libcurl.
    func flush() throws(DownloadError)
}

/// What the job keeps of a chunk of a body: the bytes `keep` (offsets into the chunk), written at
/// `offset`; and whether the transfer stops after it.
struct BodyStep {
    var keep: Range<Int> = 0..<0
    var offset: Int64 = 0
    var then: Transfer.Cut?

    /// Drop the chunk and stop the transfer.
    static func stop(_ cut: Transfer.Cut) -> BodyStep { BodyStep(then: cut) }
}

// libcurl callbacks: they capture nothing; the userdata is the Transfer, unretained because the
// driver's table of running transfers keeps it alive for as long as libcurl may call back.

let transferWriteCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    let driver = transfer.driver
    // Bytes before an answer the job took (a redirect's page, a refusal's text) are nobody's.
    guard transfer.accepted else { return size * count }
    guard driver.admit(size * count, from: transfer) else { return EasyHandle.pauseReceiving }
    driver.multi.bytesDelivered += size * count
    transfer.delivering = true
    let step = driver.job.received(size * count, from: transfer)
    if !step.keep.isEmpty, let sink = transfer.sink {
        let chunk = UnsafeRawBufferPointer(start: data, count: size * count)
        do throws(DownloadError) {
            try sink.write(UnsafeRawBufferPointer(rebasing: chunk[step.keep]), at: step.offset)
        } catch {
            transfer.writeError = error
            return 0
        }
    }
    guard let cut = step.then else { return size * count }
    transfer.cut = cut
    return 0
}

let transferHeaderCallback: EasyHandle.DataCallback = { data, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    let blockEnded = transfer.head.add(line: line)
    // Redirects are followed by libcurl and informational responses are skipped; judge the final response.
    guard blockEnded, transfer.head.status >= 200, !transfer.head.isRedirect else { return size * count }
    guard transfer.driver.responded(transfer) else { return 0 }
    return size * count
}
