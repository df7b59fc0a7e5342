import Foundation

/// What a segmented stream offers, whether it came from an HLS master playlist or a DASH MPD: the
/// tracks a player chooses from and where each track's segments come from.
///
/// The parsers (`HLSPlaylist`, `DASHManifest`) fill it from the document's text; `get` picks tracks
/// from it and fetches their segments, and serve rewrites a playlist through it. It holds no I/O:
/// a track whose segments need another document (an HLS media playlist) says which.
package struct StreamCatalog: Sendable, Equatable {
    package var format: StreamFormat
    package var tracks: [StreamTrack]
    /// The stream is live: its segment lists change, and are read again (`SegmentList.targetDuration`).
    package var isLive: Bool
    /// Total media time in seconds, when the document says (`mediaPresentationDuration`, or the sum of
    /// an HLS media playlist's segment durations).
    package var duration: Double?

    package init(format: StreamFormat, tracks: [StreamTrack], isLive: Bool = false, duration: Double? = nil) {
        self.format = format
        self.tracks = tracks
        self.isLive = isLive
        self.duration = duration
    }
}

/// The two kinds of segmented stream vfetch reads.
package enum StreamFormat: String, Sendable, Equatable {
    case hls
    case dash

    /// Which stream format a response is, from its Content-Type, then its first bytes, or before the
    /// body arrives (`firstBytes` empty) its URL's path; nil for anything else (a plain media file).
    /// Servers often send playlists as `text/plain` or `application/octet-stream`, so the type alone
    /// does not decide.
    package static func detect(contentType: String?, path: String, firstBytes: some Collection<UInt8>) -> StreamFormat? {
        let type = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if ["application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl"].contains(type) {
            return .hls
        }
        if type == "application/dash+xml" { return .dash }
        if firstBytes.isEmpty {
            // Before the body: a playlist's name, unless the type says what else it is.
            guard ["", "text/plain", "application/octet-stream", "binary/octet-stream"].contains(type) else { return nil }
            let name = path.lowercased()
            if name.hasSuffix(".m3u8") || name.hasSuffix(".m3u") { return .hls }
            return name.hasSuffix(".mpd") ? .dash : nil
        }
        let text = XMLEncoding.prefixText(firstBytes)
        let trimmed = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        if trimmed.hasPrefix("#EXTM3U") { return .hls }
        if trimmed.hasPrefix("<"), text.contains("<MPD") { return .dash }
        return nil
    }
}

/// One choice in a stream: a video variant (HLS `EXT-X-STREAM-INF`, a DASH video Representation), a
/// separate audio or subtitle rendition (HLS `EXT-X-MEDIA`, a DASH audio or text Representation), or a
/// variant that carries video and audio together (`muxed`).
package struct StreamTrack: Sendable, Equatable {
    package enum Kind: String, Sendable, Equatable {
        case video, audio, subtitles, muxed
    }

    /// Unique within the catalog: a DASH Representation's `id`; for HLS, the variant's position
    /// (`v0`, `v1`, …) or the rendition's `TYPE/GROUP-ID/NAME`.
    package var id: String
    package var kind: Kind
    /// Bits per second, as the document declares it (`BANDWIDTH`, `@bandwidth`).
    package var bandwidth: Int?
    /// The average bits per second over the whole track (HLS `AVERAGE-BANDWIDTH`), a better guess
    /// of its size than the peak `bandwidth`.
    package var averageBandwidth: Int?
    package var width: Int?
    package var height: Int?
    package var frameRate: Double?
    /// RFC 6381 codec strings, e.g. `["avc1.64001f", "mp4a.40.2"]`.
    package var codecs: [String]
    /// BCP 47 language tag (`LANGUAGE`, `@lang`).
    package var language: String?
    /// A human name (`NAME`, a DASH `Label`).
    package var name: String?
    /// HLS: the `AUDIO` group a variant plays with, or the `GROUP-ID` an audio rendition belongs to.
    /// nil for DASH, where any audio goes with any video.
    package var audioGroup: String?
    /// HLS: the `SUBTITLES` group a variant plays with, or the `GROUP-ID` a subtitle rendition belongs
    /// to. nil for DASH.
    package var subtitleGroup: String?
    /// `DEFAULT=YES`, or a DASH `Role` of `main`.
    package var isDefault: Bool
    /// How the whole track is encrypted, when the document says so for the track (a DASH
    /// `ContentProtection`): what its segments will carry even before they are listed, as for
    /// `.indexed`. `.none` when the document says nothing for the whole track (HLS keys are per segment).
    package var encryption: SegmentEncryption
    package var segments: SegmentSource

    /// `v2 (video 1280x720, 2.10 Mbit/s, avc1.64001f)`: the track as the `format:` line names it.
    package var summary: String {
        var parts = [kind.rawValue]
        if let width, let height { parts.append("\(width)x\(height)") }
        if let bandwidth { parts.append(String(format: "%.2f Mbit/s", Double(bandwidth) / 1e6)) }
        parts += codecs
        if let language { parts.append(language) }
        return "\(id) (\(parts.joined(separator: ", ")))"
    }

    package init(
        id: String, kind: Kind, bandwidth: Int? = nil, averageBandwidth: Int? = nil, width: Int? = nil,
        height: Int? = nil, frameRate: Double? = nil, codecs: [String] = [], language: String? = nil,
        name: String? = nil, audioGroup: String? = nil, subtitleGroup: String? = nil, isDefault: Bool = false,
        encryption: SegmentEncryption = .none,
        segments: SegmentSource
    ) {
        self.id = id
        self.kind = kind
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.codecs = codecs
        self.language = language
        self.name = name
        self.audioGroup = audioGroup
        self.subtitleGroup = subtitleGroup
        self.isDefault = isDefault
        self.encryption = encryption
        self.segments = segments
    }
}

/// Where a track's segments come from.
package enum SegmentSource: Sendable, Equatable {
    /// An HLS media playlist that is still to be fetched, then parsed into a `SegmentList`.
    case playlist(URL)
    /// The segments, known from the document itself.
    case list(SegmentList)
    /// DASH `SegmentBase`: one file whose `sidx` box, at `indexRange`, lists the segments.
    case indexed(url: URL, initialization: MediaResource?, indexRange: Range<Int64>)
    /// A rendition with no URI of its own (its media is inside the variants).
    case none
}

/// A track's segments in play order.
package struct SegmentList: Sendable, Equatable {
    package var segments: [MediaSegment]
    /// False while a live stream goes on (no `EXT-X-ENDLIST`, a `dynamic` MPD).
    package var isComplete: Bool
    /// The longest segment's duration in seconds (`EXT-X-TARGETDURATION`); a live list is read again
    /// after about this long.
    package var targetDuration: Double?

    /// Seconds of HLS `EXT-X-GAP` segments: media time the list covers with nothing to fetch.
    package var gapSeconds: Double
    /// Some entry's length is unknown (an IPTV `#EXTINF:-1`): its segment counts 0 seconds.
    package var hasUnknownDuration: Bool
    /// LL-HLS: the parts of the segment still being written (`EXT-X-PART` after the last segment), each
    /// with that segment's sequence number. A recording takes them as they appear, and then the rest of
    /// that segment's parts, never the whole segment again.
    package var partial: [MediaSegment] = []

    package init(
        segments: [MediaSegment], isComplete: Bool, targetDuration: Double? = nil, gapSeconds: Double = 0,
        hasUnknownDuration: Bool = false
    ) {
        self.segments = segments
        self.isComplete = isComplete
        self.targetDuration = targetDuration
        self.gapSeconds = gapSeconds
        self.hasUnknownDuration = hasUnknownDuration
    }

    /// Media seconds the list covers, gaps included; nil when an entry's length is unknown.
    package var duration: Double? {
        hasUnknownDuration ? nil : segments.reduce(gapSeconds) { $0 + $1.duration }
    }
}

/// Bytes at a URL: the whole resource, or one byte range of it (`EXT-X-BYTERANGE`, `@mediaRange`).
package struct MediaResource: Sendable, Hashable {
    package var url: URL
    package var byteRange: Range<Int64>?

    package init(url: URL, byteRange: Range<Int64>? = nil) {
        self.url = url
        self.byteRange = byteRange
    }
}

/// One segment of a track.
package struct MediaSegment: Sendable, Equatable {
    package var resource: MediaResource
    /// Seconds of media.
    package var duration: Double
    /// The media sequence number (HLS `EXT-X-MEDIA-SEQUENCE` + position, DASH `$Number$`): what
    /// identifies a segment across reloads of a live list, and the default AES-128 IV.
    package var sequence: Int
    /// The initialization section in force for this segment (`EXT-X-MAP`, DASH `Initialization`), which
    /// a decoder needs before it.
    package var initialization: MediaResource?
    /// How the initialization section is encrypted: by the HLS key in force at its `EXT-X-MAP`, whose IV
    /// it then names (RFC 8216 4.3.2.5).
    package var initializationEncryption: SegmentEncryption
    package var encryption: SegmentEncryption
    /// `EXT-X-DISCONTINUITY` before this segment: timestamps or encoding change here.
    package var discontinuity: Bool
    /// LL-HLS: the parts the segment was published in (`EXT-X-PART` before its `EXTINF`), which together
    /// are its bytes; empty for a segment listed without them.
    package var parts: [MediaSegment] = []

    package init(
        resource: MediaResource, duration: Double, sequence: Int, initialization: MediaResource? = nil,
        initializationEncryption: SegmentEncryption = .none, encryption: SegmentEncryption = .none, discontinuity: Bool = false,
        parts: [MediaSegment] = []
    ) {
        self.resource = resource
        self.duration = duration
        self.sequence = sequence
        self.initialization = initialization
        self.initializationEncryption = initializationEncryption
        self.encryption = encryption
        self.discontinuity = discontinuity
        self.parts = parts
    }
}

/// How a segment is encrypted.
package enum SegmentEncryption: Sendable, Hashable {
    case none
    /// Whole-segment AES-128-CBC with PKCS7 padding. The IV is 16 bytes; nil means the segment's media
    /// sequence number as a 128-bit big-endian integer (RFC 8216 5.2).
    case aes128(key: URL, iv: [UInt8]?)
    /// Encryption vfetch cannot undo: `SAMPLE-AES`, or a DRM system (Widevine, FairPlay, PlayReady),
    /// named by its HLS `KEYFORMAT` or DASH `ContentProtection@schemeIdUri`.
    case unsupported(String)
}

/// A playlist or manifest that cannot be read, with the line (HLS) or element (DASH) and why.
package struct StreamParseError: Error, Equatable, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}
