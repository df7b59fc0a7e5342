import ArgumentParser
import VFetchCore
import VFetchEngine

extension RequestHeader {
    /// Refuses, in one line, a `-H` value libcurl could not send as written: no line break, no NUL, a
    /// `Name: value` shape. The line is shown escaped, so its line breaks do not break the message,
    /// and without the value of a credential header (`redactedHeader`).
    static func validate(_ lines: [String]) throws {
        for line in lines {
            if let problem = problem(line) { throw ValidationError("header \(String(reflecting: redactedHeader(line))) \(problem)") }
        }
    }

    /// Refuses a value of a header option (`--user-agent`, `--referer`) with a line break or NUL in it.
    static func validate(_ value: String?, option: String) throws {
        guard let value, value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else { return }
        throw ValidationError("--\(option) \(String(reflecting: value)) must not contain CR, LF or NUL")
    }
}

/// How a command's requests go out, as curl's options say: `get`, and `info URL`, which must be let
/// in where `get` is.
struct RequestOptions: ParsableArguments {
    @Option(name: [.customShort("H"), .long], help: "Extra request header 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(name: .customLong("user-agent"), help: "User-Agent header.")
    var userAgent: String?

    @Option(help: "Referer header.")
    var referer: String?

    @Option(help: "Send cookies from this Netscape-format cookie file.")
    var cookie: String?

    @Option(help: "USER:PASSWORD for HTTP authentication.")
    var user: String?

    @Option(help: "Proxy URL (otherwise http_proxy, https_proxy, all_proxy, no_proxy apply).")
    var proxy: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify TLS certificates.")
    var insecure = false

    @Option(help: "PEM file of CA certificates to trust.")
    var cacert: String?

    func validate() throws {
        try RequestHeader.validate(header)
        try RequestHeader.validate(userAgent, option: "user-agent")
        try RequestHeader.validate(referer, option: "referer")
    }

    func apply(to options: inout DownloadOptions) {
        options.headers = header
        if let userAgent { options.userAgent = userAgent }
        options.referer = referer
        options.cookieFile = cookie
        options.credentials = user
        options.proxy = proxy
        options.insecure = insecure
        options.caCertificates = cacert
    }
}
