/// The container a stream is remuxed into, as the output's extension names it, and what it can hold:
/// checked before any segment is fetched, so a wrong `-o` fails at once and not after the download.
package enum OutputContainer: String, Sendable, CaseIterable {
    case mp4, mov, m4a, matroska, webm, mpegts

    /// The extensions a stream may be saved under, for messages.
    package static let extensions = ".mp4, .m4v, .mov, .m4a, .mkv, .mka, .webm or .ts"

    /// nil for an extension no container is written under (`.avi`, `.flv`); a name without one is MP4.
    package init?(path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else {
            self = .mp4
            return
        }
        switch name[name.index(after: dot)...].lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov": self = .mov
        case "m4a": self = .m4a
        case "mkv", "mka": self = .matroska
        case "webm": self = .webm
        case "ts": self = .mpegts
        default: return nil
        }
    }

    /// Whether subtitles go inside the file (WebVTT in Matroska and WebM, timed text in MP4); an MPEG-TS
    /// output gets them beside it.
    package var holdsSubtitles: Bool { self != .mpegts }

    /// libavformat's muxer.
    package var muxer: String { self == .m4a ? "ipod" : rawValue }

    /// Why this container cannot hold tracks of `codecs` (RFC 6381 strings, as playlists give them), or
    /// nil. Only WebM is this strict: VP8, VP9 and AV1 video, Vorbis and Opus audio, WebVTT subtitles.
    package func problem(codecs: [String]) -> String? {
        guard self == .webm else { return nil }
        let allowed = ["vp8", "vp9", "vp09", "av01", "opus", "vorbis", "wvtt"]
        let refused = codecs.filter { codec in !allowed.contains { codec.lowercased().hasPrefix($0) } }
        guard let first = refused.first else { return nil }
        return "WebM cannot hold \(first) (only VP8, VP9, AV1, Vorbis, Opus and WebVTT): save as .mkv or .mp4"
    }
}
