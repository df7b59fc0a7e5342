import CAVFormat

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The demuxers vfetch lets libavformat choose, by libavformat's names (each matches a demuxer
/// whose names include it, so "mov" is "mov,mp4,m4a,3gp,3g2,mj2"). None opens another URL.
enum InputFormats {
    /// Media files: MP4 and QuickTime, Matroska and WebM, MPEG-TS, and bare audio.
    static let media = "mov,matroska,mpegts,aac,ac3,eac3,mp3"
    /// HLS and DASH segments: media files, and WebVTT subtitles.
    static let segments = media + ",webvtt"

    /// Whether a demuxer's names (such as "mov,mp4,m4a,3gp,3g2,mj2") include one of `formats`, as
    /// libavformat matches its `format_whitelist`.
    static func allow(_ name: String, in formats: String) -> Bool {
        !Set(name.split(separator: ",")).isDisjoint(with: formats.split(separator: ","))
    }
}

/// One opened `AVFormatContext` that reads through an ``IOContext``. Confined to the probing thread.
final class FormatContext {
    let raw: UnsafeMutablePointer<AVFormatContext>
    /// The context borrows `io.raw` as its `pb`. libavformat never frees custom I/O, so this owner
    /// keeps it alive and it is freed after the format context is closed.
    let io: IOContext

    /// Probes the format, one of `formats` (see ``InputFormats``), and reads the header, reading at
    /// most `probeSize` bytes and `analyzeDuration` microseconds of packets for stream information
    /// later. The corresponding call is `avformat_open_input`.
    init(io: IOContext, url: String, formats: String, probeSize: Int64, analyzeDuration: Int64) throws(AVFormatError) {
        _ = LibAV.silenced
        guard let context = LibAV.allocateFormatContext() else {
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "avformat_alloc_context")
        }
        context.pointee.pb = io.raw
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.probesize = probeSize
        context.pointee.max_analyze_duration = analyzeDuration
        do {
            try LibAV.restrictInput(context, to: formats)
        } catch {
            LibAV.freeContext(context)
            throw error
        }
        do {
            self.raw = try LibAV.openInput(context, url: url)
        } catch {
            // libavformat refuses a demuxer not on the list with `EINVAL`, and does not say which.
            guard error.code == LibAV.error(EINVAL) else { throw error }
            throw Self.refusal(of: io.io.source, url: url, formats: formats) ?? error
        }
        self.io = io
    }

    /// Why libavformat refused the bytes of `source` when it would read them with a demuxer not
    /// among `formats`, named by probing their start again; nil when it would not.
    private static func refusal(of source: any MediaByteSource, url: String, formats: String) -> AVFormatError? {
        guard let io = try? IOContext(source: source, bufferSize: 64 << 10),
            let name = LibAV.probeFormatName(io.raw, url: url), !InputFormats.allow(name, in: formats)
        else { return nil }
        return AVFormatError(
            code: LibAV.errorInvalidData, call: "libavformat reads these bytes as \(name), a format vfetch does not open")
    }

    deinit {
        LibAV.closeInput(raw)
    }

    /// Reads packets until every stream's codec parameters are known (within the probe limits).
    /// The corresponding call is `avformat_find_stream_info`.
    func findStreamInfo() throws(AVFormatError) {
        try LibAV.findStreamInfo(raw)
    }

    /// Seeks the default stream to `timestamp` (in `AV_TIME_BASE` units) or the keyframe before it.
    /// The corresponding call is `av_seek_frame`.
    func seek(toMicroseconds timestamp: Int64) throws(AVFormatError) {
        try LibAV.seekFrame(raw, stream: -1, timestamp: timestamp, flags: AVSEEK_FLAG_BACKWARD)
    }

    /// The demuxer's names, such as "mov,mp4,m4a,3gp,3g2,mj2" or "matroska,webm".
    var formatName: String {
        guard let format = raw.pointee.iformat, let name = format.pointee.name else { return "unknown" }
        return String(cString: name)
    }

    /// The container's start time in seconds (0 when unknown).
    var startSeconds: Double {
        let start = raw.pointee.start_time
        return start == LibAV.noTimestamp ? 0 : Double(start) / Double(AV_TIME_BASE)
    }

    /// The duration in seconds, if known.
    var durationSeconds: Double? {
        let duration = raw.pointee.duration
        guard duration != LibAV.noTimestamp, duration > 0 else { return nil }
        return Double(duration) / Double(AV_TIME_BASE)
    }

    /// Overall bits per second, if known.
    var bitRate: Int64? { raw.pointee.bit_rate > 0 ? raw.pointee.bit_rate : nil }

    var streams: [UnsafeMutablePointer<AVStream>] {
        guard let streams = raw.pointee.streams else { return [] }
        return (0..<Int(raw.pointee.nb_streams)).compactMap { streams[$0] }
    }
}

@available(*, unavailable)
extension FormatContext: Sendable {}

/// What one `AVStream` says about itself.
struct StreamDescription {
    var stream: MediaStream
    /// A cover image stored as a one-packet video stream (`AV_DISPOSITION_ATTACHED_PIC`).
    var isAttachedPicture: Bool
    /// Index entries as the demuxer keeps them, times in seconds from the container start.
    var entries: [IndexEntry]
    /// Seconds from a keyframe's decoding to its presentation, added to the index's times.
    var decodeDelay: Double = 0

    init(_ stream: UnsafeMutablePointer<AVStream>, startSeconds: Double) {
        let parameters = stream.pointee.codecpar.pointee
        let codec = LibAV.codecName(parameters.codec_id)
        switch parameters.codec_type {
        case AVMEDIA_TYPE_VIDEO:
            self.stream = MediaStream(
                kind: "video", codec: codec, width: parameters.width > 0 ? Int(parameters.width) : nil,
                height: parameters.height > 0 ? Int(parameters.height) : nil,
                frameRate: Self.rate(stream.pointee.avg_frame_rate) ?? Self.rate(stream.pointee.r_frame_rate))
        case AVMEDIA_TYPE_AUDIO:
            self.stream = MediaStream(
                kind: "audio", codec: codec,
                channels: parameters.ch_layout.nb_channels > 0 ? Int(parameters.ch_layout.nb_channels) : nil,
                sampleRate: parameters.sample_rate > 0 ? Int(parameters.sample_rate) : nil)
        case AVMEDIA_TYPE_SUBTITLE:
            self.stream = MediaStream(kind: "subtitle", codec: codec)
        default:
            self.stream = MediaStream(kind: "data", codec: codec)
        }
        isAttachedPicture = stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0

        let timeBase = stream.pointee.time_base
        let secondsPerTick = timeBase.den > 0 ? Double(timeBase.num) / Double(timeBase.den) : 0
        var raw: [AVIndexEntry] = []
        for index in 0..<LibAV.indexEntryCount(stream) {
            guard let entry = LibAV.indexEntry(stream, index), entry.pos >= 0, entry.timestamp != LibAV.noTimestamp
            else { continue }
            raw.append(entry)
        }
        // MP4 indexes hold decoding times; a keyframe is shown a constant reordering delay later
        // (B-frames). The stream's start time is its first presentation time, so the delay is
        // the gap between that and the first entry. Matroska indexes hold presentation times: no gap.
        var delay: Int64 = 0
        let start = stream.pointee.start_time
        // A damaged file's times may lie further apart than an Int64 holds (a 64-bit `tfdt` of
        // 2^63 reads as Int64.min): subtract with a check, and add the delay in Double below.
        if start != LibAV.noTimestamp, let first = raw.map(\.timestamp).min(), start > first,
            case (let gap, false) = start.subtractingReportingOverflow(first), Double(gap) * secondsPerTick < 1
        {
            delay = gap
        }
        decodeDelay = Double(delay) * secondsPerTick
        entries = raw.map { entry in
            IndexEntry(
                position: entry.pos, size: Int64(max(0, entry.size)),
                time: (Double(entry.timestamp) + Double(delay)) * secondsPerTick - startSeconds,
                isKeyframe: entry.flags & AVINDEX_KEYFRAME != 0)
        }
    }

    private static func rate(_ rational: AVRational) -> Double? {
        rational.num > 0 && rational.den > 0 ? Double(rational.num) / Double(rational.den) : nil
    }
}
