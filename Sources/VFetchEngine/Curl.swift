import CCurl
import VFetchCore

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

// Every call into libcurl goes through this file, so the whole C surface reads in one place.

/// A failed libcurl call, named by its `CURLcode`.
struct CurlError: Error, CustomStringConvertible {
    let code: CURLcode
    let call: String
    var description: String { "\(call): \(String(cString: curl_easy_strerror(code))) (CURLcode \(code.rawValue))" }
}

enum Curl {
    /// `curl_global_init` once per process, before any handle exists.
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    static func check(_ code: CURLcode, _ call: String) throws {
        if code != CURLE_OK { throw CurlError(code: code, call: call) }
    }

    static func describe(_ code: CURLcode) -> String { String(cString: curl_easy_strerror(code)) }

    /// A failure in libcurl's words, once: the detail of its error buffer, which mostly ends with
    /// what `describe(_:)` says already ("Failed to connect to host port 1 after 0 ms: Couldn't
    /// connect to server"), else both.
    static func describe(_ code: CURLcode, detail: String) -> String {
        let text = describe(code)
        return detail.isEmpty ? text : detail.contains(text) ? detail : "\(text): \(detail)"
    }

    /// A failed transfer's result code as the core names it.
    static func failure(_ code: CURLcode) -> TransferFailure {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .unresolved
        case CURLE_COULDNT_CONNECT: .notConnected
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR: .reset
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: .badURL
        case CURLE_TOO_MANY_REDIRECTS, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_LOGIN_DENIED:
            .permanent
        default: .transient
        }
    }
}

/// One libcurl easy handle: one HTTP request and its options. Confined to the transfer thread.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer
    /// libcurl writes the detailed message of a failure here (`CURLOPT_ERRORBUFFER`).
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    init() throws {
        _ = Curl.initialized
        guard let handle = curl_easy_init() else { throw CurlError(code: CURLE_FAILED_INIT, call: "curl_easy_init") }
        raw = handle
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        try set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try Curl.check(ccurl_easy_setopt_long(raw, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    func set(_ option: CURLoption, _ value: Bool) throws { try set(option, value ? 1 : 0) }

    func set(_ option: CURLoption, offset value: Int64) throws {
        try Curl.check(ccurl_easy_setopt_off(raw, option, curl_off_t(value)), "curl_easy_setopt(\(option.rawValue))")
    }

    /// libcurl copies strings it is given (since 7.17), so `value` need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws {
        try Curl.check(ccurl_easy_setopt_string(raw, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try Curl.check(ccurl_easy_setopt_pointer(raw, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    typealias DataCallback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int

    /// What a write callback returns to pause receiving: libcurl keeps the chunk and stops reading the
    /// socket until `resumeReceiving()`. The corresponding libcurl value is `CURL_WRITEFUNC_PAUSE`.
    static let pauseReceiving = Int(CURL_WRITEFUNC_PAUSE)

    /// Receives again after the write callback paused; libcurl may deliver the chunk it kept before this
    /// returns. The corresponding libcurl call is `curl_easy_pause(CURLPAUSE_CONT)`.
    func resumeReceiving() throws {
        try Curl.check(curl_easy_pause(raw, CURLPAUSE_CONT), "curl_easy_pause")
    }

    /// The corresponding libcurl options are `CURLOPT_WRITEFUNCTION` and `CURLOPT_WRITEDATA`.
    func setWriteCallback(_ callback: DataCallback, userdata: UnsafeMutableRawPointer) throws {
        try Curl.check(ccurl_easy_setopt_write_callback(raw, callback), "CURLOPT_WRITEFUNCTION")
        try set(CURLOPT_WRITEDATA, pointer: userdata)
    }

    /// The corresponding libcurl options are `CURLOPT_HEADERFUNCTION` and `CURLOPT_HEADERDATA`.
    func setHeaderCallback(_ callback: DataCallback, userdata: UnsafeMutableRawPointer) throws {
        try Curl.check(ccurl_easy_setopt_header_callback(raw, callback), "CURLOPT_HEADERFUNCTION")
        try set(CURLOPT_HEADERDATA, pointer: userdata)
    }

    /// Connects only to public addresses, whatever a name resolves to and wherever a redirect
    /// leads: libcurl asks before every connection (`CURLOPT_OPENSOCKETFUNCTION`).
    func refusePrivateAddresses() throws {
        try Curl.check(ccurl_easy_setopt_opensocket_callback(raw, openPublicSocket), "CURLOPT_OPENSOCKETFUNCTION")
    }

    func info(_ item: CURLINFO) -> Int {
        var value = 0
        return ccurl_easy_getinfo_long(raw, item, &value) == CURLE_OK ? value : 0
    }

    func info(string item: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard ccurl_easy_getinfo_string(raw, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Runs the request to completion on the calling thread (`curl_easy_perform`).
    func perform() -> CURLcode { curl_easy_perform(raw) }

    /// The detailed message libcurl left for the last failure, or "".
    var errorMessage: String { String(cString: errorBuffer) }
}

@available(*, unavailable)
extension EasyHandle: Sendable {}

/// A `curl_slist` of request headers; libcurl borrows it, so it lives as long as the handles that use it.
final class HeaderList {
    private(set) var raw: UnsafeMutablePointer<curl_slist>?

    init(_ lines: [String]) {
        for line in lines { raw = curl_slist_append(raw, line) }
    }

    deinit { curl_slist_free_all(raw) }
}

@available(*, unavailable)
extension HeaderList: Sendable {}

/// What the transfers of one download share beyond the multi handle's connection cache: TLS sessions,
/// so a new connection resumes one instead of a full handshake, and DNS answers. Used on the transfer
/// thread only, so it needs no lock callbacks. The corresponding libcurl calls are `curl_share_init`
/// and `curl_share_setopt(CURLSHOPT_SHARE)`.
final class ShareHandle {
    let raw: UnsafeMutableRawPointer

    init() throws {
        _ = Curl.initialized
        guard let handle = curl_share_init() else { throw CurlError(code: CURLE_FAILED_INIT, call: "curl_share_init") }
        raw = handle
        for data in [CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_DNS] {
            let code = ccurl_share_setopt_long(raw, CURLSHOPT_SHARE, Int(data.rawValue))
            if code != CURLSHE_OK { throw CurlError(code: CURLE_FAILED_INIT, call: "curl_share_setopt(\(code.rawValue))") }
        }
    }

    /// Fails (and leaks the share rather than free it under a handle) while an easy handle still uses it.
    deinit { curl_share_cleanup(raw) }
}

@available(*, unavailable)
extension ShareHandle: Sendable {}

/// The libcurl multi handle: drives every transfer from one thread.
final class MultiHandle {
    let raw: UnsafeMutableRawPointer

    init() throws {
        _ = Curl.initialized
        guard let handle = curl_multi_init() else { throw CurlError(code: CURLE_FAILED_INIT, call: "curl_multi_init") }
        raw = handle
    }

    deinit { curl_multi_cleanup(raw) }

    func add(_ easy: EasyHandle) throws {
        let code = curl_multi_add_handle(raw, easy.raw)
        if code != CURLM_OK { throw CurlError(code: CURLE_FAILED_INIT, call: "curl_multi_add_handle(\(code.rawValue))") }
    }

    func remove(_ easy: EasyHandle) { curl_multi_remove_handle(raw, easy.raw) }

    /// Runs whatever work is ready; callbacks fire from inside this call.
    func perform() {
        var running: Int32 = 0
        curl_multi_perform(raw, &running)
    }

    /// Body bytes the transfers' write callbacks took (`Transfer` counts them): what `poll` paces on.
    var bytesDelivered = 0
    private let started = ContinuousClock.now
    private lazy var pacing = WakePacing(now: started.secondsAgo)

    /// Waits for socket activity, a wakeup, or the timeout; while data flows, first lets it gather
    /// as `WakePacing` says (the wait counted against the timeout), when `paced`.
    func poll(timeoutMilliseconds: Int, paced: Bool) {
        var timeout = timeoutMilliseconds
        let pause = paced ? pacing.pause(now: started.secondsAgo, delivered: bytesDelivered, timeout: Double(timeout) / 1000) : 0
        if pause > 0 {
            usleep(UInt32(pause * 1_000_000))
            timeout = max(0, timeout - Int((pause * 1000).rounded(.up)))
        }
        var ready: Int32 = 0
        curl_multi_poll(raw, nil, 0, Int32(timeout), &ready)
        pacing.woke(now: started.secondsAgo)
    }

    /// Finished transfers since the last call, as (easy handle, result).
    func completed() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        var done: [(UnsafeMutableRawPointer, CURLcode)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(raw, &left) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, message.pointee.data.result))
            }
        }
        return done
    }
}

@available(*, unavailable)
extension MultiHandle: Sendable {}

/// Wakes `curl_multi_poll` from any thread (`curl_multi_wakeup` is documented as thread-safe).
func curlMultiWakeup(_ multi: UnsafeMutableRawPointer) {
    curl_multi_wakeup(multi)
}

/// Opens the socket libcurl asks for only when its address is public; otherwise the connection
/// fails as if refused.
private let openPublicSocket: curl_opensocket_callback = { _, _, address in
    guard let address else { return CURL_SOCKET_BAD }
    let (family, type, proto) = (address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    // `addr` is the start of a sockaddr_in or sockaddr_in6 of `addrlen` bytes.
    let start = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \.addr)!
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: Int(address.pointee.addrlen)))
    let isPublic =
        switch family {
        case AF_INET where bytes.count >= 8: NetworkAddress.isPublic(ipv4: Array(bytes[4..<8]))
        case AF_INET6 where bytes.count >= 24: NetworkAddress.isPublic(ipv6: Array(bytes[8..<24]))
        default: false
        }
    guard isPublic else { return CURL_SOCKET_BAD }
    return socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto)
}
