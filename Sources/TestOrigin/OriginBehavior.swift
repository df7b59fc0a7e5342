/// The switches of one published file: each reproduces a way real servers and CDNs misbehave.
///
/// The default value is a well-behaved origin: byte ranges, validators, no throttling, no faults.
public struct OriginBehavior: Sendable {
    /// false: no `Accept-Ranges` header and `Range` is ignored (200 + whole body). Default true.
    public var supportsRanges: Bool = true
    /// Advertise `Accept-Ranges: bytes`, but answer any ranged request that does not start at 0
    /// with 200 and the whole body.
    public var answers200ToRanges: Bool = false
    /// Answer ranged requests that do not start at 0 with a 206 whose `Content-Range` (and body)
    /// is shifted by +1 byte from what was asked.
    public var wrongContentRange: Bool = false
    /// Send `ETag` and `Last-Modified` (default true). The ETag is a strong `"<hex>"` derived from
    /// the content version.
    public var sendsValidators: Bool = true
    /// After this many body bytes of the file have been served in total (over all requests), the
    /// file switches to `changedBytes` with new validators. nil = never.
    ///
    /// Responses already in flight keep sending the old bytes, as a CDN does when an object is
    /// replaced; the switch happens once.
    public var changeAfterBytes: Int? = nil
    /// The content after the switch; nil = the original bytes with every byte inverted (same length).
    public var changedBytes: [UInt8]? = nil
    /// Per-connection throttle in bytes per second (token bucket per TCP connection; nil = unthrottled).
    public var bytesPerSecond: Int? = nil
    /// The first this many body bytes of every throttled response go out unthrottled, as nginx sends the
    /// first `sendfile_max_chunk` of a `limit_rate` response and CDNs allow a burst. nil = none.
    public var burstBytes: Int? = nil
    /// At most this many responses with a body at once, as a host that limits connections per client
    /// (nginx `limit_conn`); requests beyond get `failStatus` (and `Retry-After` when set). nil = no limit.
    public var maxConcurrentResponses: Int? = nil
    /// Beyond `maxConcurrentResponses`, close the connection without an answer instead, as hosts that
    /// refuse or reset extra connections do.
    public var resetsBeyondLimit = false
    /// Every Nth TCP connection (by accept order: N, 2N, …) is throttled to `slowBytesPerSecond` instead.
    public var slowConnectionEvery: Int? = nil
    /// The rate of the connections picked by `slowConnectionEvery`. Default 64 KiB/s.
    public var slowBytesPerSecond: Int = 64 * 1024
    /// Close the TCP connection after sending this many body bytes of a response, for the first
    /// `dropTimes` responses of this file (with a body). nil = never.
    public var dropAfterBytes: Int? = nil
    /// How many responses `dropAfterBytes` cuts short. Default 1.
    public var dropTimes: Int = 1
    /// The first `failFirst` requests for this file get `failStatus` (e.g. 503 or 429).
    public var failFirst: Int = 0
    /// The status of the failures counted by `failFirst`. Default 503.
    public var failStatus: Int = 503
    /// When non-nil, failures carry `Retry-After: retryAfter` (seconds).
    public var retryAfter: Int? = nil
    /// Stream with `Transfer-Encoding: chunked`, no `Content-Length`, no `Accept-Ranges` (Range ignored).
    public var chunked: Bool = false
    /// Ignore `Range` and answer every GET with 200 and a body of this many bytes (the file's bytes over and
    /// over), chunked, so no length is known before it ends: a broken or hostile origin's endless body. nil = off.
    public var endlessBodyBytes: Int? = nil
    /// Answer 200 with `Content-Type: text/html` and a small HTML error page instead of the file.
    public var htmlErrorBody: Bool = false
    /// Signed-URL lifetime for the `/signed/` route in seconds (default 2).
    public var signedLifetime: Double = 2
    /// The `Content-Type` of the file. Default "video/mp4".
    public var contentType: String = "video/mp4"
    /// Optional `Content-Disposition` header value, e.g. `attachment; filename="movie.mp4"`.
    public var contentDisposition: String? = nil

    /// A well-behaved origin: every switch off.
    public init() {}

    /// The throttle for a response on the `connection`-th accepted TCP connection (nil = unthrottled).
    func bytesPerSecond(onConnection connection: Int) -> Int? {
        if let every = slowConnectionEvery, every > 0, connection % every == 0 {
            return slowBytesPerSecond
        }
        return bytesPerSecond
    }
}
