import CCurl
import Foundation

/// One small HTTP exchange with a local `vfetch serve`'s API, for the command line's client side.
package enum LocalRequest {
    package struct Answer: Sendable {
        package var status: Int
        package var body: [UInt8]
        /// The last value of each response header, by lowercased name.
        package var headers: [String: String]
    }

    /// Sends `method url` with an optional bearer token and JSON body; waits at most `timeout` seconds.
    package static func send(
        _ method: String, _ url: String, token: String?, json: String? = nil, headers extra: [String] = [],
        timeout: Double = 10
    ) throws(DownloadError) -> Answer {
        let easy: EasyHandle
        do { easy = try EasyHandle() } catch { throw .transferFailed("\(error)") }
        var lines = ["Accept: application/json"]
        if let token { lines.append("Authorization: Bearer \(token)") }
        if json != nil { lines.append("Content-Type: application/json") }
        lines += extra
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
            try easy.setHeaderCallback(bodySinkHeader, userdata: Unmanaged.passUnretained(sink).toOpaque())
        } catch {
            throw .transferFailed("\(error)")
        }
        let result = easy.perform()
        withExtendedLifetime(headers) {}
        guard result == CURLE_OK else {
            let message = Curl.describe(result, detail: easy.errorMessage)
            if result == CURLE_COULDNT_CONNECT { throw .connectFailed(message) }
            throw .transferFailed(message)
        }
        return Answer(status: easy.info(CURLINFO_RESPONSE_CODE), body: sink.bytes, headers: sink.headers)
    }
}

/// Collects a response's headers and body; confined to the thread running the request.
private final class BodySink {
    var bytes: [UInt8] = []
    var headers: [String: String] = [:]
}

private let bodySinkHeader: EasyHandle.DataCallback = { data, size, count, userdata in
    let sink = Unmanaged<BodySink>.fromOpaque(userdata!).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    if let colon = line.firstIndex(of: ":") {
        sink.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return size * count
}

private let bodySinkWrite: EasyHandle.DataCallback = { data, size, count, userdata in
    let sink = Unmanaged<BodySink>.fromOpaque(userdata!).takeUnretainedValue()
    sink.bytes += UnsafeRawBufferPointer(start: data, count: size * count)
    return size * count
}
