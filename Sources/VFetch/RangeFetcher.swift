import CCurl
import Foundation
import VFetchCore
import VFetchStreams

/// Fetches a few byte ranges of a remote file into a sparse local copy: enough for a media probe to
/// read a header and an index without downloading the file.
public final class RangeFetcher: @unchecked Sendable {
    // Used from one thread at a time: each call blocks until its request is done.
    public let url: String
    public let options: DownloadOptions
    public private(set) var length: Int64?
    public private(set) var requests = 0
    /// The sparse local copy, a private file with no name; its present bytes are `present`.
    private let file: OutputFile

    /// The byte ranges fetched so far.
    public var present: [Range<Int64>] { file.written.ranges }
    public var bytesFetched: Int64 { file.bytesWritten }

    public init(url: String, options: DownloadOptions = DownloadOptions()) throws(DownloadError) {
        guard isFetchableURL(url) else { throw .badURL(url) }
        self.url = url
        self.options = options
        file = try OutputFile(unnamedIn: NSTemporaryDirectory(), prefix: "vfetch-probe-")
    }

    /// Fetches `range` (clipped to the file). The first call learns the length from `Content-Range`.
    public func fetch(_ range: Range<Int64>) throws(DownloadError) {
        var range = range
        if let length { range = range.clamped(to: 0..<length) }
        guard !range.isEmpty else { return }
        let easy: EasyHandle
        do { easy = try EasyHandle() } catch { throw .transferFailed("\(error)") }
        let sink = RangeSink(file: file, url: url, offset: range.lowerBound, limit: range.upperBound - range.lowerBound)
        let headers = HeaderList(requestsFor: options)
        do {
            try easy.configure(url: url, options: options, headers: headers)
            try easy.set(CURLOPT_RANGE, range.describedAsHTTP)
            let userdata = Unmanaged.passUnretained(sink).toOpaque()
            try easy.setWriteCallback(rangeSinkWrite, userdata: userdata)
            try easy.setHeaderCallback(rangeSinkHeader, userdata: userdata)
        } catch {
            throw .transferFailed("\(error)")
        }
        requests += 1
        let result = easy.perform()
        withExtendedLifetime(headers) {}
        if let failure = sink.failure { throw failure }
        guard result == CURLE_OK || (result == CURLE_WRITE_ERROR && sink.received >= sink.limit) else {
            switch result {
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT:
                throw .connectFailed("\(Curl.describe(result)): \(easy.errorMessage)")
            default: throw .transferFailed("\(Curl.describe(result)): \(easy.errorMessage)")
            }
        }
        if length == nil {
            guard let found = RemoteFile(probe: sink.head) else {
                throw .httpStatus(sink.head.status, url: url)
            }
            if StreamFormat.detect(contentType: found.contentType, path: URL(string: url)?.path ?? "", firstBytes: []) != nil
                || StreamFormat.detect(
                    contentType: found.contentType, path: "", firstBytes: file.bytes(at: 0, count: min(1024, Int(sink.received))) ?? [])
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

/// Where one ranged response goes: checked, then written at its offset, never past what was asked.
private final class RangeSink {
    let file: OutputFile
    let url: String
    let offset: Int64
    let limit: Int64
    var head = ResponseHead()
    var received: Int64 = 0
    var failure: DownloadError?

    init(file: OutputFile, url: String, offset: Int64, limit: Int64) {
        self.file = file
        self.url = url
        self.offset = offset
        self.limit = limit
    }
}

private let rangeSinkHeader: EasyHandle.DataCallback = { data, size, count, userdata in
    let sink = Unmanaged<RangeSink>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    guard sink.head.add(line: line), sink.head.status >= 200, !sink.head.isRedirect else { return size * count }
    // Only the bytes asked (a 206), or the whole file when asking from 0 (a 200), may be written.
    switch ResponseVerdict.check(sink.head, asked: sink.offset..<(sink.offset + sink.limit)) {
    case .part: break
    case .whole where sink.offset == 0: break
    case .retry(let status, _), .expired(let status), .fail(let status):
        sink.failure = .httpStatus(status, url: sink.url)
        return 0
    default:
        sink.failure = .badResponse("the server did not answer the range request as asked")
        return 0
    }
    return size * count
}

private let rangeSinkWrite: EasyHandle.DataCallback = { data, size, count, userdata in
    let sink = Unmanaged<RangeSink>.fromOpaque(userdata!).takeUnretainedValue()
    let take = Int(min(Int64(size * count), sink.limit - sink.received))
    do throws(DownloadError) {
        try sink.file.write(UnsafeRawBufferPointer(start: data, count: take), at: sink.offset + sink.received)
    } catch {
        sink.failure = error
        return 0
    }
    sink.received += Int64(take)
    // A 200 streams the whole file: stop once the asked-for part is in.
    return sink.received >= sink.limit && take < size * count ? 0 : size * count
}
