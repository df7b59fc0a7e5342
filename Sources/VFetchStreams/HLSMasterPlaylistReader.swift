import Foundation

/// Reads a master playlist line by line into a catalog: one track per `EXT-X-STREAM-INF` variant
/// (`v0`, `v1`, … in document order) and per `EXT-X-MEDIA` audio or subtitle rendition
/// (`AUDIO/<GROUP-ID>/<NAME>`).
///
/// I-frame (trick play) variants, video renditions and closed captions are left out: none of them
/// is something to download on its own. A URI listed by two variants stays two tracks, since they
/// may differ in the audio group they play with (RFC 8216 4.3.4.2.1). `EXT-X-SESSION-KEY` says how
/// every media playlist is encrypted before any is read (each track's `encryption`), so DRM is refused
/// before a media playlist is fetched.
struct HLSMasterPlaylistReader {
    let url: URL
    private var variants: [StreamTrack] = []
    private var renditions: [StreamTrack] = []
    private var renditionIDs: Set<String> = []
    /// From `EXT-X-SESSION-KEY`: a clear AES-128 key if one is listed, else the first other.
    private var sessionEncryption: SegmentEncryption = .none
    /// The `EXT-X-STREAM-INF` waiting for the URI line that follows it.
    private var pendingVariant: (line: Int, attributes: HLSAttributes)?
    private var budget: SegmentBudget

    init(url: URL, budget: SegmentBudget) {
        self.url = url
        self.budget = budget
    }

    mutating func read(_ line: HLSLine) throws(StreamParseError) {
        switch line.content {
        case .tag("EXT-X-STREAM-INF", let value):
            if let pendingVariant { throw HLSPlaylist.failure(pendingVariant.line, "#EXT-X-STREAM-INF has no URI after it") }
            pendingVariant = (line.number, HLSAttributes(value))
        case .tag("EXT-X-MEDIA", let value):
            try readRendition(HLSAttributes(value), line: line.number)
        case .tag("EXT-X-SESSION-KEY", let value):
            let key = try HLSPlaylist.key(HLSAttributes(value), tag: "EXT-X-SESSION-KEY", against: url, line: line.number, budget: &budget)
            if sessionEncryption.yields(to: key) { sessionEncryption = key }
        case .tag, .blank:
            break
        case .uri(let uri):
            guard let pending = pendingVariant else {
                throw HLSPlaylist.failure(line.number, "a URI with no #EXT-X-STREAM-INF before it")
            }
            pendingVariant = nil
            let playlist = try HLSPlaylist.resolve(uri, against: url, line: line.number, budget: &budget)
            variants.append(variant(pending.attributes, id: "v\(variants.count)", playlist: playlist))
        }
    }

    /// The catalog, once every line has been read.
    func finish(lastLine: Int) throws(StreamParseError) -> StreamCatalog {
        if let pendingVariant { throw HLSPlaylist.failure(pendingVariant.line, "#EXT-X-STREAM-INF has no URI after it") }
        guard !variants.isEmpty else { throw HLSPlaylist.failure(lastLine, "the master playlist has no variants") }
        // A variant whose audio group has playlists of its own plays its audio from them, so its own
        // playlist is (as far as a downloader is concerned) video only.
        let separateAudioGroups = Set(
            renditions.filter { $0.kind == .audio && $0.segments != .none }.compactMap(\.audioGroup)
        )
        let tracks = variants.map { variant in
            var variant = variant
            if variant.kind == .muxed, let group = variant.audioGroup, separateAudioGroups.contains(group) {
                variant.kind = .video
            }
            return variant
        }
        let encryption = sessionEncryption
        return StreamCatalog(
            format: .hls,
            tracks: (tracks + renditions).map { track in
                var track = track
                if track.segments != .none { track.encryption = encryption }
                return track
            })
    }

    private func variant(_ attributes: HLSAttributes, id: String, playlist: URL) -> StreamTrack {
        let resolution = attributes.resolution("RESOLUTION")
        let codecs = (attributes["CODECS"] ?? "").split(separator: ",").map { String($0.trimmingSpaces) }.filter { !$0.isEmpty }
        // An audio-only variant (AAC for cellular fallback) declares only audio codecs and no resolution.
        let audioOnly = resolution == nil && !codecs.isEmpty && codecs.allSatisfy(Self.isAudioCodec)
        return StreamTrack(
            id: id, kind: audioOnly ? .audio : .muxed, bandwidth: attributes.integer("BANDWIDTH"),
            averageBandwidth: attributes.integer("AVERAGE-BANDWIDTH"), width: resolution?.width,
            height: resolution?.height, frameRate: attributes.decimal("FRAME-RATE"), codecs: codecs,
            audioGroup: attributes["AUDIO"].map(String.init), subtitleGroup: attributes["SUBTITLES"].map(String.init),
            segments: .playlist(playlist)
        )
    }

    private mutating func readRendition(_ attributes: HLSAttributes, line: Int) throws(StreamParseError) {
        guard let type = attributes["TYPE"] else { throw HLSPlaylist.failure(line, "#EXT-X-MEDIA has no TYPE") }
        let kind: StreamTrack.Kind
        switch type {
        case "AUDIO": kind = .audio
        case "SUBTITLES": kind = .subtitles
        default: return
        }
        guard let group = attributes["GROUP-ID"], let name = attributes["NAME"] else {
            throw HLSPlaylist.failure(line, "#EXT-X-MEDIA TYPE=\(type.prefix(40)) needs a GROUP-ID and a NAME")
        }
        let id = "\(type)/\(group)/\(name)"
        // NAME is unique within a group (RFC 8216 4.3.4.1); a repeat would make two tracks with one id.
        guard renditionIDs.insert(id).inserted else { return }
        let segments: SegmentSource =
            if let uri = attributes["URI"] {
                .playlist(try HLSPlaylist.resolve(uri, against: url, line: line, budget: &budget))
            } else {
                .none
            }
        renditions.append(
            StreamTrack(
                id: id, kind: kind, language: attributes["LANGUAGE"].map(String.init), name: String(name),
                audioGroup: kind == .audio ? String(group) : nil, subtitleGroup: kind == .subtitles ? String(group) : nil,
                isDefault: attributes.flag("DEFAULT"), segments: segments
            )
        )
    }

    private static func isAudioCodec(_ codec: String) -> Bool {
        let family = codec.prefix { $0 != "." }.lowercased()
        return ["mp4a", "ac-3", "ec-3", "ac-4", "opus", "flac", "alac", "mha1", "mhm1", "dtsc", "dtse", "dtsh", "dtsx"]
            .contains(family)
    }
}
