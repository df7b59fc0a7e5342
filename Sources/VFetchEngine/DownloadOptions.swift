/// How a download runs. The defaults are what `vfetch get` uses without flags.
public struct DownloadOptions: Sendable, Equatable {
    public enum HTTPVersion: Sendable, Equatable {
        /// One TCP connection per segment: per-connection server limits add up.
        case http1_1
        /// HTTP/2 where an https server offers it: segments are streams of one connection, whose
        /// handshake and encryption they share (per-request limits apply per stream); HTTP/1.1 otherwise.
        case http2
        /// HTTP/2 where an https server offers it, and HTTP/1.1 instead where that measures clearly faster
        /// on the origin (one shaping each TCP connection): see `ProtocolTrial`.
        case automatic
    }

    /// Parallel connections at most.
    public var connections = 32
    /// Extra request headers, `"Name: value"`.
    public var headers: [String] = []
    public var userAgent: String? = "vfetch/" + Version.vfetch
    public var referer: String?
    /// A Netscape/Mozilla cookie file to send cookies from.
    public var cookieFile: String?
    /// `user:password` for HTTP authentication.
    public var credentials: String?
    /// A proxy URL; without one, libcurl honours `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy`.
    public var proxy: String?
    /// Connect only to public addresses: never to loopback, private or link-local ones, checked on
    /// the address each connection goes to, after every redirect (serve, for web pages' requests).
    public var publicAddressesOnly = false
    /// Skip TLS certificate verification.
    public var insecure = false
    /// A PEM bundle of CA certificates to trust.
    public var caCertificates: String?
    /// Overall limit in bytes per second.
    public var maxBytesPerSecond: Int64?
    public var httpVersion = HTTPVersion.automatic
    /// Failed attempts in a row, without progress, one segment may take.
    public var retries = 5
    /// The longest `Retry-After` (of a 429, 503, …) worth waiting for, in seconds. An origin that asks for
    /// more fails the download at once (`DownloadError.retryAfterTooLong`) instead of holding it silently.
    public var maxRetryWait = 600.0
    public var connectTimeout = 15.0
    /// A transfer that receives no byte for this many seconds is retried.
    public var stallTimeout = 20.0
    /// Segments are not split into parts smaller than this; nil: 1 MiB, or less for a small file so
    /// that every connection can have a part (64 KiB at least).
    public var minSplitSize: Int64?
    /// Allocate the whole file up front (`fallocate`) instead of a sparse file.
    public var preallocate = false
    /// Other URLs of the same file (`--mirror`, a Metalink's URLs): segments are fetched from them too, each
    /// once a sample of its bytes matches the primary's (`MirrorSet`). The manifest records the primary only.
    public var mirrors: [String] = []
    /// The file's length as a Metalink file says it: an origin that gives another fails at its first answer.
    public var expectedLength: Int64?
    /// Expected SHA-256 of the whole file, in hex; verified before the file is moved into place.
    public var sha256: String?
    /// Replace a file that exists at the output path.
    public var overwrite = false
    /// What to do about another file at the output path (unless `overwrite`, or it is this remote file finished).
    public var existingOutput = ExistingOutput.refuse
    /// Make the output readable by its owner only (mode 0600), whatever the umask: a cache's copies,
    /// an AES key among them, are nobody else's.
    public var privateOutput = false
    /// Playback first: head and tail at once, then the file in order with a lookahead window, so a
    /// player can start early; the other connections fill the rest.
    public var playbackOrder = false
    /// Stop with `DownloadError.segmentedStream` when the URL answers with an HLS playlist or a DASH
    /// manifest, and with `DownloadError.metalink` when it answers with a Metalink document (`Download`
    /// then fetches the stream, or the file the document describes); otherwise they are downloaded as files.
    public var detectsStreams = false
    /// A live HLS or DASH stream: stop recording after this many seconds of media (nil: at Ctrl-C or its end).
    public var recordDuration: Double?
    /// HLS/DASH: which tracks, as a `--format` selector (`TrackSelection`); nil: the best video with its audio.
    public var format: String?
    /// HLS/DASH: leave out segments that fail after their retries, and say which, instead of failing.
    public var skipUnavailableSegments = false
    /// HLS/DASH: keep the fetched segments (`SideFiles.segments`) after the remux.
    public var keepSegments = false
    /// Continue a partial file that another program left at the output (as `wget -c`, `curl -C -`): its
    /// bytes are kept if the remote file's bytes just before their end are the same (`Download` checks).
    public var continuePartialFile = false
    /// Bytes at the start of `NAME.part` that `Download` found to be the remote file's (a partial file
    /// adopted for `continuePartialFile`); the engine starts with them saved when no manifest says more.
    package var adoptedPrefix: Int64?
    /// Ignore an earlier run's manifest and start from zero.
    public var restart = false
    /// Resume even when the server gives no ETag or Last-Modified, if the length is unchanged.
    public var trustLength = false
    /// Write a checkpoint (sync data, then the manifest) at least this often…
    public var checkpointInterval = 1.0
    /// …and after receiving this many bytes, so a crash loses at most this much; after a quarter of it
    /// when checkpoints are cheap (`CheckpointPacing`).
    public var checkpointBytes: Int64 = 8 << 20

    public init() {}
}

/// What a download does about a file at its output path that it cannot vouch for.
public enum ExistingOutput: Sendable, Equatable {
    /// Fail with `DownloadError.outputExists`.
    case refuse
    /// Leave it, and download nothing (`wget -nc`): `DownloadError.alreadyComplete`.
    case keep
    /// Save under the first free name `NAME.1.EXT`, `NAME.2.EXT`, … (aria2c, wget).
    case rename
}

/// Where a download goes.
public enum Destination: Sendable, Equatable {
    /// Exactly this path.
    case file(String)
    /// This directory, under the name the server or the URL gives.
    case directory(String)
    /// This open file descriptor (standard output, a pipe), written in order as the file arrives, as
    /// `curl -o -` writes: the connections fetch it in playback order into a private temporary directory,
    /// removed at the end. A plain file only: an HLS or DASH stream throws `DownloadError.segmentedStream`,
    /// a Metalink answer `DownloadError.metalink`. Nothing is resumed, and `Download.pause()` does nothing.
    /// A reader that closes a pipe fails the download; ignore `SIGPIPE` to get that error instead of the
    /// signal's end of the process. A reader that stops reading holds the download's end (the copy waits
    /// in `write`). The descriptor stays open: it is the caller's. A checksum (`DownloadOptions.sha256`)
    /// is checked once every byte was written to it.
    case descriptor(Int32)

    /// The output's path: the file's, or `name` (asked for only then) in the directory.
    package func path(naming name: () -> String) -> String {
        switch self {
        case .file(let path): path
        case .directory(let directory): directory.hasSuffix("/") ? directory + name() : directory + "/" + name()
        case .descriptor(let descriptor): "/dev/fd/\(descriptor)"
        }
    }
}
