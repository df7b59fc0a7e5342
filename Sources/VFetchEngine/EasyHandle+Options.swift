import CCurl

extension EasyHandle {
    /// What every request vfetch makes shares: HTTP(S) only, redirects (at most 20), the connect
    /// timeout and stall detection, the request headers, and the user's identity, TLS and proxy options.
    func configure(url: String, options: DownloadOptions, headers: HeaderList) throws {
        try set(CURLOPT_URL, url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_FOLLOWLOCATION, true)
        try set(CURLOPT_MAXREDIRS, 20)
        try set(CURLOPT_NOSIGNAL, true)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000))
        // A transfer that gets no byte for `stallTimeout` seconds fails (and is retried).
        try set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try set(CURLOPT_LOW_SPEED_TIME, max(1, Int(options.stallTimeout.rounded(.up))))
        try set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headers.raw))
        if let agent = options.userAgent { try set(CURLOPT_USERAGENT, agent) }
        if let referer = options.referer { try set(CURLOPT_REFERER, referer) }
        if let cookies = options.cookieFile { try set(CURLOPT_COOKIEFILE, cookies) }
        if let credentials = options.credentials { try set(CURLOPT_USERPWD, credentials) }
        if let proxy = options.proxy { try set(CURLOPT_PROXY, proxy) }
        if options.publicAddressesOnly { try refusePrivateAddresses() }
        if options.insecure {
            try set(CURLOPT_SSL_VERIFYPEER, false)
            try set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let bundle = options.caCertificates { try set(CURLOPT_CAINFO, bundle) }
        try useHTTP2(options.httpVersion != .http1_1, url: url)
    }

    /// HTTP/2 where an https server offers it, or HTTP/1.1. Over https a request for HTTP/2 waits for a
    /// connection being set up to say whether it multiplexes, rather than open one more beside it (the
    /// probe and the tail of `--playback-order` start together). The corresponding libcurl options are
    /// `CURLOPT_HTTP_VERSION` and `CURLOPT_PIPEWAIT`.
    func useHTTP2(_ http2: Bool, url: String) throws {
        try set(CURLOPT_HTTP_VERSION, Int(http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1))
        try set(CURLOPT_PIPEWAIT, http2 && url.lowercased().hasPrefix("https:"))
    }
}

extension HeaderList {
    /// The headers of vfetch's requests: the user's, and identity encoding, since byte ranges count
    /// bytes of the stored representation and the server must never compress them; `If-Range` when
    /// continuing a download.
    convenience init(requestsFor options: DownloadOptions, ifRange: String? = nil) {
        self.init(["Accept-Encoding: identity"] + (ifRange.map { ["If-Range: \($0)"] } ?? []) + options.headers)
    }
}
