import CCurl
import Foundation
import VFetchCore
import VFetchStreams

/// Fetches a few byte ranges of a remote file into a sparse local copy: enough for a media probe to
/// read a header and an index without downloading the file. Each range is one request on its driver,
/// which keeps the connection for the next.
public final class RangeFetcher: @unchecked Sendable {
    // Used from one thread at a time: each call blocks until its request is done.
    public let url: String
    public let options: DownloadOptions
    public private(set) var length: Int64?
    public private(set) var requests = 0
    /// The sparse local copy, a private file with no name; its present bytes are `present`.
    private let file: OutputFile
    private let driver: Driver
    private let headers: HeaderList

    /// The byte ranges fetched so far.
    public var present: [Range<Int64>] { file.written.ranges }
    public var bytesFetched: Int64 { file.bytesWritten }

    public init(url: String, options: DownloadOptions = DownloadOptions()) throws(DownloadError) {
        guard isFetchableURL(url) else { throw .badURL(url) }
        self.url = url
        self.options = options
        file = try OutputFile(unnamedIn: NSTemporaryDirectory(), prefix: "vfetch-probe-")
        driver = try Driver(options: options, signal: CancelSignal())
        headers = HeaderList(requestsFor: options)
    }

    /// Fetches `range` (clipped to the file). The first call learns the length from `Content-Range`.
    public func fetch(_ range: Range<Int64>) throws(DownloadError) {
        var range = range
        if let length { range = range.clamped(to: 0..<length) }
        guard !range.isEmpty else { return }
        let read = RangeRead(url: url, range: range, file: file, headers: headers)
        requests += 1
        driver.run(read)
        let head = try read.answer()
        if length == nil {
            guard let found = RemoteFile(probe: head) else {
                throw .httpStatus(head.status, url: url)
            }
            if StreamFormat.detect(contentType: found.contentType, path: URL(string: url)?.path ?? "", firstBytes: []) != nil
                || StreamFormat.detect(
                    contentType: found.contentType, path: "", firstBytes: file.bytes(at: 0, count: min(1024, Int(read.received))) ?? [])
                    != nil
            {
                throw .segmentedStream(url)
            }
            length = found.length
            if let length { try file.setLength(length, preallocate: false) }
        }
    }

    /// A new descriptor of the local copy, to read it elsewhere; the caller closes it.
    package func duplicateDescriptor() -> Int32 { file.duplicateDescriptor() }

    /// Reads present bytes of the local copy; nil when any of them is missing.
    public func read(_ offset: Int64, _ count: Int) -> [UInt8]? { file.bytes(at: offset, count: count) }
}

/// One request of a `RangeFetcher`: the bytes asked (a 206), or the start of the whole file when asking
/// from 0 (a 200), written at their offsets, never past what was asked.
private final class RangeRead: DriverJob {
    let url: String
    let range: Range<Int64>
    let file: OutputFile
    let headers: HeaderList
    private var started = false
    private var end: TransferEnd?
    private var head = ResponseHead()
    private(set) var received: Int64 = 0

    init(url: String, range: Range<Int64>, file: OutputFile, headers: HeaderList) {
        self.url = url
        self.range = range
        self.file = file
        self.headers = headers
    }

    func turn(_ driver: Driver) -> Bool {
        guard end == nil else { return false }
        if !started {
            do {
                started = try driver.start(url, bytes: .range(range), headers: headers) != nil
            } catch {
                end = .failed(.transfer(.permanent, message: "\(error)"))
                return false
            }
        }
        return true
    }

    func responded(_ transfer: Transfer) -> Bool {
        head = transfer.head
        switch ResponseVerdict.check(transfer.head, asked: range) {
        case .part:
            break
        case .whole where range.lowerBound == 0:
            break
        case .retry(let status, let after):
            transfer.cut = .refused(.status(status, retryAfter: after))
            return false
        case .expired(let status), .fail(let status):
            transfer.cut = .refused(.status(status, retryAfter: nil))
            return false
        default:
            transfer.cut = .refused(.invalid("the server did not answer the range request as asked"))
            return false
        }
        transfer.sink = file
        return true
    }

    func received(_ count: Int, from transfer: Transfer) -> BodyStep {
        let take = Int(min(Int64(count), Int64(range.count) - received))
        let offset = range.lowerBound + received
        received += Int64(take)
        // A 200 sends the whole file: it stops once the part asked for is in.
        return BodyStep(keep: 0..<take, offset: offset, then: take < count ? .enough : nil)
    }

    func ended(_ transfer: Transfer, _ end: TransferEnd) {
        // Refused at the host's limit while other downloads of this process use it: asked again when there is room.
        if case .hostLimit = end {
            started = false
            received = 0
            return
        }
        self.end = end
    }

    func settle(_ driver: Driver) -> Double { end == nil ? 0.1 : 0 }

    func wanted(onHost host: String) -> Int { end == nil ? 1 : 0 }

    /// The answer's head, once the bytes asked for are in; or why they are not.
    func answer() throws(DownloadError) -> ResponseHead {
        switch end {
        case .finished?: return head
        case .failed(.status(let status, _))?: throw .httpStatus(status, url: url)
        case .failed(.transfer(let kind, let message))?:
            throw kind == .unresolved || kind == .notConnected ? .connectFailed(message) : .transferFailed(message)
        case .failed(.invalid(let reason))?: throw .badResponse(reason)
        case .unwritable(let error)?: throw error
        case .stopped?, .hostLimit?, nil: throw .interrupted
        }
    }
}

/// The local copy is written at the offsets the driver is told, with nothing held back.
extension OutputFile: ByteSink {
    func flush() {}
}
