#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import Foundation
import VFetchCore

/// The side file (`NAME.part`) a download writes into at random offsets, renamed to its final name when complete.
///
/// It holds an exclusive lock for as long as it is open, so two downloads never share a file.
final class OutputFile {
    let path: String
    private let descriptor: Int32
    /// The bytes that reached the file: only these may ever be claimed by a manifest.
    private(set) var written = ByteRangeSet()
    /// Bytes written by this process, for checkpoint pacing.
    private(set) var bytesWritten: Int64 = 0
    /// Holds one block while `tag(of:)` reads it, kept for the next.
    private var tagBuffer: [UInt8] = []

    /// Opens (creating if needed, never truncating) the file and locks it. It is the user's file, so
    /// it is made as the umask says; a symbolic link, FIFO or device in its place is refused.
    init(path: String) throws(DownloadError) {
        self.path = path
        let fd: Int32
        do { fd = try RegularFile.open(path, O_RDWR | O_CREAT, mode: 0o644) } catch { throw .forOutput(error) }
        guard Self.lock(fd) else {
            close(fd)
            throw .busy(path)
        }
        descriptor = fd
    }

    /// Creates a private file (mode 0600) in `directory` that has no name: it is removed as soon as
    /// it is open, so no exit, not even `kill -9`, can leave it behind.
    init(unnamedIn directory: String, prefix: String) throws(DownloadError) {
        let name = (directory.hasSuffix("/") ? directory : directory + "/") + prefix + UUID().uuidString
        path = name
        do { descriptor = try RegularFile.open(name, O_RDWR | O_CREAT | O_EXCL) } catch { throw .forOutput(error) }
        unlink(name)
    }

    /// Takes the exclusive lock on `fd`, waiting up to half a second for a holder that is only passing:
    /// a child this process forks (a player, ffmpeg) keeps a copy of every descriptor, and so of a lock
    /// just released with it, until it execs.
    private static func lock(_ fd: Int32) -> Bool {
        for attempt in 0..<25 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK, attempt < 24 else { return false }
            usleep(20_000)
        }
        return false
    }

    /// The file's current size.
    var size: Int64 {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : -1
    }

    /// Which file this is (device and inode), for the manifest to name: the descriptor's, so a
    /// file put in place of the name since it was opened is not mistaken for this one.
    func identity() throws(DownloadError) -> PartIdentity {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw DownloadError.forOutput(errno: errno, path: path) }
        return PartIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Records which remote file this is, so that a later `get` to the same path sees it is current:
    /// its Last-Modified as the modification time, as `curl -R` and `wget` do.
    func stamp(lastModified: String?) {
        guard let modified = lastModified.flatMap(HTTPDate.parse) else { return }
        _ = futimens(descriptor, [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: modified, tv_nsec: 0)])
    }

    /// Whether the finished file at `path` is `remote`, as `stamp` recorded it: the same length and
    /// Last-Modified (as `wget -N` judges). Never true when the remote file gives no Last-Modified.
    static func isFinishedCopy(at path: String, of remote: RemoteFile) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, let length = remote.length,
            Int64(info.st_size) == length, let modified = remote.lastModified.flatMap(HTTPDate.parse)
        else { return false }
        return info.st_mtim.tv_sec == modified
    }

    /// The `BlockTag` of the bytes in `range` as the file holds them now (fewer past its end).
    func tag(of range: Range<Int64>) throws(DownloadError) -> UInt32 {
        let parts = BlockTag.sampled(range)
        let count = Int(parts.reduce(0) { $0 + $1.count })
        if tagBuffer.count < count { tagBuffer = [UInt8](repeating: 0, count: count) }
        let result = tagBuffer.withUnsafeMutableBytes { buffer -> Result<UInt32, DownloadError> in
            var done = 0
            for part in parts {
                var offset = part.lowerBound
                while offset < part.upperBound {
                    let read: Int
                    do throws(DownloadError) {
                        read = try self.read(
                            into: UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + Int(part.upperBound - offset)]),
                            at: offset)
                    } catch { return .failure(error) }
                    if read == 0 { break }
                    done += read
                    offset += Int64(read)
                }
            }
            return .success(BlockTag.of(UnsafeRawBufferPointer(rebasing: buffer[0..<done])))
        }
        return try result.get()
    }

    /// Takes over what an earlier run left durable (from its manifest).
    func assumeWritten(_ ranges: ByteRangeSet) { written = ranges }

    deinit { close(descriptor) }

    /// Sets the final length, sparse (holes cost no disk), or allocated up front when `preallocate`.
    func setLength(_ length: Int64, preallocate: Bool) throws(DownloadError) {
        if length < size { written = ByteRangeSet(written.ranges.compactMap { $0.clamped(to: 0..<length).nilIfEmpty }) }
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
        self.written.insert(offset..<(offset + Int64(bytes.count)))
        bytesWritten += Int64(bytes.count)
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

    /// `count` bytes at `offset`, if all of them reached the file.
    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard count > 0, written.gaps(in: offset..<(offset + Int64(count))).isEmpty else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { try? self.read(into: $0, at: offset) }
        return read == count ? bytes : nil
    }

    /// Renames the file over `destination` (atomic on one file system), provided its name still names
    /// this file (not a link put in its place since) and `destination` is a regular file or nothing.
    func move(to destination: String) throws(DownloadError) {
        var opened = stat()
        var named = stat()
        guard fstat(descriptor, &opened) == 0, lstat(path, &named) == 0,
            opened.st_dev == named.st_dev, opened.st_ino == named.st_ino
        else { throw .outputNotWritable("\(path) was replaced while vfetch was writing it") }
        try Self.refuseIrregular(destination)
        if rename(path, destination) != 0 { throw DownloadError.forOutput(errno: errno, path: destination) }
    }

    /// Throws unless `path` is a regular file or nothing: vfetch never replaces a device, a FIFO, a
    /// socket, a directory or a symbolic link.
    static func refuseIrregular(_ path: String) throws(DownloadError) {
        if let kind = RegularFile.kind(at: path) { throw .forOutput(RegularFile.Refusal(path: path, code: 0, kind: kind)) }
    }

    /// A second descriptor of the file, for a reader of its own (the caller closes it).
    func duplicateDescriptor() -> Int32 { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Whether another process holds the lock of an existing file at `path`.
    static func isLocked(_ path: String) -> Bool {
        guard let fd = try? RegularFile.open(path, O_RDONLY) else { return false }
        defer { close(fd) }
        return !lock(fd) && errno == EWOULDBLOCK
    }

    /// Writes `bytes` to `path` durably and atomically: a new private temporary file, fsync, rename over
    /// (which replaces a link at `path`, never what it points to), fsync of the directory.
    static func replaceDurably(_ path: String, with bytes: [UInt8]) throws(DownloadError) {
        close(try replaceDurablyKeepingOpen(path, with: bytes))
    }

    /// `replaceDurably`, returning the new file's descriptor, open for writing (the caller closes it).
    static func replaceDurablyKeepingOpen(_ path: String, with bytes: [UInt8]) throws(DownloadError) -> Int32 {
        let temporary = SideFiles.temporary(for: path)
        let fd: Int32
        do { fd = try RegularFile.create(temporary) } catch { throw .forOutput(error) }
        var failure = RegularFile.write(bytes, to: fd)
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            close(fd)
            unlink(temporary)
            throw DownloadError.forOutput(errno: failure, path: path)
        }
        RegularFile.syncDirectory(of: path)
        return fd
    }

    static func remove(_ path: String) { unlink(path) }

    /// Removes `path` and makes that durable; fails if it cannot be removed.
    static func removeDurably(_ path: String) throws(DownloadError) {
        if unlink(path) != 0, errno != ENOENT { throw DownloadError.forOutput(errno: errno, path: path) }
        RegularFile.syncDirectory(of: path)
    }
}

@available(*, unavailable)
extension OutputFile: Sendable {}

/// Replaces a small file durably and atomically, as manifests are (for the queue and the index).
package func replaceFileDurably(_ path: String, with bytes: [UInt8]) throws(DownloadError) {
    try OutputFile.replaceDurably(path, with: bytes)
}

extension Range where Bound == Int64 {
    fileprivate var nilIfEmpty: Range? { isEmpty ? nil : self }
}
