import CCurl

/// One small HTTP exchange with a local `vfetch serve`'s API, for the command line's client side.
package enum LocalRequest {
    package struct Answer: Sendable {
        package var status: Int
        package var body: [UInt8]
    }

    /// Sends `method url` with an optional bearer token and JSON body; waits at most `timeout` seconds.
    package static func send(
        _ method: String, _ url: String, token: String?, json: String? = nil, timeout: Double = 10
    ) throws(DownloadError) -> Answer {
        let easy: EasyHandle
        do { easy = try EasyHandle() } catch { throw .transferFailed("\(error)") }
        var lines = ["Accept: application/json"]
        if let token { lines.append("Authorization: Bearer \(token)") }
        if json != nil { lines.append("Content-Type: application/json") }
        let headers = HeaderList(lines)
        let sink = BodySink()
        do {
            try easy.set(CURLOPT_URL, url)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_NOSIGNAL, true)
            // The token goes to the server and nowhere else, whatever http_proxy says.
            try easy.set(CURLOPT_NOPROXY, "*")
            try easy.set(CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
            try easy.set(CURLOPT_CUSTOMREQUEST, method)
            try easy.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headers.raw))
            if let json { try easy.set(CURLOPT_COPYPOSTFIELDS, json) }
            try easy.setWriteCallback(bodySinkWrite, userdata: Unmanaged.passUnretained(sink).toOpaque())
        } catch {
            throw .transferFailed("\(error)")
        }
        let result = easy.perform()
        withExtendedLifetime(headers) {}
        guard result == CURLE_OK else {
            let message = "\(Curl.describe(result)): \(easy.errorMessage)"
            if result == CURLE_COULDNT_CONNECT { throw .connectFailed(message) }
            throw .transferFailed(message)
        }
        return Answer(status: easy.info(CURLINFO_RESPONSE_CODE), body: sink.bytes)
    }
}

/// Collects a response body; confined to the thread running the request.
private final class BodySink {
    var bytes: [UInt8] = []
}

private let bodySinkWrite: EasyHandle.DataCallback = { data, size, count, userdata in
    let sink = Unmanaged<BodySink>.fromOpaque(userdata!).takeUnretainedValue()
    sink.bytes += UnsafeRawBufferPointer(start: data, count: size * count)
    return size * count
}
