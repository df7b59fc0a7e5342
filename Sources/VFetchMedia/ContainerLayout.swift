import VFetchContainers
import VFetchCore

/// Where a container keeps its header and index, and whether the index is complete: what the
/// probe learns beyond libavformat, from MP4 boxes and Matroska elements.
struct ContainerLayout {
    /// Bytes every playback needs first, when the container says (MP4: `ftyp` and `moov`).
    var header: [Range<Int64>]?
    /// Index bytes that are not present (Matroska `Cues`).
    var missingIndex: Range<Int64>?
    var isComplete = false
    var docType: String?
    var mp4: MP4Layout?
    /// Fragmented MP4 only: how long the movie runs, from `mehd` or the end of its last fragment.
    var movieDuration: MP4MovieDuration?
    /// Matroska without its `Cues`: the clusters whose headers are present, standing in for them.
    var clusters: [IndexEntry]?

    /// Reads what the container says after libavformat opened it, reading box and element
    /// headers through `source`. For Matroska with `Cues` present, seeks so libavformat reads them.
    init(context: FormatContext, source: MediaIO) throws(MediaError) {
        let names = context.formatName.split(separator: ",")
        if names.contains("mp4") || names.contains("mov") {
            let mp4 = MP4Layout(source: source)
            if source.aborted { throw .aborted }
            guard let moov = mp4.moov else {
                if let stoppedAt = mp4.stoppedAt, case .missing(let run) = source.probe(at: stoppedAt) {
                    throw .needsBytes(run)
                }
                throw .invalidData("\(context.formatName): no complete moov box; the file is truncated or damaged")
            }
            // libavformat reads a moov box cut short by missing bytes as if the file ended there.
            guard source.hasBytes(moov.range) else {
                if source.aborted { throw .aborted }
                throw .needsBytes(moov.range)
            }
            header = mp4.header
            // Every sample is in moov, or in the fragments libavformat walked to the first missing header.
            isComplete = !mp4.fragmented || mp4.stoppedAt == nil
            if mp4.fragmented {
                movieDuration = MP4Boxes.movieDuration(length: source.length) { source.bytes(at: $0, count: $1) }
                if source.aborted { throw .aborted }
            }
            self.mp4 = mp4
        } else if names.contains("matroska") || names.contains("webm") {
            let mkv = MatroskaLayout(source: source)
            docType = mkv.docType
            let cuesPresent = mkv.cues.map(source.hasBytes) ?? false
            if source.aborted { throw .aborted }
            if cuesPresent {
                // The Matroska demuxer reads Cues only at the first seek.
                try? context.seek(toMicroseconds: Int64((context.startSeconds * 1_000_000).rounded()))
                if source.aborted { throw .aborted }
                context.io.clearError()
                isComplete = true
            } else {
                missingIndex = mkv.cues
                let walk = mkv.clusters(source: source)
                if source.aborted { throw .aborted }
                let startSeconds = context.startSeconds
                clusters = walk.clusters.map {
                    IndexEntry(
                        position: $0.range.lowerBound, size: Int64($0.range.count), time: $0.seconds - startSeconds,
                        isKeyframe: $0.startsWithKeyframe)
                }
                isComplete = walk.complete
            }
        }
    }
}
