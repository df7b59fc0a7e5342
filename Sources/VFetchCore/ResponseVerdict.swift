import Foundation

/// What to do with a response, decided before a single byte of its body is written.
package enum ResponseVerdict: Equatable, Sendable {
    /// The body is the bytes asked for: write it.
    case accept
    /// The server ignored or garbled the Range (200, or a Content-Range other than asked): never write it; use one connection.
    case rangeIgnored(String)
    /// Validators or length differ from the first response: the bytes belong to another file.
    case remoteChanged(String)
    /// 408, 429 or 5xx: try again after a delay, at least `after` seconds when the server said so.
    case retry(status: Int, after: Double?)
    /// 403 or 410, as expired signed URLs answer: resolve the original URL again.
    case expired(status: Int)
    /// Any other status: give up, naming it.
    case fail(status: Int)
}

extension ResponseVerdict {
    /// Checks a response to a request for `asked` (nil: the whole file) against the file the probe found.
    package static func check(_ head: ResponseHead, asked: Range<Int64>?, remote: RemoteFile, now: Date = Date())
        -> ResponseVerdict
    {
        if let failure = forStatus(head, now: now) { return failure }
        var seen = RemoteFile(
            length: nil, acceptsRanges: remote.acceptsRanges, etag: head.header("etag"),
            lastModified: head.header("last-modified"))
        switch head.status {
        case 206:
            guard let contentRange = head.header("content-range").flatMap(ContentRange.init) else {
                return .rangeIgnored("206 without a valid Content-Range")
            }
            seen.length = contentRange.total
            if let change = remote.difference(from: seen) { return .remoteChanged(change) }
            guard let asked else { return .rangeIgnored("206 to a request without Range") }
            guard contentRange.range == asked, contentRange.total != nil else {
                return .rangeIgnored(
                    "asked for bytes \(asked.describedAsHTTP), got \(head.header("content-range") ?? "?")")
            }
            return .accept
        case 200:
            seen.length = head.header("content-length").flatMap { Int64($0) }
            if let change = remote.difference(from: seen) { return .remoteChanged(change) }
            if let asked, asked.lowerBound > 0 { return .rangeIgnored("200 with the whole file to a ranged request") }
            return .accept
        default:
            return .fail(status: head.status)
        }
    }

    /// The verdict an error status gets whatever was asked, or nil for 2xx.
    package static func forStatus(_ head: ResponseHead, now: Date = Date()) -> ResponseVerdict? {
        switch head.status {
        case 200..<300: return nil
        case 408, 429, 500..<600:
            return .retry(status: head.status, after: head.header("retry-after").flatMap { retryAfter($0, now: now) })
        case 403, 410: return .expired(status: head.status)
        default: return .fail(status: head.status)
        }
    }

    /// Seconds to wait from a `Retry-After` value: delay-seconds or an HTTP-date.
    package static func retryAfter(_ value: String, now: Date) -> Double? {
        let trimmed = value.trimmingSpaces()
        if let seconds = Int(trimmed) { return Double(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

extension Range<Int64> {
    /// The range as HTTP writes it: inclusive `first-last`.
    package var describedAsHTTP: String { "\(lowerBound)-\(upperBound - 1)" }
}
