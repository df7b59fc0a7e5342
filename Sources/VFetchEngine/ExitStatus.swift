/// The exit codes of `vfetch`, one per kind of failure; documented in the README. Serve sends the
/// one of an origin's failure to `vfetch play` (the `VFetch-Exit-Status` header of its error answers).
package enum ExitStatus: Int32 {
    case success = 0
    case failure = 1
    case badURL = 3
    case connectFailed = 4
    case httpError = 5
    case remoteChanged = 6
    case outputNotWritable = 7
    case diskFull = 8
    case checksumMismatch = 9
    case badResponse = 10
    case busy = 11
    case notMedia = 12
    case segmentUnavailable = 13
    case unsupportedStream = 14
    case formatUnavailable = 15
    case interrupted = 130

    package init(_ error: DownloadError) {
        self =
            switch error {
            case .badURL: .badURL
            case .connectFailed: .connectFailed
            case .httpStatus, .retryAfterTooLong: .httpError
            case .remoteChanged: .remoteChanged
            case .alreadyComplete: .success
            case .outputNotWritable, .outputExists: .outputNotWritable
            case .diskFull: .diskFull
            case .checksumMismatch: .checksumMismatch
            case .badResponse, .segmentedStream, .metalink: .badResponse
            case .interrupted: .interrupted
            case .busy: .busy
            case .segmentUnavailable: .segmentUnavailable
            case .unsupportedStream: .unsupportedStream
            case .formatUnavailable: .formatUnavailable
            case .transferFailed, .noDownload, .badManifest: .failure
            }
    }
}
