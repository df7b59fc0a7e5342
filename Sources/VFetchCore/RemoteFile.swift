/// What the first response said about the remote file. Every later response must agree with it.
package struct RemoteFile: Sendable, Equatable {
    /// The full length in bytes; nil when the server streams without saying (chunked).
    package var length: Int64?
    /// True when byte ranges can be asked for: a 206 to the probe, or `Accept-Ranges: bytes` with a length.
    package var acceptsRanges: Bool
    package var etag: String?
    package var lastModified: String?
    package var contentType: String?
    /// The file name from `Content-Disposition`, if the server gave one.
    package var suggestedName: String?

    package init(
        length: Int64?, acceptsRanges: Bool, etag: String? = nil, lastModified: String? = nil,
        contentType: String? = nil, suggestedName: String? = nil
    ) {
        self.length = length
        self.acceptsRanges = acceptsRanges
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.suggestedName = suggestedName
    }

    /// Reads the answer to the probe request `Range: bytes=OFFSET-` (`offset` 0 unless an earlier run
    /// saved the start); nil when it is not a usable 200, a 206 from `offset` or an empty file's 416.
    package init?(probe head: ResponseHead, from offset: Int64 = 0) {
        let contentRange = head.header("content-range").flatMap(ContentRange.init)
        switch head.status {
        case 206:
            guard let contentRange, contentRange.range?.lowerBound == offset else { return nil }
            length = contentRange.total
            acceptsRanges = contentRange.total != nil
        case 200:
            length = head.header("content-length").flatMap { Int64($0) }
            let ranges = head.header("accept-ranges")?.lowercased() ?? ""
            acceptsRanges = ranges.contains("bytes") && length != nil
        case 416 where contentRange?.total == 0:
            length = 0
            acceptsRanges = false
        default:
            return nil
        }
        etag = head.header("etag")
        lastModified = head.header("last-modified")
        contentType = head.header("content-type")
        suggestedName = head.header("content-disposition").flatMap(FileName.fromContentDisposition)
    }

    /// True when the server sent a web page where a media file was expected, as error pages sent with 200 do.
    package func isWebPage(forMediaPath path: String) -> Bool {
        guard let type = contentType?.lowercased(), type.hasPrefix("text/html") else { return false }
        return FileName.hasMediaExtension(path)
    }

    /// Why `other` is not the same remote file, or nil when it may be. A validator missing on either side proves nothing.
    package func difference(from other: RemoteFile) -> String? {
        if let length, let otherLength = other.length, length != otherLength {
            return "length changed from \(length) to \(otherLength)"
        }
        if let etag, let otherETag = other.etag, etag != otherETag {
            return "ETag changed from \(etag) to \(otherETag)"
        }
        if let lastModified, let otherDate = other.lastModified, lastModified != otherDate {
            return "Last-Modified changed from \(lastModified) to \(otherDate)"
        }
        return nil
    }
}
