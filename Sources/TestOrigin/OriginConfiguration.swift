/// The switches of the whole origin, as opposed to one file's `OriginBehavior`: limits of the host
/// and of the link in front of it.
///
/// The default value is a nearby, unlimited host: every switch off.
public struct OriginConfiguration: Sendable {
    /// At most this many responses with a body at once to one client address, over all files, as
    /// nginx `limit_conn` per client address. On loopback every client is 127.0.0.1, so this limits the
    /// whole origin. Requests beyond get `failStatus` (and `Retry-After` when set). nil = no limit.
    public var maxResponsesPerClient: Int? = nil
    /// The status of requests beyond `maxResponsesPerClient`. Default 503 (nginx's; 429 is the other usual one).
    public var failStatus: Int = 503
    /// When non-nil, refusals beyond `maxResponsesPerClient` carry `Retry-After: retryAfter` (seconds).
    public var retryAfter: Int? = nil
    /// Beyond `maxResponsesPerClient`, close the connection without an answer instead.
    public var resetsBeyondLimit = false
    /// All response bodies together at most this many bytes per second, as a link in front of the host;
    /// on top of any per-connection throttle. nil = no cap.
    public var linkBytesPerSecond: Int? = nil
    /// Every response's head goes out this long after its request arrived, as from a distant host.
    public var latency: Duration = .zero
    /// After the origin has sent `afterBytes` body bytes in total (all files, since it started), every
    /// connection is throttled to `bytesPerSecond`, responses in flight included: a link that gets
    /// congested, or a host that starts limiting, mid-download. nil = never.
    public var rateChange: (afterBytes: Int, bytesPerSecond: Int)? = nil

    /// A nearby, unlimited host: every switch off.
    public init() {}
}
