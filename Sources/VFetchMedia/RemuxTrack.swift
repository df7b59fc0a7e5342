/// One track of a downloaded segmented stream, as ``StreamRemuxer`` takes it: the local files that,
/// concatenated, form one media file (an initialization section if there is one, then the
/// segments in play order), and which of its streams go into the output.
public struct RemuxTrack: Sendable, Equatable {
    /// The files in order. They are read one after the other as one stream, never copied together.
    public var files: [String]
    /// Which streams of the track to keep. A kind the track does not have is an error, except
    /// within `.all`.
    public var streams: StreamKinds
    /// The track's language as the playlist names it (BCP 47, `en`, `pt-BR`), written on each of its
    /// streams as the container writes languages (`eng`, `por`); nil leaves what the files say.
    public var language: String?

    public init(files: [String], streams: StreamKinds = .all, language: String? = nil) {
        self.files = files
        self.streams = streams
        self.language = language
    }
}

/// Kinds of elementary stream: which a ``RemuxTrack`` keeps.
public struct StreamKinds: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    public static let video = StreamKinds(rawValue: 1)
    public static let audio = StreamKinds(rawValue: 2)
    public static let subtitles = StreamKinds(rawValue: 4)
    /// Video, audio and subtitles: what a player plays. Data streams (timed ID3 metadata in HLS,
    /// SCTE-35 cues) and attachments are left out, as `ffmpeg` leaves them out by default, since
    /// most containers cannot hold them.
    public static let all: StreamKinds = [.video, .audio, .subtitles]

    public var description: String {
        let names = [(StreamKinds.video, "video"), (.audio, "audio"), (.subtitles, "subtitles")]
        return names.filter { contains($0.0) }.map(\.1).joined(separator: "+")
    }
}
