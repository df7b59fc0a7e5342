import CAVFormat

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The state libavformat's read and seek callbacks work on: the byte source, the position
/// libavformat is at, and why the last read failed.
///
/// Never answers "not yet" with an error libavformat could retry (`EAGAIN`): libavformat makes a
/// read error sticky and reports end of file. A missing run is remembered here and the read
/// answers `AVERROR_EXIT`; the probe then reports the run, or abandons the context.
final class MediaIO: MediaByteSource {
    let source: any MediaByteSource
    /// The offset the next read starts at.
    private(set) var position: Int64 = 0
    /// The missing run the last failed read ran into, until `IOContext.clearError()`.
    var missing: Range<Int64>?
    /// Whether the source answered `.aborted`.
    private(set) var aborted = false
    /// Why the bytes were refused (see ``CompressedHeaders``); every read after fails.
    private(set) var refusal: String?
    private var compressedHeaders = CompressedHeaders()

    init(source: any MediaByteSource) {
        self.source = source
    }

    var length: Int64 { source.length }

    /// Reads for the probe's own parsing (box and element headers), noting an abort like the
    /// callback does.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        let answer = source.read(into: buffer, at: offset)
        if answer == .aborted { aborted = true }
        return answer
    }

    /// Answers one read callback: a byte count, `AVERROR_EOF` or `AVERROR_EXIT`.
    func readPacket(into buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        guard !buffer.isEmpty else { return 0 }
        guard refusal == nil else { return LibAV.errorInvalidData }
        switch source.read(into: buffer, at: position) {
        case .bytes(let count):
            // A source that answers no bytes, or more than asked, is broken: stop reading.
            guard count > 0, count <= buffer.count else {
                aborted = true
                return LibAV.errorExit
            }
            switch compressedHeaders.verdict(
                on: UnsafeRawBufferPointer(rebasing: buffer[..<count]), at: position, in: source)
            {
            case .refused(let reason)?:
                refusal = reason
                return LibAV.errorInvalidData
            case .missing(let run)?:
                missing = run
                return LibAV.errorExit
            case .aborted?:
                aborted = true
                return LibAV.errorExit
            case nil: break
            }
            position += Int64(count)
            return Int32(count)
        case .endOfFile:
            return LibAV.errorEndOfFile
        case .missing(let run):
            missing = run
            return LibAV.errorExit
        case .aborted:
            aborted = true
            return LibAV.errorExit
        }
    }

    /// Answers one seek callback: the new position, the length for `AVSEEK_SIZE`, or `AVERROR(EINVAL)`.
    func seek(to offset: Int64, whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return source.length }
        let base: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = position
        case SEEK_END: base = source.length
        default: return Int64(LibAV.error(EINVAL))
        }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0 else { return Int64(LibAV.error(EINVAL)) }
        position = target
        return target
    }
}

@available(*, unavailable)
extension MediaIO: Sendable {}

/// One `AVIOContext` that reads a ``MediaByteSource`` through ``MediaIO``. Confined to the
/// probing thread.
final class IOContext {
    let raw: UnsafeMutablePointer<AVIOContext>
    /// The callbacks' userdata, passed unretained: this owner keeps it alive until the context is freed.
    let io: MediaIO

    /// The corresponding call is `avio_alloc_context`, with a buffer from `av_malloc`.
    init(source: any MediaByteSource, bufferSize: Int) throws(AVFormatError) {
        let io = MediaIO(source: source)
        guard let buffer = LibAV.allocate(bufferSize) else {
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "av_malloc")
        }
        let context = LibAV.allocateIOContext(
            buffer: buffer, size: Int32(bufferSize), opaque: Unmanaged.passUnretained(io).toOpaque(),
            read: { opaque, buffer, size in
                guard let opaque, let buffer, size > 0 else { return LibAV.error(EINVAL) }
                let io = Unmanaged<MediaIO>.fromOpaque(opaque).takeUnretainedValue()
                return io.readPacket(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)))
            },
            seek: { opaque, offset, whence in
                guard let opaque else { return Int64(LibAV.error(EINVAL)) }
                return Unmanaged<MediaIO>.fromOpaque(opaque).takeUnretainedValue().seek(to: offset, whence: whence)
            })
        guard let context else {
            LibAV.free(buffer)
            throw AVFormatError(code: LibAV.error(ENOMEM), call: "avio_alloc_context")
        }
        self.raw = context
        self.io = io
    }

    deinit {
        LibAV.freeIOContext(raw)
    }

    /// Forgets a failed read so the context can be used again: libavformat keeps `eof_reached`
    /// and `error` set after a failed read until someone clears them.
    func clearError() {
        raw.pointee.eof_reached = 0
        raw.pointee.error = 0
        io.missing = nil
    }
}

@available(*, unavailable)
extension IOContext: Sendable {}
