#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The side file (`NAME.part`) a download writes into at random offsets, renamed to its final name when complete.
final class OutputFile {
    let path: String
    private let descriptor: Int32

    /// Opens (creating if needed) the file for writing at offsets.
    init(path: String) throws(DownloadError) {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw DownloadError.forOutput(errno: errno, path: path) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Sets the final length, sparse (holes cost no disk), or allocated up front when `preallocate`.
    func setLength(_ length: Int64, preallocate: Bool) throws(DownloadError) {
        if ftruncate(descriptor, off_t(length)) != 0 { throw DownloadError.forOutput(errno: errno, path: path) }
        if preallocate, length > 0 {
            let result = posix_fallocate(descriptor, 0, off_t(length))
            if result != 0 { throw DownloadError.forOutput(errno: result, path: path) }
        }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(DownloadError) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw DownloadError.forOutput(errno: errno, path: path)
            }
            done += written
        }
    }

    /// Makes written data durable (`fdatasync`).
    func sync() throws(DownloadError) {
        if fdatasync(descriptor) != 0 { throw DownloadError.forOutput(errno: errno, path: path) }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(DownloadError) -> Int {
        while true {
            let count = pread(descriptor, buffer.baseAddress!, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw DownloadError.forOutput(errno: errno, path: path) }
        }
    }

    /// Renames the file over `destination` (atomic on one file system).
    func move(to destination: String) throws(DownloadError) {
        if rename(path, destination) != 0 { throw DownloadError.forOutput(errno: errno, path: destination) }
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func remove(_ path: String) { unlink(path) }
}

@available(*, unavailable)
extension OutputFile: Sendable {}
