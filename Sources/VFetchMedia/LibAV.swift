import CAVFormat

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Every call into libavformat, libavcodec and libavutil goes through this file, so the whole C
// surface reads in one place. The owners (`IOContext`, `FormatContext`) call these.

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

enum LibAV {
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

    /// libavformat logs to stderr by default, which would scribble over vfetch's progress display.
    /// Evaluated once, before the first context is opened. The corresponding call is `av_log_set_level`.
    static let silenced: Void = av_log_set_level(AV_LOG_QUIET)

    /// libavutil's text for an error code. The corresponding call is `av_strerror`.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard av_strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
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
    static func allocate(_ size: Int) -> UnsafeMutableRawPointer? { av_malloc(size) }

    /// The corresponding call is `av_free`.
    static func free(_ pointer: UnsafeMutableRawPointer?) { av_free(pointer) }

    // MARK: AVIOContext

    /// The corresponding call is `avio_alloc_context` (read-only: no write callback).
    static func allocateIOContext(
        buffer: UnsafeMutableRawPointer, size: Int32, opaque: UnsafeMutableRawPointer,
        read: AVIOReadCallback, seek: AVIOSeekCallback
    ) -> UnsafeMutablePointer<AVIOContext>? {
        avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), size, 0, opaque, read, nil, seek)
    }

    /// Frees the buffer the context holds now, which libavformat may have reallocated, then the
    /// context. The corresponding calls are `av_freep(&ctx->buffer)` and `avio_context_free`.
    static func freeIOContext(_ context: UnsafeMutablePointer<AVIOContext>) {
        withUnsafeMutablePointer(to: &context.pointee.buffer) { av_freep($0) }
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&pointer)
    }

    // MARK: AVFormatContext

    /// The corresponding call is `avformat_alloc_context`.
    static func allocateFormatContext() -> UnsafeMutablePointer<AVFormatContext>? { avformat_alloc_context() }

    /// Probes the format and reads the header. On failure libavformat has freed the context (but
    /// not a custom `pb`). The corresponding call is `avformat_open_input`.
    static func openInput(_ context: UnsafeMutablePointer<AVFormatContext>, url: String) throws(AVFormatError)
        -> UnsafeMutablePointer<AVFormatContext>
    {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        let code = avformat_open_input(&pointer, url, nil, nil)
        guard code >= 0, let pointer else { throw AVFormatError(code: code, call: "avformat_open_input") }
        return pointer
    }

    /// The corresponding call is `avformat_find_stream_info`.
    static func findStreamInfo(_ context: UnsafeMutablePointer<AVFormatContext>) throws(AVFormatError) {
        let code = avformat_find_stream_info(context, nil)
        if code < 0 { throw AVFormatError(code: code, call: "avformat_find_stream_info") }
    }

    /// The corresponding call is `av_seek_frame`.
    static func seekFrame(
        _ context: UnsafeMutablePointer<AVFormatContext>, stream: Int32, timestamp: Int64, flags: Int32
    ) throws(AVFormatError) {
        let code = av_seek_frame(context, stream, timestamp, flags)
        if code < 0 { throw AVFormatError(code: code, call: "av_seek_frame") }
    }

    /// The corresponding call is `avformat_close_input`.
    static func closeInput(_ context: UnsafeMutablePointer<AVFormatContext>) {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&pointer)
    }

    // MARK: Streams

    /// The corresponding call is `avformat_index_get_entries_count`.
    static func indexEntryCount(_ stream: UnsafeMutablePointer<AVStream>) -> Int {
        Int(avformat_index_get_entries_count(stream))
    }

    /// The corresponding call is `avformat_index_get_entry`.
    static func indexEntry(_ stream: UnsafeMutablePointer<AVStream>, _ index: Int) -> AVIndexEntry? {
        avformat_index_get_entry(stream, Int32(index))?.pointee
    }

    /// A codec's short name, such as "h264". The corresponding call is `avcodec_get_name`.
    static func codecName(_ id: AVCodecID) -> String {
        guard let name = avcodec_get_name(id) else { return "none" }
        return String(cString: name)
    }
}
