import Foundation

/// Reads whichever document a stream URL answered (an HLS playlist or a DASH manifest) into the
/// catalog, and a track's second document (its HLS media playlist, its DASH `sidx` index) into its segments.
package enum StreamDocument {
    /// The catalog of a stream's first document. A lone HLS media playlist becomes a catalog of one track.
    /// `budget` is how many segments and URL bytes it may make (smaller in tests).
    package static func catalog(
        _ bytes: [UInt8], url: URL, contentType: String?, budget: SegmentBudget = SegmentBudget()
    ) throws(StreamParseError) -> StreamCatalog {
        switch StreamFormat.detect(contentType: contentType, path: url.path, firstBytes: bytes) {
        case .hls:
            switch try HLSPlaylist.parse(String(decoding: bytes, as: UTF8.self), url: url, budget: budget) {
            case .master(let catalog): return catalog
            case .media(let list):
                let track = StreamTrack(id: "v0", kind: .muxed, segments: .list(list))
                return StreamCatalog(format: .hls, tracks: [track], isLive: !list.isComplete, duration: list.duration)
            }
        case .dash:
            return try DASHManifest.parse(bytes, url: url, budget: budget)
        case nil:
            throw StreamParseError("not an HLS playlist or a DASH manifest (Content-Type \(contentType ?? "none"))")
        }
    }

    /// The segments of `track` from its own document: the media playlist `.playlist` names, or the `sidx`
    /// bytes at `.indexed`'s index range.
    package static func segments(of track: StreamTrack, body: [UInt8], url: URL) throws(StreamParseError) -> SegmentList {
        switch track.segments {
        case .playlist:
            guard case .media(let list) = try HLSPlaylist.parse(String(decoding: body, as: UTF8.self), url: url) else {
                throw StreamParseError("\(url.absoluteString.prefix(200)) is a master playlist where a media playlist belongs")
            }
            return list
        case .indexed:
            return try track.segments.segmentList(index: body, encryption: track.encryption)
        case .list(let list): return list
        case .none: return SegmentList(segments: [], isComplete: true)
        }
    }
}
