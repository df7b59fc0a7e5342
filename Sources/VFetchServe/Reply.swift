import NIOHTTP1
import VFetchCore
import VFetchEngine

/// An answer made whole before it is sent: a status, its headers and a body (none for 204 and 304,
/// and an answer to HEAD drops it). What every answer carries (the date, `nosniff`, the sandbox, CORS,
/// `Connection`) is added as it is sent (see `Exchange`).
struct Reply {
    var status: HTTPResponseStatus
    var headers = HTTPHeaders()
    var body: [UInt8]?

    /// `body` as `type`, with its length.
    static func content(_ status: HTTPResponseStatus, type: String, body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) -> Reply {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: type)
        headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        return Reply(status: status, headers: headers, body: body)
    }

    /// An error as a line of text for people, secrets redacted.
    static func failure(_ status: HTTPResponseStatus, _ message: String, headers: HTTPHeaders = HTTPHeaders()) -> Reply {
        let text = "vfetch: \(redactingCredentials(in: message))\n"
        return content(status, type: "text/plain; charset=utf-8", body: Array(text.utf8), headers: headers)
    }

    /// 405, naming the methods the route answers.
    static func notAllowed(_ method: HTTPMethod, allowed: [HTTPMethod]) -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Allow", value: allowed.map(\.rawValue).joined(separator: ", "))
        return failure(.methodNotAllowed, "method \(method.rawValue) not allowed", headers: headers)
    }

    /// 502 for an origin's failure, with the exit code `vfetch get` would have given for it, for
    /// `vfetch play` to exit with.
    static func originFailed(_ failure: OriginFailure) -> Reply {
        var headers = HTTPHeaders()
        if let exitStatus = failure.exitStatus { headers.add(name: "VFetch-Exit-Status", value: String(exitStatus)) }
        return Reply.failure(.badGateway, failure.message, headers: headers)
    }
}

/// Why the origin could not be read, as a player and serve's log are told.
struct OriginFailure: Error, Equatable, CustomStringConvertible {
    var message: String
    /// What `vfetch get` would have exited with; nil when the origin's answer was read but is no playlist.
    var exitStatus: Int32?

    init(_ message: String, exitStatus: Int32? = nil) {
        self.message = message
        self.exitStatus = exitStatus
    }

    /// A download's failure; a web page is told why a request of its own may not connect.
    init(_ error: DownloadError, publicOnly: Bool) {
        message = "origin: \(error)"
        if publicOnly, case .connectFailed = error { message += " (a web page's request reaches only public addresses)" }
        exitStatus = ExitStatus(error).rawValue
    }

    var description: String { message }
}

extension HTTPRequestHead {
    /// What the request's preconditions make of an answer with these validators (only GET and HEAD
    /// get that far).
    func preconditions(etag: String?, lastModified: String?) -> ConditionalRequest {
        ConditionalRequest(
            isGetOrHead: true, ifMatch: headers.first(name: "If-Match"),
            ifUnmodifiedSince: headers.first(name: "If-Unmodified-Since"), ifNoneMatch: headers.first(name: "If-None-Match"),
            ifModifiedSince: headers.first(name: "If-Modified-Since"), etag: etag, lastModified: lastModified)
    }
}
