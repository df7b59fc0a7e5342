import NIOHTTP1

/// One decoded request, as the router needs it.
struct RoutedRequest {
    var method: String
    /// The path without the query.
    var path: String
    var headers: HTTPHeaders
    /// The 1-based accept order of its TCP connection.
    var connection: Int
    /// The client's IP address, for `maxResponsesPerClient`.
    var client: String
}

/// The body of a planned response: a slice of a byte array (copy-on-write, so no copy is made).
struct ResponseBody: Sendable {
    var bytes: [UInt8]
    /// Offsets into `bytes`; past its end, `bytes` repeats (an endless body).
    var range: Range<Int>
    /// The published path whose served-byte count these bytes add to (nil for error pages).
    var servedPath: String? = nil
}

/// What to answer to one request: decided under the state lock, then sent by `OriginHandler`.
struct ResponsePlan: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: ResponseBody?
    /// Close the connection at once, sending nothing.
    var closeWithoutAnswer = false
    /// Close the connection after this many body bytes instead of finishing the response.
    var dropAfterBytes: Int? = nil
    /// Pace the body to this rate (nil = as fast as the client reads)…
    var bytesPerSecond: Int? = nil
    /// …after this many bytes sent at once.
    var burstBytes = 0
    /// Write the body in chunks of at most this size, each booked on the shared link (nil = no link cap).
    var linkChunkSize: Int? = nil

    /// A short `text/plain` answer.
    static func text(_ status: Int, _ message: String) -> ResponsePlan {
        let bytes = Array((message + "\n").utf8)
        let headers: HTTPHeaders = [
            "Content-Type": "text/plain; charset=utf-8",
            "Content-Length": "\(bytes.count)",
        ]
        return ResponsePlan(status: status, headers: headers, body: ResponseBody(bytes: bytes, range: bytes.indices))
    }

    /// A refusal by a host at its limit: `status` (with `Retry-After` when given), or a reset.
    static func refusal(status: Int, retryAfter: Int?, reset: Bool) -> ResponsePlan {
        guard !reset else {
            var plan = ResponsePlan(status: 0, headers: [:])
            plan.closeWithoutAnswer = true
            return plan
        }
        var plan = ResponsePlan.text(status, "temporarily unavailable")
        if let seconds = retryAfter {
            plan.headers.add(name: "Retry-After", value: "\(seconds)")
        }
        return plan
    }

    /// A 302 to `location`.
    static func redirect(to location: String) -> ResponsePlan {
        ResponsePlan(status: 302, headers: ["Location": location, "Content-Length": "0"], body: nil)
    }
}

extension OriginState {
    /// Routes `request`, updates the fault counters, records the request, and returns the answer.
    mutating func respond(to request: RoutedRequest, now: Double) -> ResponsePlan {
        var plan: ResponsePlan
        if request.method == "GET" || request.method == "HEAD" {
            plan = route(request, now: now)
        } else {
            plan = .text(405, "method not allowed")
            plan.headers.add(name: "Allow", value: "GET, HEAD")
        }
        if request.method == "HEAD" {
            // Same headers as GET, no body (NIO's encoder refuses body parts for HEAD).
            plan.body = nil
        }
        plan.linkChunkSize = link?.chunkSize
        requests.append(
            OriginRequest(
                method: request.method,
                path: request.path,
                headers: request.headers.map { ($0.name, $0.value) },
                connection: request.connection,
                status: plan.status
            )
        )
        return plan
    }

    private mutating func route(_ request: RoutedRequest, now: Double) -> ResponsePlan {
        let path = request.path
        // A published file wins over the route prefixes.
        if files[path] != nil {
            return serveFile(path, request: request)
        }
        if let rest = path.droppingPrefix("/redirect/") {
            // /redirect/N/P → /redirect/N-1/P … /redirect/0/P → P.
            guard let slash = rest.firstIndex(of: "/"), let hops = Int(rest[..<slash]), hops >= 0 else {
                return .text(404, "not found")
            }
            let target = String(rest[slash...])
            return .redirect(to: hops == 0 ? target : "/redirect/\(hops - 1)\(target)")
        }
        if let rest = path.droppingPrefix("/signed/") {
            let target = "/" + rest
            guard let file = files[target] else { return .text(404, "not found") }
            let token = SignedURL.token(path: target, expiry: now + file.behavior.signedLifetime, seed: seed)
            return .redirect(to: "/s/\(token)\(target)")
        }
        if let rest = path.droppingPrefix("/s/") {
            guard let slash = rest.firstIndex(of: "/") else { return .text(404, "not found") }
            let target = String(rest[slash...])
            guard files[target] != nil else { return .text(404, "not found") }
            guard SignedURL.isValid(String(rest[..<slash]), path: target, now: now, seed: seed) else {
                return .text(403, "signed URL expired or invalid")
            }
            return serveFile(target, request: request)
        }
        return .text(404, "not found")
    }

    /// The answer for the published file at `path`, after its fault switches.
    private mutating func serveFile(_ path: String, request: RoutedRequest) -> ResponsePlan {
        // The host's limit comes first: a request it refuses never reaches the file (nor its counters).
        let host = configuration
        let clientAtLimit = host.maxResponsesPerClient.map { inFlightByClient[request.client, default: 0] >= $0 } ?? false
        if clientAtLimit && (host.resetsBeyondLimit || request.method == "GET") {
            return .refusal(status: host.failStatus, retryAfter: host.retryAfter, reset: host.resetsBeyondLimit)
        }
        guard var file = files[path] else { return .text(404, "not found") }
        defer { files[path] = file }
        let behavior = file.behavior
        file.requestCount += 1

        let atLimit = behavior.maxConcurrentResponses.map { file.inFlight >= $0 } ?? false
        let refused = atLimit && (behavior.resetsBeyondLimit || request.method == "GET")
        if file.requestCount <= behavior.failFirst || refused {
            let reset = refused && behavior.resetsBeyondLimit
            return .refusal(status: behavior.failStatus, retryAfter: behavior.retryAfter, reset: reset)
        }
        if behavior.htmlErrorBody {
            var plan = ResponsePlan.text(200, Self.errorPage)
            plan.headers.replaceOrAdd(name: "Content-Type", value: "text/html; charset=utf-8")
            return plan
        }

        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: behavior.contentType)
        if behavior.sendsValidators {
            headers.add(name: "ETag", value: file.etag)
            headers.add(name: "Last-Modified", value: file.lastModified)
        }
        if let disposition = behavior.contentDisposition {
            headers.add(name: "Content-Disposition", value: disposition)
        }
        // A client's copy still current: 304 and no body (RFC 9110: If-None-Match names the strong ETag).
        if behavior.sendsValidators, request.method == "GET" || request.method == "HEAD",
            let tags = request.headers.first(name: "If-None-Match"),
            tags.split(separator: ",").contains(where: { String($0).trimmingSpaces() == file.etag })
        {
            headers.remove(name: "Content-Type")
            return ResponsePlan(status: 304, headers: headers)
        }

        let total = file.bytes.count
        var status = 200
        var range = 0..<total
        if let endless = behavior.endlessBodyBytes {
            headers.add(name: "Transfer-Encoding", value: "chunked")
            var plan = ResponsePlan(status: 200, headers: headers)
            if request.method == "GET" {
                // Repeated to a whole chunk at least, so the body goes out in chunks of the usual size.
                var pattern = file.bytes.isEmpty ? [0] : file.bytes
                while pattern.count < 64 << 10 { pattern += pattern }
                plan.body = ResponseBody(bytes: pattern, range: 0..<endless, servedPath: path)
                file.inFlight += 1
                inFlightByClient[request.client, default: 0] += 1
            }
            return plan
        }
        if behavior.chunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            if behavior.supportsRanges {
                headers.add(name: "Accept-Ranges", value: "bytes")
                if let value = request.headers.first(name: "Range"), let asked = ByteRangeRequest(header: value),
                    ifRangeHolds(request.headers, for: file)
                {
                    guard let resolved = asked.resolve(total: total) else {
                        var plan = ResponsePlan.text(416, "range not satisfiable")
                        plan.headers.add(name: "Content-Range", value: "bytes */\(total)")
                        return plan
                    }
                    if resolved.lowerBound == 0 || !behavior.answers200ToRanges {
                        range = resolved
                        if resolved.lowerBound != 0 && behavior.wrongContentRange {
                            range = min(resolved.lowerBound + 1, total - 1)..<min(resolved.upperBound + 1, total)
                        }
                        status = 206
                        let contentRange = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"
                        headers.add(name: "Content-Range", value: contentRange)
                    }
                }
            }
            headers.add(name: "Content-Length", value: "\(range.count)")
        }

        var plan = ResponsePlan(status: status, headers: headers)
        plan.bytesPerSecond = changedRate ?? behavior.bytesPerSecond(onConnection: request.connection)
        if plan.bytesPerSecond != nil { plan.burstBytes = behavior.burstBytes ?? 0 }
        if !range.isEmpty && request.method == "GET" {
            plan.body = ResponseBody(bytes: file.bytes, range: range, servedPath: path)
            file.inFlight += 1
            inFlightByClient[request.client, default: 0] += 1
            // Only a response the drop actually cuts short uses up one of `dropTimes`.
            if let drop = behavior.dropAfterBytes, drop < range.count, file.dropsDone < behavior.dropTimes {
                file.dropsDone += 1
                plan.dropAfterBytes = max(0, drop)
            }
        }
        return plan
    }

    /// Whether a ranged request may be answered with a range: true without `If-Range`, else only
    /// when it names the current strong ETag or exactly the current `Last-Modified`.
    private func ifRangeHolds(_ headers: HTTPHeaders, for file: PublishedFile) -> Bool {
        guard let value = headers.first(name: "If-Range")?.trimmingSpaces() else { return true }
        guard file.behavior.sendsValidators else { return false }
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            return value == file.etag
        }
        return value == file.lastModified
    }

    private static let errorPage = """
        <!DOCTYPE html>
        <html><head><title>Service unavailable</title></head>
        <body><h1>Something went wrong</h1><p>The file you asked for cannot be shown right now.</p></body></html>
        """
}

extension String {
    /// The rest of the string after `prefix`, or nil when it does not start with it.
    func droppingPrefix(_ prefix: String) -> Substring? {
        hasPrefix(prefix) ? dropFirst(prefix.count) : nil
    }
}
