import VFetchCore

/// Why a download stopped. Each case has its own exit code in the `vfetch` command.
public enum DownloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The URL cannot be fetched over HTTP(S).
    case badURL(String)
    /// The host could not be resolved or connected to.
    case connectFailed(String)
    /// The server answered with an error status.
    case httpStatus(Int, url: String)
    /// The server answered with an error status whose `Retry-After` asks for a longer wait than
    /// `DownloadOptions.maxRetryWait` (`limit`).
    case retryAfterTooLong(Int, url: String, seconds: Double, limit: Double)
    /// The remote file is no longer the one the download started with.
    case remoteChanged(String)
    /// The server answered with something that is not the file (an HTML error page, a broken Content-Range).
    case badResponse(String)
    /// The output cannot be created or written.
    case outputNotWritable(String)
    /// A file already exists at the output path.
    case outputExists(String)
    /// The output is already the remote file, as an earlier run finished it (a file: same length and
    /// Last-Modified; a stream: its output with no parts folder beside it): nothing to do. Exit code 0.
    case alreadyComplete(String)
    /// Another vfetch is downloading to the same file.
    case busy(String)
    /// No unfinished download is recorded at this output path.
    case noDownload(String)
    /// The manifest of an unfinished download cannot be read.
    case badManifest(String)
    /// The disk filled up.
    case diskFull(String)
    /// The finished file's checksum is not the one expected.
    case checksumMismatch(expected: String, actual: String)
    /// The download was stopped by the user (Ctrl-C).
    case interrupted
    /// The transfer failed and retries did not help.
    case transferFailed(String)
    /// A segment of a stream (or its init section or key) could not be fetched, after retries.
    case segmentUnavailable(String, reason: String)
    /// The URL is an HLS playlist or a DASH manifest, not a file: `StreamDownload` fetches it.
    case segmentedStream(String)
    /// The URL is a Metalink document (RFC 5854), not a file: `Download` fetches the file it describes.
    case metalink(String)
    /// A stream vfetch cannot save: encrypted with DRM or SAMPLE-AES.
    case unsupportedStream(String)
    /// No track of the stream matches `DownloadOptions.format`, or the output's container cannot hold
    /// the chosen tracks: found before any segment is fetched.
    case formatUnavailable(String)

    /// What went wrong, in one line, with the password of any URL in it replaced by `***` (see
    /// `redactingCredentials(in:)`): errors are shown, logged and sent to players and API clients.
    public var description: String { redactingCredentials(in: plainDescription) }

    private var plainDescription: String {
        switch self {
        case .badURL(let url): "bad URL: \(url)"
        case .connectFailed(let reason): "cannot connect: \(reason)"
        case .httpStatus(let status, let url): "HTTP \(status) \(Self.reason(status)) from \(url)"
        case .retryAfterTooLong(let status, let url, let seconds, let limit):
            "HTTP \(status) \(Self.reason(status)) from \(url) says Retry-After: \(Self.seconds(seconds.rounded(.up))) s, "
                + "longer than vfetch waits (--max-retry-wait \(Self.seconds(limit)))"
        case .remoteChanged(let reason): "remote file changed: \(reason)"
        case .badResponse(let reason): "bad response: \(reason)"
        case .outputNotWritable(let reason): "cannot write output: \(reason)"
        case .outputExists(let path): "\(path) already exists and is not known to be this remote file (use --force to replace it)"
        case .alreadyComplete(let path): "\(path) is already complete (--force downloads it again)"
        case .busy(let path): "another vfetch is downloading to \(path)"
        case .noDownload(let path): "no unfinished download at \(path)"
        case .badManifest(let reason): "unreadable manifest: \(reason)"
        case .diskFull(let path): "disk full writing \(path)"
        case .checksumMismatch(let expected, let actual): "checksum mismatch: expected sha256 \(expected), got \(actual)"
        case .interrupted: "interrupted"
        case .transferFailed(let reason): "transfer failed: \(reason)"
        case .segmentUnavailable(let url, let reason): "segment unavailable: \(url): \(reason) (--skip-unavailable leaves it out)"
        case .segmentedStream(let url): "\(url) is an HLS or DASH stream, not a file"
        case .metalink(let url): "\(url) is a Metalink file, not the file it describes"
        case .unsupportedStream(let reason): "unsupported stream: \(reason)"
        case .formatUnavailable(let reason): "format unavailable: \(reason)"
        }
    }

    /// Whole seconds as a person writes them; a fraction only where there is one.
    static func seconds(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// What a failure to write the output (or a side file) means to the user: a full disk has its
    /// own case and exit code; anything else cannot be written, and says why.
    /// A stream encrypted with `name` (a DRM system, SAMPLE-AES), which vfetch cannot decrypt.
    package static func drm(_ name: String) -> DownloadError {
        .unsupportedStream("encrypted with \(name), which vfetch cannot decrypt (DRM)")
    }

    package static func forOutput(_ error: FileSystemError) -> DownloadError {
        switch error {
        case .noSpace(let path, _): .diskFull(path)
        case .system, .symlink, .notRegular: .outputNotWritable(error.description)
        }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}
