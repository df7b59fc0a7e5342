import VFetchCore

/// What a partial media file is, what of it can be played, and which bytes playback needs next.
///
/// Opens the file through libavformat with a custom I/O context over a ``MediaByteSource``, then
/// keeps a copy of the streams' indexes, so the questions after `init` need no further reads.
/// Confined to the thread that created it; create it on a thread of its own, since its reads may
/// block (see ``probeMedia(path:length:present:)``).
public final class MediaProbe {
    /// The URL libavformat is given: not a plain path, which libavformat would treat as a local
    /// file and then skip enlarging its buffer for badly interleaved files.
    static let url = "vfetch:partial"
    static let bufferSize = 64 << 10
    /// Bytes and microseconds of packets `avformat_find_stream_info` may read.
    static let probeSize: Int64 = 1 << 20
    static let analyzeDuration: Int64 = 2_000_000

    public let info: MediaInfo
    private let index: MediaIndex
    /// Kept open for later reads through the same context; everything above is a copy.
    private let context: FormatContext

    /// Opens the source and reads the header and stream information.
    ///
    /// Throws `.needsBytes(range)` when the header is not present (for an MP4, the whole `moov`
    /// box), `.invalidData` when the bytes are not media libavformat can read, `.aborted` when
    /// the source gave up. The corresponding calls are `avformat_open_input` and
    /// `avformat_find_stream_info`.
    public init(source: any MediaByteSource) throws(MediaError) {
        let io: IOContext
        do {
            io = try IOContext(source: source, bufferSize: Self.bufferSize)
        } catch {
            throw .invalidData(error.description)
        }
        let (context, missedInHeader) = try Self.open(io)
        // The probe's own reads of box and element headers go through `io.io`, which notes aborts.
        let layout = try ContainerLayout(context: context, source: io.io)
        let startSeconds = context.startSeconds
        let descriptions = context.streams.map { StreamDescription($0, startSeconds: startSeconds) }
        guard !descriptions.isEmpty else {
            // A demuxer that stops at missing bytes as at the end of the file may open with no streams.
            if let missedInHeader { throw .needsBytes(Self.neededHeader(missing: missedInHeader, source: io.io)) }
            throw .invalidData("\(context.formatName): no streams")
        }
        let mediaStreams = descriptions.map(\.stream)
        let (duration, bitRate) = Self.timing(context: context, layout: layout, length: source.length)
        info = MediaInfo(
            container: ContainerName.short(
                formatName: context.formatName, docType: layout.docType, streams: mediaStreams),
            duration: duration, bitRate: bitRate, streams: mediaStreams,
            faststart: layout.mp4?.faststart, fragmented: layout.mp4?.fragmented)

        // Audio and video decide playback; cover images and subtitles do not.
        let playback = descriptions.filter {
            !$0.isAttachedPicture && ($0.stream.kind == "video" || $0.stream.kind == "audio")
        }
        var streamIndexes = playback.map {
            StreamIndex(isVideo: $0.stream.kind == "video", entries: $0.entries, decodeDelay: $0.decodeDelay)
        }
        if let clusters = layout.clusters {
            streamIndexes = [StreamIndex(isVideo: playback.contains { $0.stream.kind == "video" }, entries: clusters)]
        }
        // Without a known header: everything before the first indexed byte.
        let firstPosition = streamIndexes.flatMap { $0.entries.map(\.position) }.min()
        index = MediaIndex(
            streams: streamIndexes, header: layout.header ?? firstPosition.map { [0..<$0] } ?? [],
            missingIndex: layout.missingIndex, fragments: layout.mp4?.fragments ?? [], length: source.length,
            duration: duration ?? context.durationSeconds, isComplete: layout.isComplete)
        self.context = context
    }

    /// Time ranges (seconds) that can be played from the bytes `present`, sorted and merged,
    /// from the streams' index: a stretch is playable when every index entry it needs (all audio
    /// and video streams) is present, starting at a keyframe. Nothing is playable without the
    /// header. The corresponding calls are `avformat_index_get_entries_count` and
    /// `avformat_index_get_entry`, made once in `init`.
    public func playableRanges(present: [Range<Int64>]) -> [ClosedRange<Double>] {
        index.playableRanges(present: present)
    }

    /// The byte ranges needed to start playing at `seconds`, sorted and merged: the header and
    /// index (for an MP4, `ftyp` and `moov`; for Matroska, missing `Cues`), then from the video
    /// keyframe at or before `seconds` to the next video keyframe, with the other streams from
    /// their own keyframes at or before that one's time. Present bytes are not subtracted.
    public func bytesNeeded(toStartAt seconds: Double) -> [Range<Int64>] {
        index.bytesNeeded(toStartAt: seconds)
    }

    /// The file offset where reading for playback at `seconds` starts (the keyframe at or before
    /// it), or nil when the index cannot say.
    public func byteOffset(forTime seconds: Double) -> Int64? {
        index.byteOffset(forTime: seconds)
    }

    /// The duration and overall bit rate: libavformat's, unless the container knows better.
    ///
    /// libavformat reads a fragmented MP4's duration from the fragments it walked, which is the
    /// whole movie only when every fragment is present. Otherwise the movie runs to the end of its
    /// last fragment (or as `mehd` says); when the present bytes do not say, both are unknown: the
    /// bit rate libavformat gives then is the file's size over the wrong duration.
    private static func timing(context: FormatContext, layout: ContainerLayout, length: Int64) -> (
        duration: Double?, bitRate: Int64?
    ) {
        guard let mp4 = layout.mp4, mp4.fragmented, !layout.isComplete else {
            return (context.durationSeconds, context.bitRate)
        }
        // (The end of the last fragment, counted from media time 0: a recording whose first fragment
        // starts later reads that much longer until it is complete.)
        if case .seconds(let seconds) = layout.movieDuration, seconds > 0 {
            // What libavformat and ffprobe give for a fragmented MP4 once they know its duration.
            let bitRate = (Double(length) * 8 / seconds).rounded(.down)
            return (seconds, bitRate < 0x1p63 ? Int64(bitRate) : nil)
        }
        return (nil, nil)
    }

    /// Opens the format and reads stream information, turning failures into ``MediaError``.
    /// Also returns the missing run reading the header ran into, if it succeeded all the same.
    private static func open(_ io: IOContext) throws(MediaError) -> (FormatContext, missedInHeader: Range<Int64>?) {
        let context: FormatContext
        do {
            context = try FormatContext(
                io: io, url: url, formats: InputFormats.media, probeSize: probeSize, analyzeDuration: analyzeDuration)
        } catch {
            if let refusal = io.io.refusal { throw .invalidData(refusal) }
            if io.io.aborted { throw .aborted }
            guard let missing = io.io.missing else { throw .invalidData(error.description) }
            throw .needsBytes(neededHeader(missing: missing, source: io.io))
        }
        if io.io.aborted { throw .aborted }
        let missedInHeader = io.io.missing
        io.clearError()
        do {
            try context.findStreamInfo()
        } catch {
            // Missing bytes after the header cost only precision (a frame rate, a codec detail):
            // carry on with what the header said, unless it said nothing.
            if io.io.aborted { throw .aborted }
            if context.streams.isEmpty {
                if let missing = missedInHeader ?? io.io.missing {
                    throw .needsBytes(neededHeader(missing: missing, source: io.io))
                }
                throw .invalidData(error.description)
            }
        }
        if let refusal = io.io.refusal { throw .invalidData(refusal) }
        if io.io.aborted { throw .aborted }
        io.clearError()
        return (context, missedInHeader)
    }

    /// What to ask for when opening ran into missing bytes: for an MP4 whose `moov` box header
    /// is present, the whole `moov` box; otherwise the missing run libavformat ran into.
    private static func neededHeader(missing: Range<Int64>, source: MediaIO) -> Range<Int64> {
        let layout = MP4Layout(source: source)
        if layout.looksLikeMP4, let moov = layout.moov, moov.range.overlaps(missing) { return moov.range }
        return missing
    }
}

@available(*, unavailable)
extension MediaProbe: Sendable {}
