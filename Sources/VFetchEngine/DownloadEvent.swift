/// What a running download reports, in order: `started`, any number of `progress` and `notice`, then `finished`
/// (only when it succeeds; a failure is thrown by `Download.run()`).
public enum DownloadEvent: Sendable, Equatable {
    case started(RemoteInfo)
    case progress(DownloadProgress)
    /// A one-line warning worth showing the user, such as a fallback to one connection.
    case notice(String)
    case finished(DownloadSummary)
    /// A stream download's progress, counted in segments and media time.
    case streamProgress(StreamProgress)
}

/// A snapshot of a running stream (HLS, DASH) download.
public struct StreamProgress: Sendable, Equatable {
    /// Segments (and init sections) kept, of all that the chosen tracks have.
    public var segmentsDone: Int
    public var segmentsTotal: Int
    /// Media time kept, of the whole, in seconds (of the first track, the video).
    public var secondsDone: Double
    public var secondsTotal: Double
    public var bytesDone: Int64
    public var bytesPerSecond: Double
    public var activeConnections: Int
    /// The segment just kept (its index among all fetches), for `--json` events per segment.
    public var lastSegment: Int?
}

/// What the server said about the file.
public struct RemoteInfo: Sendable, Equatable {
    /// The URL the download was asked for; it stays the download's identity.
    public var url: String
    /// Where redirects led.
    public var finalURL: String
    /// Length in bytes, nil when the server does not say.
    public var length: Int64?
    public var acceptsRanges: Bool
    public var etag: String?
    public var lastModified: String?
    public var contentType: String?
    /// The path the finished file will have.
    public var outputPath: String
    /// Bytes already saved by an earlier run that this one continues.
    public var resumedBytes: Int64
}

extension RemoteInfo {
    /// What a stream's download knows as it starts: the playlist's URL and where its remux goes.
    package static func stream(url: String, outputPath: String) -> RemoteInfo {
        RemoteInfo(
            url: url, finalURL: url, length: nil, acceptsRanges: true, etag: nil, lastModified: nil, contentType: nil,
            outputPath: outputPath, resumedBytes: 0)
    }
}

/// A snapshot of a running download.
public struct DownloadProgress: Sendable, Equatable {
    public var bytesDone: Int64
    public var totalBytes: Int64?
    /// Recent download rate.
    public var bytesPerSecond: Double
    /// Connections transferring now.
    public var activeConnections: Int
    /// The byte ranges already in the file on disk, in file order.
    public var doneRanges: [Range<Int64>]
    public var seconds: Double
    /// With `DownloadOptions.playbackOrder`: how many seconds a player could play from the start, once the
    /// media's index is in.
    public var playableTo: Double? = nil
}

/// The result of a finished download.
public struct DownloadSummary: Sendable, Equatable {
    public var path: String
    public var bytes: Int64
    public var seconds: Double
    /// TCP connections opened.
    public var connections: Int
    /// The most connections transferring at once.
    public var peakConnections: Int
    /// Failed transfers that were retried.
    public var retries: Int
    public var sha256: String?
    /// Bytes an earlier, interrupted run had already saved.
    public var resumedBytes: Int64
    /// Bytes received but not written: a raced straggler's range that arrived twice, or bytes past a
    /// split point before the transfer stopped. What the end-game's hedging cost.
    public var duplicateBytes: Int64 = 0
    /// What an HLS or DASH download fetched before its remux into `path`; nil for a file.
    public var stream: StreamSummary?
    /// A download with mirrors (`DownloadOptions.mirrors`): the bytes each source gave this run, the primary
    /// first, then the mirrors as given (a dropped one too); with `resumedBytes` they make up the file.
    /// Empty for a download from one URL.
    public var sources: [SourceBytes] = []

    public init(
        path: String, bytes: Int64, seconds: Double, connections: Int, peakConnections: Int, retries: Int, sha256: String?,
        resumedBytes: Int64, duplicateBytes: Int64 = 0, stream: StreamSummary? = nil, sources: [SourceBytes] = []
    ) {
        self.path = path
        self.bytes = bytes
        self.seconds = seconds
        self.connections = connections
        self.peakConnections = peakConnections
        self.retries = retries
        self.sha256 = sha256
        self.resumedBytes = resumedBytes
        self.duplicateBytes = duplicateBytes
        self.stream = stream
        self.sources = sources
    }
}

/// What one source of a file (its URL, or a mirror's) gave the download.
public struct SourceBytes: Sendable, Equatable, Codable {
    public var url: String
    /// Bytes from it written into the file in this run (not its samples, nor bytes another source wrote first).
    public var bytes: Int64

    public init(url: String, bytes: Int64) {
        self.url = url
        self.bytes = bytes
    }
}

/// The stream part of a finished HLS or DASH download.
public struct StreamSummary: Sendable, Equatable {
    public var segments: Int
    /// Segments an earlier, interrupted run had already kept.
    public var resumedSegments: Int
    /// Media seconds of the first track (the video).
    public var mediaSeconds: Double
    /// Segments left out by `skipUnavailableSegments`, with why.
    public var skipped: [String]

    public init(segments: Int, resumedSegments: Int, mediaSeconds: Double, skipped: [String]) {
        self.segments = segments
        self.resumedSegments = resumedSegments
        self.mediaSeconds = mediaSeconds
        self.skipped = skipped
    }
}
