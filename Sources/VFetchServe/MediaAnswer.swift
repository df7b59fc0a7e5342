import NIOHTTP1
import VFetchCore
import VFetchEngine

/// What a `/media` request for a file is answered, from the remote file's facts and the request's
/// head: a whole answer (an error, a 304, the headers alone for HEAD or an empty range), or the bytes
/// of a range of the cache file under a status and headers. A value, with no I/O.
enum MediaAnswer {
    case reply(Reply)
    /// Send the bytes `range` of the cache file, after these headers.
    case bytes(HTTPResponseStatus, HTTPHeaders, range: Range<Int64>)

    init(remote: RemoteInfo, head: HTTPRequestHead) {
        guard let length = remote.length else {
            self = .reply(.failure(.badGateway, "the origin does not say the file's length; use vfetch get"))
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Accept-Ranges", value: "bytes")
        switch ServedContentType(origin: remote.contentType) {
        case .media(let type):
            headers.add(name: "Content-Type", value: type)
        case .opaque:
            headers.add(name: "Content-Type", value: "application/octet-stream")
            // Saved, never shown; under the origin's name, not "media".
            let name = FileName.choose(url: remote.url, suggested: nil)
            headers.add(name: "Content-Disposition", value: ContentDisposition.attachment(fileName: name))
        case .page(let type):
            self = .reply(.failure(.badGateway, "the origin answered a web page (\(type)), not media; an error or login page?"))
            return
        }
        if let etag = remote.etag { headers.add(name: "ETag", value: etag) }
        if let modified = remote.lastModified { headers.add(name: "Last-Modified", value: modified) }
        switch head.preconditions(etag: remote.etag, lastModified: remote.lastModified) {
        case .proceed: break
        case .notModified:
            headers.remove(name: "Content-Type")
            headers.remove(name: "Content-Disposition")
            self = .reply(Reply(status: .notModified, headers: headers))
            return
        case .preconditionFailed:
            self = .reply(.failure(.preconditionFailed, "a precondition (If-Match or If-Unmodified-Since) failed"))
            return
        }
        let range: Range<Int64>
        let status: HTTPResponseStatus
        // If-Range naming another version of the file: the whole current file, not a part to splice.
        var rangeHeader = head.headers.first(name: "Range")
        if let ifRange = head.headers.first(name: "If-Range"), ifRange != remote.etag || ifRange.hasPrefix("W/"),
            ifRange != remote.lastModified
        {
            rangeHeader = nil
        }
        switch RangeRequest(header: rangeHeader, length: length) {
        case .whole:
            (range, status) = (0..<length, .ok)
        case .part(let part):
            (range, status) = (part, .partialContent)
            headers.add(name: "Content-Range", value: "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)")
        case .unsatisfiable:
            // An error message, not the file: none of the file's headers but its length (as nginx).
            var unsatisfiable = HTTPHeaders()
            unsatisfiable.add(name: "Content-Range", value: "bytes */\(length)")
            self = .reply(.failure(.rangeNotSatisfiable, "range not satisfiable (length \(length))", headers: unsatisfiable))
            return
        }
        headers.add(name: "Content-Length", value: String(range.count))
        guard head.method == .GET, !range.isEmpty else {
            self = .reply(Reply(status: status, headers: headers))
            return
        }
        self = .bytes(status, headers, range: range)
    }
}
