import CAVFormat
import VFetchCore
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file a remux writes: a `FileReplacement` of the output, put in place only once the muxer has
/// finished it, so a failed remux never leaves a file that looks complete. Its temporary file is
/// removed when it is dropped without ``commit()``.
///
/// Written at the muxer's positions: the MP4 and Matroska muxers seek back to fill in sizes.
/// Confined to the thread that remuxes.
final class RemuxFile {
    let path: String
    var temporaryPath: String { replacement.temporaryPath }
    private let replacement: FileReplacement
    /// Where the muxer's next write goes.
    private var position: Int64 = 0
    /// The `errno` of the first failed write, which libavformat only sees as `AVERROR(errno)`.
    private(set) var writeError: Int32?

    /// Creates the temporary file (as the umask says, like the download's own output), removing a
    /// stale one; refuses an output path that holds anything but a regular file.
    init(path: String) throws(MediaError) {
        if let kind = FileSystem.kind(at: path) { throw .cannotWrite("\(path) is \(kind), not a regular file") }
        self.path = path
        do {
            replacement = try FileReplacement(replacing: path, mode: 0o644)
        } catch {
            throw .cannotWrite(error.description)
        }
    }

    /// Answers one write callback: all of `bytes` at the position, or `AVERROR(errno)`.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        do {
            try FileSystem.write(bytes, to: replacement.descriptor, at: position)
        } catch {
            writeError = writeError ?? error.rawValue
            return LibAV.error(error.rawValue)
        }
        position += Int64(bytes.count)
        return Int32(bytes.count)
    }

    /// Answers one seek callback: the new position, the size for `AVSEEK_SIZE`, or `AVERROR(EINVAL)`.
    func seek(to offset: Int64, whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return size() }
        let base: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = position
        case SEEK_END:
            base = size()
            guard base >= 0 else { return base }
        default: return Int64(LibAV.error(EINVAL))
        }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0 else { return Int64(LibAV.error(EINVAL)) }
        position = target
        return target
    }

    /// The file's size so far, or `AVERROR(errno)`.
    private func size() -> Int64 {
        do { return try FileSystem.status(of: replacement.descriptor).size } catch { return Int64(LibAV.error(error.rawValue)) }
    }

    /// Puts the file in place of the output, durably (see `FileReplacement`), unless something
    /// other than a regular file was put there while remuxing.
    func commit() throws(MediaError) {
        if FileSystem.kind(at: path) != nil {  // put there while remuxing
            replacement.abandon()
            throw .cannotWrite("\(path): \(Errno.exists)")
        }
        do { try replacement.commit() } catch { throw .cannotWrite(error.description) }
    }
}

@available(*, unavailable)
extension RemuxFile: Sendable {}

/// One writing `AVIOContext` over a ``RemuxFile``. Confined to the thread that remuxes.
final class WritingIOContext {
    let raw: UnsafeMutablePointer<AVIOContext>
    /// The callbacks' userdata, passed unretained: this owner keeps it alive until the context is freed.
    let file: RemuxFile

    static let bufferSize = 256 << 10

    /// The corresponding call is `avio_alloc_context` (write flag set), with a buffer from `av_malloc`.
    init(file: RemuxFile) throws(AVFormatError) {
        guard let buffer = LibAV.allocate(Self.bufferSize) else {
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "av_malloc")
        }
        let context = LibAV.allocateWritingIOContext(
            buffer: buffer, size: Int32(Self.bufferSize), opaque: Unmanaged.passUnretained(file).toOpaque(),
            write: { opaque, buffer, size in
                guard let opaque, let buffer, size >= 0 else { return LibAV.error(EINVAL) }
                let file = Unmanaged<RemuxFile>.fromOpaque(opaque).takeUnretainedValue()
                return file.write(UnsafeRawBufferPointer(start: buffer, count: Int(size)))
            },
            seek: { opaque, offset, whence in
                guard let opaque else { return Int64(LibAV.error(EINVAL)) }
                return Unmanaged<RemuxFile>.fromOpaque(opaque).takeUnretainedValue().seek(to: offset, whence: whence)
            })
        guard let context else {
            LibAV.free(buffer)
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "avio_alloc_context")
        }
        raw = context
        self.file = file
    }

    deinit {
        LibAV.freeIOContext(raw)
    }
}

@available(*, unavailable)
extension WritingIOContext: Sendable {}

/// One muxing `AVFormatContext` that writes through a ``WritingIOContext``. Confined to the
/// thread that remuxes.
final class OutputFormatContext {
    let raw: UnsafeMutablePointer<AVFormatContext>
    /// The context borrows `io.raw` as its `pb`; libavformat never frees custom I/O, so this owner
    /// keeps it alive, and it is freed after the format context.
    let io: WritingIOContext

    /// A muxer named `formatName` ("mp4", "matroska") writing into `io`. The corresponding call is
    /// `avformat_alloc_output_context2`.
    init(formatName: String, io: WritingIOContext) throws(AVFormatError) {
        _ = LibAV.silenced
        raw = try LibAV.allocateOutputContext(formatName: formatName, url: io.file.temporaryPath)
        raw.pointee.pb = io.raw
        raw.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        self.io = io
    }

    deinit {
        LibAV.freeContext(raw)
    }

    var format: UnsafePointer<AVOutputFormat> { raw.pointee.oformat }

    /// The muxer accepts a `dts` equal to the one before (MPEG-TS does not need them to grow).
    var acceptsEqualTimestamps: Bool { format.pointee.flags & AVFMT_TS_NONSTRICT != 0 }

    /// A new stream that copies `input`'s codec parameters, disposition and metadata, with its
    /// codec tag kept when this container maps it to the same codec (`hvc1` stays `hvc1` in MP4),
    /// as `ffmpeg -c copy` does. The corresponding calls are `avformat_new_stream` and
    /// `avcodec_parameters_copy`.
    func addStream(copying input: UnsafeMutablePointer<AVStream>) throws(AVFormatError) -> UnsafeMutablePointer<AVStream> {
        let stream = try LibAV.newStream(raw)
        let parameters = input.pointee.codecpar!
        try LibAV.copyParameters(from: parameters, to: stream.pointee.codecpar)
        let tag = parameters.pointee.codec_tag
        if let tags = format.pointee.codec_tag,
            LibAV.codecID(forTag: tag, in: tags) != parameters.pointee.codec_id,
            LibAV.hasTag(for: parameters.pointee.codec_id, in: tags)
        {
            stream.pointee.codecpar.pointee.codec_tag = 0  // the muxer picks its own
        }
        stream.pointee.time_base = input.pointee.time_base  // a hint; the muxer settles it in the header
        stream.pointee.avg_frame_rate = input.pointee.avg_frame_rate
        stream.pointee.disposition = input.pointee.disposition
        LibAV.copyDictionary(input.pointee.metadata, to: &stream.pointee.metadata)
        return stream
    }

    /// MP4, QuickTime or iPod MP4: the containers whose languages are ISO 639-2/T and whose subtitles are `mov_text`.
    var isMP4: Bool {
        let name = String(cString: format.pointee.name)
        return name == "mp4" || name == "mov" || name == "ipod"
    }

    /// Turns a stream added by copying a WebVTT stream into a `mov_text` one; its packets must then be
    /// converted (`MovText.sample(fromWebVTT:)`).
    func makeMovText(_ stream: UnsafeMutablePointer<AVStream>) throws(AVFormatError) {
        let parameters = stream.pointee.codecpar!
        guard let extradata = LibAV.allocateExtradata(MovText.sampleDescription) else {
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "av_malloc")
        }
        LibAV.free(parameters.pointee.extradata)
        parameters.pointee.extradata = extradata
        parameters.pointee.extradata_size = Int32(MovText.sampleDescription.count)
        parameters.pointee.codec_id = AV_CODEC_ID_MOV_TEXT
        parameters.pointee.codec_tag = 0
    }

    /// Whether this container can hold `codec`: false only when the muxer says it cannot.
    /// The corresponding call is `avformat_query_codec`.
    func canHold(_ codec: AVCodecID) -> Bool {
        LibAV.queryCodec(format, codec) != 0
    }

    /// The corresponding call is `avformat_write_header`.
    func writeHeader() throws(AVFormatError) { try LibAV.writeHeader(raw) }

    /// The corresponding call is `av_interleaved_write_frame`.
    func write(_ packet: Packet) throws(AVFormatError) { try LibAV.interleavedWriteFrame(raw, packet.raw) }

    /// The corresponding call is `av_write_trailer`.
    func writeTrailer() throws(AVFormatError) { try LibAV.writeTrailer(raw) }

    var streams: [UnsafeMutablePointer<AVStream>] {
        guard let streams = raw.pointee.streams else { return [] }
        return (0..<Int(raw.pointee.nb_streams)).compactMap { streams[$0] }
    }
}

@available(*, unavailable)
extension OutputFormatContext: Sendable {}

/// One `AVPacket`, reused for every read. The corresponding calls are `av_packet_alloc` and `av_packet_free`.
final class Packet {
    let raw: UnsafeMutablePointer<AVPacket>

    init() throws(AVFormatError) {
        guard let packet = LibAV.allocatePacket() else { throw AVFormatError(code: LibAV.error(ENOMEM), call: "av_packet_alloc") }
        raw = packet
    }

    deinit {
        LibAV.freePacket(raw)
    }

    /// Releases the data of the packet read last. The corresponding call is `av_packet_unref`.
    func clear() { LibAV.unrefPacket(raw) }
}

@available(*, unavailable)
extension Packet: Sendable {}
