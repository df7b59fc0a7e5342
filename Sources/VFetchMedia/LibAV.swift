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
    let ioAllocContext: @convention(c) (
        UnsafeMutablePointer<UInt8>?, Int32, Int32, UnsafeMutableRawPointer?, ReadPacket?, ReadPacket?, Seek?
    ) -> UnsafeMutablePointer<AVIOContext>?
    let ioContextFree: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?) -> Void
    let allocContext: @convention(c) () -> UnsafeMutablePointer<AVFormatContext>?
    let openInput: @convention(c) (
        UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?, UnsafePointer<CChar>?,
        UnsafePointer<AVInputFormat>?, UnsafeMutablePointer<OpaquePointer?>?
    ) -> Int32
    let findStreamInfo: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let seekFrame: @convention(c) (UnsafeMutablePointer<AVFormatContext>?, Int32, Int64, Int32) -> Int32
    let closeInput: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?) -> Void
    let indexEntryCount: @convention(c) (UnsafePointer<AVStream>?) -> Int32
    let indexEntry: @convention(c) (UnsafeMutablePointer<AVStream>?, Int32) -> UnsafePointer<AVIndexEntry>?
    let codecName: @convention(c) (AVCodecID) -> UnsafePointer<CChar>?

    /// nil when the libraries cannot be opened; `failure` says why.
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
            let strerror = symbol("av_strerror", as: (@convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32).self),
            let malloc = symbol("av_malloc", as: (@convention(c) (Int) -> UnsafeMutableRawPointer?).self),
            let free = symbol("av_free", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self),
            let freep = symbol("av_freep", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self),
            let ioAllocContext = symbol("avio_alloc_context", as: Self.ioAllocContextType),
            let ioContextFree = symbol("avio_context_free", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?) -> Void).self),
            let allocContext = symbol("avformat_alloc_context", as: (@convention(c) () -> UnsafeMutablePointer<AVFormatContext>?).self),
            let openInput = symbol("avformat_open_input", as: Self.openInputType),
            let findStreamInfo = symbol("avformat_find_stream_info", as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32).self),
            let seekFrame = symbol("av_seek_frame", as: (@convention(c) (UnsafeMutablePointer<AVFormatContext>?, Int32, Int64, Int32) -> Int32).self),
            let closeInput = symbol("avformat_close_input", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFormatContext>?>?) -> Void).self),
            let indexEntryCount = symbol("avformat_index_get_entries_count", as: (@convention(c) (UnsafePointer<AVStream>?) -> Int32).self),
            let indexEntry = symbol("avformat_index_get_entry", as: (@convention(c) (UnsafeMutablePointer<AVStream>?, Int32) -> UnsafePointer<AVIndexEntry>?).self),
            let codecName = symbol("avcodec_get_name", as: (@convention(c) (AVCodecID) -> UnsafePointer<CChar>?).self)
        else { return nil }
        (self.logSetLevel, self.strerror, self.malloc, self.free, self.freep) = (logSetLevel, strerror, malloc, free, freep)
        (self.ioAllocContext, self.ioContextFree, self.allocContext) = (ioAllocContext, ioContextFree, allocContext)
        (self.openInput, self.findStreamInfo, self.seekFrame, self.closeInput) = (openInput, findStreamInfo, seekFrame, closeInput)
        (self.indexEntryCount, self.indexEntry, self.codecName) = (indexEntryCount, indexEntry, codecName)
        logSetLevel(AV_LOG_QUIET)  // libavformat logs to stderr by default, over vfetch's progress display
    }

    static let ioAllocContextType = (@convention(c) (
        UnsafeMutablePointer<UInt8>?, Int32, Int32, UnsafeMutableRawPointer?, ReadPacket?, ReadPacket?, Seek?
    ) -> UnsafeMutablePointer<AVIOContext>?).self
    static let openInputType = (@convention(c) (
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
        default: "AVERROR \(code)"
        }
    }

    // MARK: Memory

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
}
