import CAVFormat

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Every call into libavformat, libavcodec and libavutil goes through this file, so the whole C
// surface reads in one place. The owners (`IOContext`, `FormatContext`) call these.
//
// The libraries are opened with `dlopen` on first use rather than linked: linked, they load every
// codec library Debian's FFmpeg depends on (some 150) into every `vfetch` process, `get` included,
// at ~45 MB of resident memory and ~35 ms at each start, for commands that never probe media.

/// A failed libavformat call, named by its `AVERROR` code and libavutil's text for it.
struct AVFormatError: Error, CustomStringConvertible {
    let code: Int32
    let call: String

    var description: String { "\(call): \(LibAV.message(code)) (\(LibAV.name(code)))" }
}

/// The read callback of an `AVIOContext`: fill `buffer` with up to `size` bytes, or return an `AVERROR`.
typealias AVIOReadCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32
/// The seek callback of an `AVIOContext`: move to `offset` per `whence`, or answer the size for `AVSEEK_SIZE`.
typealias AVIOSeekCallback = @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64

/// The functions vfetch calls, resolved from the libraries whose headers it was compiled against.
private struct Symbols {
    typealias ReadPacket = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32
    typealias Seek = @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64

    let logSetLevel: @convention(c) (Int32) -> Void
    let strerror: @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
    let malloc: @convention(c) (Int) -> UnsafeMutableRawPointer?
    let free: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let freep: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let strdup: @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
    let ioAllocContext:
        @convention(c) (
            UnsafeMutablePointer<UInt8>?, Int32, Int32, UnsafeMutableRawPointer?, ReadPacket?, ReadPacket?, Seek?
        ) -> UnsafeMutablePointer<AVIOContext>?
    let ioContextFree: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?) -> Void
    let allocContext: @convention(c) () -> UnsafeMutablePointer<AVFormatContext>?
    let openInput:
        @convention(c) (
            UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?, UnsafePointer<CChar>?,
            UnsafePointer<AVInputFormat>?, UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32
    let probeInputBuffer:
        @convention(c) (
            UnsafeMutablePointer<AVIOContext>?, UnsafeMutablePointer<UnsafePointer<AVInputFormat>?>?, UnsafePointer<CChar>?,
            UnsafeMutableRawPointer?, UInt32, UInt32
        ) -> Int32
    let findStreamInfo: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let seekFrame: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, Int32, Int64, Int32) -> Int32
    let closeInput: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?) -> Void
    let indexEntryCount: @convention(c) (UnsafePointer<AVStream>?) -> Int32
    let indexEntry: @convention(c) (UnsafeMutablePointer<AVStream>?, Int32) -> UnsafePointer<AVIndexEntry>?
    let codecName: @convention(c) (AVCodecID) -> UnsafePointer<CChar>?
    // Reading packets and writing them into another container (`StreamRemuxer`).
    let readFrame: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<AVPacket>?) -> Int32
    let allocOutputContext:
        @convention(c) (
            UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?, UnsafePointer<AVOutputFormat>?,
            UnsafePointer<CChar>?, UnsafePointer<CChar>?
        ) -> Int32
    let freeContext: @convention(c) (UnsafeMutablePointer<AVFormatContext>?) -> Void
    let newStream: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafePointer<AVCodec>?) -> UnsafeMutablePointer<AVStream>?
    let parametersCopy: @convention(c) (UnsafeMutablePointer<AVCodecParameters>?, UnsafePointer<AVCodecParameters>?) -> Int32
    let queryCodec: @convention(c) (UnsafePointer<AVOutputFormat>?, AVCodecID, Int32) -> Int32
    let codecIDForTag: @convention(c) (UnsafePointer<OpaquePointer?>?, UInt32) -> AVCodecID
    let tagForCodecID: @convention(c) (UnsafePointer<OpaquePointer?>?, AVCodecID, UnsafeMutablePointer<UInt32>?) -> Int32
    let writeHeader: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let interleavedWriteFrame: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<AVPacket>?) -> Int32
    let writeTrailer: @convention(c) (UnsafeMutablePointer<AVFormatContext>?) -> Int32
    let packetAlloc: @convention(c) () -> UnsafeMutablePointer<AVPacket>?
    let packetFree: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVPacket>?>?) -> Void
    let packetUnref: @convention(c) (UnsafeMutablePointer<AVPacket>?) -> Void
    let packetRescaleTimestamps: @convention(c) (UnsafeMutablePointer<AVPacket>?, AVRational, AVRational) -> Void
    let rescale: @convention(c) (Int64, AVRational, AVRational) -> Int64
    let dictionaryCopy: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, Int32) -> Int32
    let dictionarySet: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32) -> Int32
    let newPacket: @convention(c) (UnsafeMutablePointer<AVPacket>?, Int32) -> Int32

    /// nil when the libraries cannot be opened; `failure` says why.
    // Unsafe but safe: written only inside `Symbols()`, which runs once, while the lazy `loaded` is set
    // up (Swift initialises a static `let` exactly once, under its own lock); read only after `loaded`.
    nonisolated(unsafe) static var failure = ""
    static let loaded: Symbols? = Symbols()

    private init?() {
        let names = [
            "libavutil.so.\(LIBAVUTIL_VERSION_MAJOR)", "libavcodec.so.\(LIBAVCODEC_VERSION_MAJOR)",
            "libavformat.so.\(LIBAVFORMAT_VERSION_MAJOR)",
        ]
        var handles: [UnsafeMutableRawPointer] = []
        for name in names {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                Self.failure = "cannot load \(name) (apt-get install \(name.prefix { $0 != "." }.dropFirst(3))-dev)"
                return nil
            }
            handles.append(handle)
        }
        func symbol<T>(_ name: String, as type: T.Type = T.self) -> T? {
            for handle in handles.reversed() {
                if let address = dlsym(handle, name) { return unsafeBitCast(address, to: type) }
            }
            Symbols.failure = "\(name) is missing from the FFmpeg libraries"
            return nil
        }
        guard let logSetLevel = symbol("av_log_set_level", as: (@convention(c) (Int32) -> Void).self),
            let maxAlloc = symbol("av_max_alloc", as: (@convention(c) (Int) -> Void).self),
            let strerror = symbol("av_strerror", as: (@convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32).self),
            let malloc = symbol("av_malloc", as: (@convention(c) (Int) -> UnsafeMutableRawPointer?).self),
            let free = symbol("av_free", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self),
            let freep = symbol("av_freep", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self),
            let strdup = symbol("av_strdup", as: (@convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?).self),
            let ioAllocContext = symbol("avio_alloc_context", as: Self.ioAllocContextType),
            let ioContextFree = symbol(
                "avio_context_free", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?) -> Void).self),
            let allocContext = symbol("avformat_alloc_context", as: (@convention(c) () -> UnsafeMutablePointer<AVFormatContext>?).self),
            let openInput = symbol("avformat_open_input", as: Self.openInputType),
            let probeInputBuffer = symbol("av_probe_input_buffer2", as: Self.probeInputBufferType),
            let findStreamInfo = symbol(
                "avformat_find_stream_info",
                as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32).self),
            let seekFrame = symbol(
                "av_seek_frame", as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, Int32, Int64, Int32) -> Int32).self),
            let closeInput = symbol(
                "avformat_close_input", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?) -> Void).self),
            let indexEntryCount = symbol("avformat_index_get_entries_count", as: (@convention(c) (UnsafePointer<AVStream>?) -> Int32).self),
            let indexEntry = symbol(
                "avformat_index_get_entry",
                as: (@convention(c) (UnsafeMutablePointer<AVStream>?, Int32) -> UnsafePointer<AVIndexEntry>?).self),
            let codecName = symbol("avcodec_get_name", as: (@convention(c) (AVCodecID) -> UnsafePointer<CChar>?).self),
            let readFrame = symbol("av_read_frame", as: Self.packetCallType),
            let allocOutputContext = symbol("avformat_alloc_output_context2", as: Self.allocOutputContextType),
            let freeContext = symbol("avformat_free_context", as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?) -> Void).self),
            let newStream = symbol(
                "avformat_new_stream",
                as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafePointer<AVCodec>?) -> UnsafeMutablePointer<AVStream>?)
                    .self),
            let parametersCopy = symbol(
                "avcodec_parameters_copy",
                as: (@convention(c) (UnsafeMutablePointer<AVCodecParameters>?, UnsafePointer<AVCodecParameters>?) -> Int32).self),
            let queryCodec = symbol(
                "avformat_query_codec", as: (@convention(c) (UnsafePointer<AVOutputFormat>?, AVCodecID, Int32) -> Int32).self),
            let codecIDForTag = symbol("av_codec_get_id", as: (@convention(c) (UnsafePointer<OpaquePointer?>?, UInt32) -> AVCodecID).self),
            let tagForCodecID = symbol(
                "av_codec_get_tag2",
                as: (@convention(c) (UnsafePointer<OpaquePointer?>?, AVCodecID, UnsafeMutablePointer<UInt32>?) -> Int32).self),
            let writeHeader = symbol(
                "avformat_write_header",
                as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32).self),
            let interleavedWriteFrame = symbol("av_interleaved_write_frame", as: Self.packetCallType),
            let writeTrailer = symbol("av_write_trailer", as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?) -> Int32).self),
            let packetAlloc = symbol("av_packet_alloc", as: (@convention(c) () -> UnsafeMutablePointer<AVPacket>?).self),
            let packetFree = symbol(
                "av_packet_free", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVPacket>?>?) -> Void).self),
            let packetUnref = symbol("av_packet_unref", as: (@convention(c) (UnsafeMutablePointer<AVPacket>?) -> Void).self),
            let packetRescaleTimestamps = symbol(
                "av_packet_rescale_ts", as: (@convention(c) (UnsafeMutablePointer<AVPacket>?, AVRational, AVRational) -> Void).self),
            let rescale = symbol("av_rescale_q", as: (@convention(c) (Int64, AVRational, AVRational) -> Int64).self),
            let dictionaryCopy = symbol(
                "av_dict_copy", as: (@convention(c) (UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, Int32) -> Int32).self),
            let dictionarySet = symbol(
                "av_dict_set",
                as: (@convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32) -> Int32)
                    .self),
            let newPacket = symbol("av_new_packet", as: (@convention(c) (UnsafeMutablePointer<AVPacket>?, Int32) -> Int32).self)
        else { return nil }
        (self.logSetLevel, self.strerror, self.malloc, self.free, self.freep) = (logSetLevel, strerror, malloc, free, freep)
        (self.strdup, self.probeInputBuffer) = (strdup, probeInputBuffer)
        (self.ioAllocContext, self.ioContextFree, self.allocContext) = (ioAllocContext, ioContextFree, allocContext)
        (self.openInput, self.findStreamInfo, self.seekFrame, self.closeInput) = (openInput, findStreamInfo, seekFrame, closeInput)
        (self.indexEntryCount, self.indexEntry, self.codecName) = (indexEntryCount, indexEntry, codecName)
        (self.readFrame, self.allocOutputContext, self.freeContext, self.newStream) = (
            readFrame, allocOutputContext, freeContext, newStream
        )
        (self.parametersCopy, self.queryCodec, self.codecIDForTag, self.tagForCodecID) = (
            parametersCopy, queryCodec, codecIDForTag, tagForCodecID
        )
        (self.writeHeader, self.interleavedWriteFrame, self.writeTrailer) = (writeHeader, interleavedWriteFrame, writeTrailer)
        (self.packetAlloc, self.packetFree, self.packetUnref) = (packetAlloc, packetFree, packetUnref)
        (self.packetRescaleTimestamps, self.rescale, self.dictionaryCopy) = (packetRescaleTimestamps, rescale, dictionaryCopy)
        (self.dictionarySet, self.newPacket) = (dictionarySet, newPacket)
        logSetLevel(AV_LOG_QUIET)  // libavformat logs to stderr by default, over vfetch's progress display
        // Demuxers, and the decoders `avformat_find_stream_info` opens, size some buffers by what
        // the bytes declare (a box's stated length, a frame of the dimensions a stream claims), up
        // to libavutil's default of 2 GiB per allocation. 512 MiB still holds the MP4 muxer's
        // sample table for 24 hours at 60 fps (some 330 MB).
        maxAlloc(LibAV.maxAllocation)
    }

    static let ioAllocContextType =
        (@convention(c) (
            UnsafeMutablePointer<UInt8>?, Int32, Int32, UnsafeMutableRawPointer?, ReadPacket?, ReadPacket?, Seek?
        ) -> UnsafeMutablePointer<AVIOContext>?).self
    static let packetCallType = (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<AVPacket>?) -> Int32).self
    static let allocOutputContextType =
        (@convention(c) (
            UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?, UnsafePointer<AVOutputFormat>?,
            UnsafePointer<CChar>?, UnsafePointer<CChar>?
        ) -> Int32).self
    static let probeInputBufferType =
        (@convention(c) (
            UnsafeMutablePointer<AVIOContext>?, UnsafeMutablePointer<UnsafePointer<AVInputFormat>?>?, UnsafePointer<CChar>?,
            UnsafeMutableRawPointer?, UInt32, UInt32
        ) -> Int32).self
    static let openInputType =
        (@convention(c) (
            UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?, UnsafePointer<CChar>?,
            UnsafePointer<AVInputFormat>?, UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32).self
}

enum LibAV {
    /// Why the FFmpeg libraries could not be loaded, or nil when they are.
    static var unavailable: String? { Symbols.loaded == nil ? Symbols.failure : nil }

    /// `AVERROR_EOF`.
    static let errorEndOfFile = cav_error_eof()
    /// `AVERROR_EXIT`: what the read callback answers for missing bytes and aborts.
    static let errorExit = cav_error_exit()
    /// `AVERROR_INVALIDDATA`.
    static let errorInvalidData = cav_error_invaliddata()
    /// `AV_NOPTS_VALUE`: a timestamp libavformat does not know.
    static let noTimestamp = cav_nopts_value()

    /// `AVERROR(errno)`.
    static func error(_ errno: Int32) -> Int32 { cav_averror(errno) }

    /// Loading the libraries also silences libavformat's logging (`av_log_set_level`).
    static var silenced: Void { _ = Symbols.loaded }

    /// libavutil's text for an error code. The corresponding call is `av_strerror`.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard Symbols.loaded?.strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The C name of an error code, such as `AVERROR_INVALIDDATA` or `AVERROR(EIO)`.
    static func name(_ code: Int32) -> String {
        switch code {
        case errorEndOfFile: "AVERROR_EOF"
        case errorExit: "AVERROR_EXIT"
        case errorInvalidData: "AVERROR_INVALIDDATA"
        case error(ENOMEM): "AVERROR(ENOMEM)"
        case error(EINVAL): "AVERROR(EINVAL)"
        case error(EIO): "AVERROR(EIO)"
        case error(EPERM): "AVERROR(EPERM)"
        default: "AVERROR \(code)"
        }
    }

    // MARK: Memory

    /// The largest block libavutil allocates (`av_max_alloc`), for every user in the process.
    static let maxAllocation = 512 << 20

    /// The corresponding call is `av_malloc`.
    static func allocate(_ size: Int) -> UnsafeMutableRawPointer? { Symbols.loaded?.malloc(size) }

    /// The corresponding call is `av_free`.
    static func free(_ pointer: UnsafeMutableRawPointer?) { Symbols.loaded?.free(pointer) }

    // MARK: AVIOContext

    /// The corresponding call is `avio_alloc_context` (read-only: no write callback).
    static func allocateIOContext(
        buffer: UnsafeMutableRawPointer, size: Int32, opaque: UnsafeMutableRawPointer,
        read: AVIOReadCallback, seek: AVIOSeekCallback
    ) -> UnsafeMutablePointer<AVIOContext>? {
        Symbols.loaded?.ioAllocContext(buffer.assumingMemoryBound(to: UInt8.self), size, 0, opaque, read, nil, seek)
    }

    /// The corresponding call is `avio_alloc_context` (write-only: no read callback). The write
    /// callback's type is the read callback's: libavformat 59 declares its buffer non-const.
    static func allocateWritingIOContext(
        buffer: UnsafeMutableRawPointer, size: Int32, opaque: UnsafeMutableRawPointer,
        write: AVIOReadCallback, seek: AVIOSeekCallback
    ) -> UnsafeMutablePointer<AVIOContext>? {
        Symbols.loaded?.ioAllocContext(buffer.assumingMemoryBound(to: UInt8.self), size, 1, opaque, nil, write, seek)
    }

    /// Frees the buffer the context holds now, which libavformat may have reallocated, then the
    /// context. The corresponding calls are `av_freep(&ctx->buffer)` and `avio_context_free`.
    static func freeIOContext(_ context: UnsafeMutablePointer<AVIOContext>) {
        guard let library = Symbols.loaded else { return }
        withUnsafeMutablePointer(to: &context.pointee.buffer) { library.freep($0) }
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        library.ioContextFree(&pointer)
    }

    // MARK: AVFormatContext

    /// The corresponding call is `avformat_alloc_context`.
    static func allocateFormatContext() -> UnsafeMutablePointer<AVFormatContext>? { Symbols.loaded?.allocContext() }

    /// Lets libavformat choose only among the demuxers named in `formats` (its names, comma-separated)
    /// and open no I/O beyond the context's own `pb`. A playlist demuxer (hls, dash) would otherwise
    /// open the URLs the bytes list, and another demuxer (libgme) inflate gzipped bytes whole.
    /// libavformat frees the lists with the context, so they come from `av_strdup`.
    static func restrictInput(_ context: UnsafeMutablePointer<AVFormatContext>, to formats: String) throws(AVFormatError) {
        guard let library = Symbols.loaded else { throw AVFormatError(code: error(ENOSYS), call: Symbols.failure) }
        context.pointee.format_whitelist = library.strdup(formats)
        // No protocol has this name; nested opens go through `io_open` first anyway.
        context.pointee.protocol_whitelist = library.strdup("none")
        guard context.pointee.format_whitelist != nil, context.pointee.protocol_whitelist != nil else {
            throw AVFormatError(code: error(ENOMEM), call: "av_strdup")
        }
        // Refuses every nested open (a playlist's segment, an MP4's external data reference).
        context.pointee.io_open = { _, _, _, _, _ in LibAV.error(EPERM) }
    }

    /// The name of the demuxer libavformat would choose for the bytes `io` reads, by the demuxers'
    /// probe functions alone: no header is read. The corresponding call is `av_probe_input_buffer2`.
    static func probeFormatName(_ io: UnsafeMutablePointer<AVIOContext>, url: String) -> String? {
        var format: UnsafePointer<AVInputFormat>?
        guard let library = Symbols.loaded, library.probeInputBuffer(io, &format, url, nil, 0, 0) >= 0,
            let name = format?.pointee.name
        else { return nil }
        return String(cString: name)
    }

    /// Probes the format and reads the header. On failure libavformat has freed the context (but
    /// not a custom `pb`). The corresponding call is `avformat_open_input`.
    static func openInput(_ context: UnsafeMutablePointer<AVFormatContext>, url: String) throws(AVFormatError)
        -> UnsafeMutablePointer<AVFormatContext>
    {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        guard let library = Symbols.loaded else { throw AVFormatError(code: error(ENOSYS), call: Symbols.failure) }
        let code = library.openInput(&pointer, url, nil, nil)
        guard code >= 0, let pointer else { throw AVFormatError(code: code, call: "avformat_open_input") }
        return pointer
    }

    /// The corresponding call is `avformat_find_stream_info`.
    static func findStreamInfo(_ context: UnsafeMutablePointer<AVFormatContext>) throws(AVFormatError) {
        let code = Symbols.loaded?.findStreamInfo(context, nil) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "avformat_find_stream_info") }
    }

    /// The corresponding call is `av_seek_frame`.
    static func seekFrame(
        _ context: UnsafeMutablePointer<AVFormatContext>, stream: Int32, timestamp: Int64, flags: Int32
    ) throws(AVFormatError) {
        let code = Symbols.loaded?.seekFrame(context, stream, timestamp, flags) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "av_seek_frame") }
    }

    /// The corresponding call is `avformat_close_input`.
    static func closeInput(_ context: UnsafeMutablePointer<AVFormatContext>) {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        Symbols.loaded?.closeInput(&pointer)
    }

    // MARK: Streams

    /// The corresponding call is `avformat_index_get_entries_count`.
    static func indexEntryCount(_ stream: UnsafeMutablePointer<AVStream>) -> Int {
        Int(Symbols.loaded?.indexEntryCount(stream) ?? 0)
    }

    /// The corresponding call is `avformat_index_get_entry`.
    static func indexEntry(_ stream: UnsafeMutablePointer<AVStream>, _ index: Int) -> AVIndexEntry? {
        Symbols.loaded?.indexEntry(stream, Int32(index))?.pointee
    }

    /// A codec's short name, such as "h264". The corresponding call is `avcodec_get_name`.
    static func codecName(_ id: AVCodecID) -> String {
        guard let name = Symbols.loaded?.codecName(id) else { return "none" }
        return String(cString: name)
    }

    // MARK: Reading packets

    /// The next packet of any stream not discarded; `AVERROR_EOF` at the end. The corresponding
    /// call is `av_read_frame`.
    static func readFrame(_ context: UnsafeMutablePointer<AVFormatContext>, into packet: UnsafeMutablePointer<AVPacket>)
        -> Int32
    {
        Symbols.loaded?.readFrame(context, packet) ?? error(ENOSYS)
    }

    // MARK: Muxing

    /// An output context for the muxer named `formatName` ("mp4", "matroska"); `url` is what the
    /// muxer names the output by. The corresponding call is `avformat_alloc_output_context2`.
    static func allocateOutputContext(formatName: String, url: String) throws(AVFormatError)
        -> UnsafeMutablePointer<AVFormatContext>
    {
        guard let library = Symbols.loaded else { throw AVFormatError(code: error(ENOSYS), call: Symbols.failure) }
        var pointer: UnsafeMutablePointer<AVFormatContext>?
        let code = library.allocOutputContext(&pointer, nil, formatName, url)
        guard code >= 0, let pointer else { throw AVFormatError(code: code, call: "avformat_alloc_output_context2") }
        return pointer
    }

    /// Frees a context that was never opened for input, and its streams. The corresponding call is
    /// `avformat_free_context`.
    static func freeContext(_ context: UnsafeMutablePointer<AVFormatContext>) {
        Symbols.loaded?.freeContext(context)
    }

    /// The corresponding call is `avformat_new_stream`.
    static func newStream(_ context: UnsafeMutablePointer<AVFormatContext>) throws(AVFormatError)
        -> UnsafeMutablePointer<AVStream>
    {
        guard let stream = Symbols.loaded?.newStream(context, nil) else {
            throw AVFormatError(code: error(ENOMEM), call: "avformat_new_stream")
        }
        return stream
    }

    /// The corresponding call is `avcodec_parameters_copy`.
    static func copyParameters(
        from source: UnsafePointer<AVCodecParameters>, to destination: UnsafeMutablePointer<AVCodecParameters>
    ) throws(AVFormatError) {
        let code = Symbols.loaded?.parametersCopy(destination, source) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "avcodec_parameters_copy") }
    }

    /// 1 when the muxer can store `codec`, 0 when it cannot, negative when it does not say.
    /// The corresponding call is `avformat_query_codec` (normal strictness).
    static func queryCodec(_ format: UnsafePointer<AVOutputFormat>, _ codec: AVCodecID) -> Int32 {
        Symbols.loaded?.queryCodec(format, codec, FF_COMPLIANCE_NORMAL) ?? error(ENOSYS)
    }

    /// The codec a muxer's tag table maps `tag` to. The corresponding call is `av_codec_get_id`.
    static func codecID(forTag tag: UInt32, in tags: UnsafePointer<OpaquePointer?>) -> AVCodecID {
        Symbols.loaded?.codecIDForTag(tags, tag) ?? AV_CODEC_ID_NONE
    }

    /// Whether a muxer's tag table has a tag for `codec`. The corresponding call is `av_codec_get_tag2`.
    static func hasTag(for codec: AVCodecID, in tags: UnsafePointer<OpaquePointer?>) -> Bool {
        var tag: UInt32 = 0
        return (Symbols.loaded?.tagForCodecID(tags, codec, &tag) ?? 0) != 0
    }

    /// Initializes the muxer and writes the container's header. The corresponding call is
    /// `avformat_write_header`.
    static func writeHeader(_ context: UnsafeMutablePointer<AVFormatContext>) throws(AVFormatError) {
        let code = Symbols.loaded?.writeHeader(context, nil) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "avformat_write_header") }
    }

    /// Hands a packet to the muxer, which takes its data (the packet is blank afterwards), inserts
    /// the bitstream filters the container needs and writes packets in `dts` order.
    /// The corresponding call is `av_interleaved_write_frame`.
    static func interleavedWriteFrame(
        _ context: UnsafeMutablePointer<AVFormatContext>, _ packet: UnsafeMutablePointer<AVPacket>
    ) throws(AVFormatError) {
        let code = Symbols.loaded?.interleavedWriteFrame(context, packet) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "av_interleaved_write_frame") }
    }

    /// Writes the packets still queued and the container's trailer, and flushes the output.
    /// The corresponding call is `av_write_trailer`.
    static func writeTrailer(_ context: UnsafeMutablePointer<AVFormatContext>) throws(AVFormatError) {
        let code = Symbols.loaded?.writeTrailer(context) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "av_write_trailer") }
    }

    /// Copies every entry of `source` into `destination`. The corresponding call is `av_dict_copy`.
    static func copyDictionary(_ source: OpaquePointer?, to destination: UnsafeMutablePointer<OpaquePointer?>) {
        guard let source else { return }
        _ = Symbols.loaded?.dictionaryCopy(destination, source, 0)
    }

    /// Sets `key` to `value` in a dictionary (a stream's metadata). The corresponding call is `av_dict_set`.
    static func setEntry(_ key: String, to value: String, in dictionary: UnsafeMutablePointer<OpaquePointer?>) {
        _ = Symbols.loaded?.dictionarySet(dictionary, key, value, 0)
    }

    /// A copy of `bytes` in libavutil's memory, zero-padded as codec parameters' `extradata` must be.
    static func allocateExtradata(_ bytes: [UInt8]) -> UnsafeMutablePointer<UInt8>? {
        guard let memory = Symbols.loaded?.malloc(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else { return nil }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))
        memory.copyMemory(from: bytes, byteCount: bytes.count)
        return memory.assumingMemoryBound(to: UInt8.self)
    }

    // MARK: Packets and timestamps

    /// Gives the packet `bytes` as its data, keeping its timestamps, stream and flags (its side data
    /// goes). The corresponding calls are `av_packet_unref` and `av_new_packet`.
    static func replaceData(of packet: UnsafeMutablePointer<AVPacket>, with bytes: [UInt8]) throws(AVFormatError) {
        let kept = packet.pointee
        unrefPacket(packet)
        let code = Symbols.loaded?.newPacket(packet, Int32(bytes.count)) ?? error(ENOSYS)
        if code < 0 { throw AVFormatError(code: code, call: "av_new_packet") }
        if !bytes.isEmpty { packet.pointee.data.update(from: bytes, count: bytes.count) }
        (packet.pointee.pts, packet.pointee.dts, packet.pointee.duration) = (kept.pts, kept.dts, kept.duration)
        (packet.pointee.stream_index, packet.pointee.flags, packet.pointee.pos) = (kept.stream_index, kept.flags, kept.pos)
    }

    /// The corresponding call is `av_packet_alloc`.
    static func allocatePacket() -> UnsafeMutablePointer<AVPacket>? { Symbols.loaded?.packetAlloc() }

    /// The corresponding call is `av_packet_free`.
    static func freePacket(_ packet: UnsafeMutablePointer<AVPacket>) {
        var pointer: UnsafeMutablePointer<AVPacket>? = packet
        Symbols.loaded?.packetFree(&pointer)
    }

    /// Releases the packet's data and resets its fields. The corresponding call is `av_packet_unref`.
    static func unrefPacket(_ packet: UnsafeMutablePointer<AVPacket>) { Symbols.loaded?.packetUnref(packet) }

    /// Converts the packet's `pts`, `dts` and `duration` from one time base to another, rounding
    /// to nearest; unknown timestamps stay unknown. The corresponding call is `av_packet_rescale_ts`.
    static func rescaleTimestamps(_ packet: UnsafeMutablePointer<AVPacket>, from source: AVRational, to target: AVRational) {
        Symbols.loaded?.packetRescaleTimestamps(packet, source, target)
    }

    /// `value` in `source` units as `target` units, rounded to nearest. The corresponding call is `av_rescale_q`.
    static func rescale(_ value: Int64, from source: AVRational, to target: AVRational) -> Int64 {
        Symbols.loaded?.rescale(value, source, target) ?? value
    }
}
