/// One elementary stream of a media file, as its container describes it.
public struct MediaStream: Sendable, Equatable, Codable {
    /// "video", "audio", "subtitle" or "data".
    public var kind: String
    /// The codec's short name, such as "h264", "aac", "vp9", "opus".
    public var codec: String
    /// Picture size in pixels (video).
    public var width: Int?
    public var height: Int?
    /// Frames per second (video), the average the container states or libavformat estimated.
    public var frameRate: Double?
    /// Audio channels and samples per second (audio).
    public var channels: Int?
    public var sampleRate: Int?

    public init(
        kind: String, codec: String, width: Int? = nil, height: Int? = nil, frameRate: Double? = nil,
        channels: Int? = nil, sampleRate: Int? = nil
    ) {
        self.kind = kind
        self.codec = codec
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.channels = channels
        self.sampleRate = sampleRate
    }
}

/// What a media file is: container, length in time, streams, and how it is laid out.
public struct MediaInfo: Sendable, Equatable, Codable {
    /// A short container name: "mp4" (also for MOV and M4A), "matroska", "webm", "mp3", "mpegts", …
    public var container: String
    /// Seconds, when the container states it or libavformat could estimate it.
    public var duration: Double?
    /// Overall bits per second.
    public var bitRate: Int64?
    public var streams: [MediaStream]
    /// MP4/MOV only: the `moov` box comes before `mdat`, so playback can start from the head.
    public var faststart: Bool?
    /// MP4/MOV only: the file is made of movie fragments (`moof` boxes, or `mvex` in `moov`).
    public var fragmented: Bool?

    public init(
        container: String, duration: Double?, bitRate: Int64?, streams: [MediaStream], faststart: Bool?,
        fragmented: Bool?
    ) {
        self.container = container
        self.duration = duration
        self.bitRate = bitRate
        self.streams = streams
        self.faststart = faststart
        self.fragmented = fragmented
    }
}
