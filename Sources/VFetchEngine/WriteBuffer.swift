/// Gathers one transfer's contiguous bytes so the file gets a few large writes instead of libcurl's
/// 16 KiB pieces (`CURL_MAX_WRITE_SIZE`): far fewer system calls and whole pages per write.
final class WriteBuffer: ByteSink {
    typealias Destination = (UnsafeRawBufferPointer, Int64) throws(DownloadError) -> Void
    private let destination: Destination
    private let storage: UnsafeMutableRawBufferPointer
    private var start: Int64 = 0
    private var count = 0

    /// Gathers for `destination`, which writes bytes at an offset.
    init(capacity: Int, into destination: @escaping Destination) {
        self.destination = destination
        storage = .allocate(byteCount: capacity, alignment: 4096)
    }

    convenience init(capacity: Int, file: OutputFile) {
        self.init(capacity: capacity) { (bytes, offset) throws(DownloadError) in try file.write(bytes, at: offset) }
    }

    deinit { storage.deallocate() }

    /// Adds `bytes` that belong at `offset`; writes out first whatever they do not continue.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(DownloadError) {
        if count > 0, offset != start + Int64(count) || count + bytes.count > storage.count {
            try flush()
        }
        if bytes.count >= storage.count {
            try destination(bytes, offset)
            return
        }
        if count == 0 { start = offset }
        UnsafeMutableRawBufferPointer(rebasing: storage[count..<(count + bytes.count)]).copyMemory(from: bytes)
        count += bytes.count
    }

    func flush() throws(DownloadError) {
        guard count > 0 else { return }
        defer { count = 0 }
        try destination(UnsafeRawBufferPointer(rebasing: storage[0..<count]), start)
    }

    /// Forgets what it holds, unwritten.
    func discard() {
        count = 0
    }
}

@available(*, unavailable)
extension WriteBuffer: Sendable {}
