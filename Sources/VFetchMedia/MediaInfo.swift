/// One elementary stream of a media file, as its container describes it.
///
/// In JSON, as `vfetch info --json` lists it: `{"kind", "codec", "width", "height", "frame_rate", "channels",
/// "sample_rate"}`, a value not known (or not of its kind) `null`.
public struct MediaStream: Sendable, Equatable, Codable {
    /// "video", "audio", "subtitle" or "data".
    public var kind: String
    /// The codec's short name, such as "h264", "aac", "vp9", "opus".
    public var codec: String
    /// Picture width in pixels (video).
    public var width: Int?
    /// Picture height in pixels (video).
    public var height: Int?
    /// Frames per second (video), the average the container states or libavformat estimated.
    public var frameRate: Double?
    /// Audio channels (audio).
    public var channels: Int?
    /// Audio samples per second (audio).
    public var sampleRate: Int?

    /// A stream of `kind` in `codec`; the rest as known.
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

    private enum CodingKeys: String, CodingKey {
        case kind, codec, width, height, frameRate = "frame_rate", channels, sampleRate = "sample_rate"
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: CodingKeys.self)
        try json.encode(kind, forKey: .kind)
        try json.encode(codec, forKey: .codec)
        try json.encode(width, forKey: .width)
        try json.encode(height, forKey: .height)
        try json.encode(frameRate, forKey: .frameRate)
        try json.encode(channels, forKey: .channels)
        try json.encode(sampleRate, forKey: .sampleRate)
    }
}

/// What a media file is: container, length in time, streams, and how it is laid out.
///
/// In JSON: `{"container", "duration", "bit_rate", "streams", "faststart", "fragmented"}`, a value not known
/// `null` (the keys `MediaReport` gives them in `vfetch info --json`).
public struct MediaInfo: Sendable, Equatable, Codable {
    /// A short container name: "mp4" (also for MOV and M4A), "matroska", "webm", "mp3", "mpegts", …
    public var container: String
    /// Seconds, when the container states it or libavformat could estimate it.
    public var duration: Double?
    /// Overall bits per second.
    public var bitRate: Int64?
    /// Its elementary streams, in the container's order.
    public var streams: [MediaStream]
    /// MP4/MOV only: the `moov` box comes before `mdat`, so playback can start from the head.
    public var faststart: Bool?
    /// MP4/MOV only: the file is made of movie fragments (`moof` boxes, or `mvex` in `moov`).
    public var fragmented: Bool?

    /// A file's description, each value as its field says.
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

    private enum CodingKeys: String, CodingKey {
        case container, duration, bitRate = "bit_rate", streams, faststart, fragmented
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: CodingKeys.self)
        try json.encode(container, forKey: .container)
        try json.encode(duration, forKey: .duration)
        try json.encode(bitRate, forKey: .bitRate)
        try json.encode(streams, forKey: .streams)
        try json.encode(faststart, forKey: .faststart)
        try json.encode(fragmented, forKey: .fragmented)
    }
}
