/// Short container names from libavformat's demuxer names.
enum ContainerName {
    /// "mp4" for the QuickTime family ("mov,mp4,m4a,3gp,3g2,mj2"), "webm" or "matroska" for
    /// "matroska,webm" (by the EBML DocType, else by codecs), otherwise the demuxer's first name.
    static func short(formatName: String, docType: String?, streams: [MediaStream]) -> String {
        let names = formatName.split(separator: ",").map(String.init)
        if names.contains("mp4") || names.contains("mov") { return "mp4" }
        if names.contains("matroska") || names.contains("webm") {
            switch docType {
            case "webm": return "webm"
            case "matroska": return "matroska"
            default: return isWebMCodecs(streams) ? "webm" : "matroska"
            }
        }
        return names.first ?? formatName
    }

    /// WebM allows only VP8, VP9 and AV1 video, Vorbis and Opus audio, WebVTT subtitles.
    static func isWebMCodecs(_ streams: [MediaStream]) -> Bool {
        let allowed: Set = ["vp8", "vp9", "av1", "vorbis", "opus", "webvtt"]
        return !streams.isEmpty && streams.allSatisfy { allowed.contains($0.codec) }
    }
}
