/// What a request's preconditions (RFC 9110 13.2.2: `If-Match`, `If-Unmodified-Since`,
/// `If-None-Match`, `If-Modified-Since`) make of it, given the file's validators. `If-Range` is
/// the range's business, not a precondition.
package enum ConditionalRequest: Equatable, Sendable {
    case proceed
    /// 304: the client's copy is current.
    case notModified
    /// 412: a condition of a client that writes or resumes failed.
    case preconditionFailed

    package init(
        isGetOrHead: Bool, ifMatch: String?, ifUnmodifiedSince: String?, ifNoneMatch: String?, ifModifiedSince: String?,
        etag: String?, lastModified: String?
    ) {
        let modified = lastModified.flatMap(HTTPDate.parse)
        if let ifMatch {
            // Strong comparison: a weak ETag never matches.
            guard ifMatch.trimmingSpaces() == "*" || Self.tags(ifMatch).contains(where: { $0 == etag && !$0.hasPrefix("W/") }) else {
                self = .preconditionFailed
                return
            }
        } else if let since = ifUnmodifiedSince.flatMap(HTTPDate.parse), let modified, modified > since {
            self = .preconditionFailed
            return
        }
        if let ifNoneMatch {
            // Weak comparison: W/"x" and "x" are the same.
            let current = etag.map(Self.opaque)
            let matches =
                ifNoneMatch.trimmingSpaces() == "*" || Self.tags(ifNoneMatch).contains { current != nil && Self.opaque($0) == current }
            self = matches ? (isGetOrHead ? .notModified : .preconditionFailed) : .proceed
            return
        }
        if isGetOrHead, let since = ifModifiedSince.flatMap(HTTPDate.parse), let modified, modified <= since {
            self = .notModified
            return
        }
        self = .proceed
    }

    private static func tags(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }

    private static func opaque(_ tag: String) -> String { tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
}
