import Foundation

/// What a response is, decided from its head before a single byte of its body is written: the one
/// judgement of every answer vfetch gets, whole files' and streams' alike (a file's probe is read by
/// `RemoteFile(probe:)`). What to do about it is the planner's: a whole file falls back to one
/// connection where a range is ignored, a stream reads its segment out of the whole body.
package enum ResponseVerdict: Equatable, Sendable {
    /// 206: bytes `range` of a resource of `total` bytes (nil: not said), from the first byte asked for to
    /// the last, or to the resource's end when the request went past it.
    case part(Range<Int64>, total: Int64?)
    /// 200: the whole resource from its first byte, whatever was asked; `length` when it says.
    case whole(length: Int64?)
    /// 304 to a conditional request: the copy the caller holds is current.
    case notModified
    /// A 206 for other bytes than asked, or without a usable `Content-Range`: never write it.
    case wrongRange(String)
    /// Validators or length differ from the file's: the bytes belong to another file.
    case remoteChanged(String)
    /// 408, 429 or 5xx: try again after a delay, at least `after` seconds when the server said so.
    case retry(status: Int, after: Double?)
    /// 403 or 410, as expired signed URLs answer: resolve the original URL again.
    case expired(status: Int)
    /// Any other status: give up, naming it.
    case fail(status: Int)
}

extension ResponseVerdict {
    /// Judges the answer to a request for the bytes `asked` (nil: the whole resource). With `remote`, the
    /// file a probe found, the answer must be of that file: the same validators and length, and a 206 must
    /// say the length. `conditional`: the request carried validators, so a 304 is an answer.
    package static func check(
        _ head: ResponseHead, asked: Range<Int64>?, remote: RemoteFile? = nil, conditional: Bool = false, now: Date = Date()
    ) -> ResponseVerdict {
        if head.status == 304, conditional { return .notModified }
        if let failure = forStatus(head, now: now) { return failure }
        switch head.status {
        case 206:
            guard let contentRange = head.header("content-range").flatMap(ContentRange.init), let range = contentRange.range else {
                return .wrongRange("206 without a valid Content-Range")
            }
            if let change = difference(from: remote, head, length: contentRange.total) { return .remoteChanged(change) }
            guard let asked else { return .wrongRange("206 to a request without Range") }
            // A request past the resource's end (a segment of unknown length) is answered up to that end.
            let cutAtEnd = contentRange.total.map { range.upperBound == $0 && $0 < asked.upperBound } ?? false
            guard range.lowerBound == asked.lowerBound, range.upperBound == asked.upperBound || cutAtEnd,
                remote == nil || contentRange.total != nil
            else {
                return .wrongRange("asked for bytes \(asked.describedAsHTTP), got \(head.header("content-range") ?? "?")")
            }
            return .part(range, total: contentRange.total)
        case 200:
            let length = head.header("content-length").flatMap { Int64($0) }
            if let change = difference(from: remote, head, length: length) { return .remoteChanged(change) }
            return .whole(length: length)
        default:
            return .fail(status: head.status)
        }
    }

    /// How the answer differs from the file `remote` describes, if it does.
    private static func difference(from remote: RemoteFile?, _ head: ResponseHead, length: Int64?) -> String? {
        guard let remote else { return nil }
        let seen = RemoteFile(
            length: length, acceptsRanges: remote.acceptsRanges, etag: head.header("etag"), lastModified: head.header("last-modified"))
        return remote.difference(from: seen)
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
