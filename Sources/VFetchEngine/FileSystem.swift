import VFetchCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every system call vfetch makes on files, as thin wrappers in one place, so they can be read
/// together. A single call's failure is its ``Errno``; what opens, reads or removes a file by its
/// path answers a ``FileSystemError``, which names the path (and may refuse what is there).
///
/// vfetch's side files (see `SideFiles`) sit beside the user's output, where someone may have put a
/// symbolic link to a file of theirs, a FIFO or a device. So `open` never follows a link there
/// unless asked, never blocks on a FIFO, and refuses anything but a regular file.
package enum FileSystem {
    /// Permission bits, as `0o600`.
    package typealias Mode = mode_t

    /// How a file is opened.
    package enum Access: Sendable {
        case read, write, readWrite
        /// Writes go to the end, wherever it is then.
        case append

        fileprivate var flags: Int32 {
            switch self {
            case .read: O_RDONLY
            case .write: O_WRONLY
            case .readWrite: O_RDWR
            case .append: O_WRONLY | O_APPEND
            }
        }
    }

    // MARK: - Opening and closing

    /// Opens the regular file at `path` and returns its descriptor; `creating` makes it if it is
    /// missing, with that mode less the umask (`exclusive`: fails if it is there). A symbolic link is
    /// not followed unless `followingLinks` (for files the user names, such as `vfetch info FILE`).
    ///
    /// The descriptor is close-on-exec and non-blocking, which changes nothing for a regular file.
    /// The corresponding calls are `open` with `O_NOFOLLOW | O_NONBLOCK`, then `fstat`.
    package static func open(
        _ path: String, _ access: Access, creating mode: Mode? = nil, exclusive: Bool = false,
        followingLinks: Bool = false
    ) throws(FileSystemError) -> Int32 {
        var flags = access.flags | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW)
        if mode != nil { flags |= O_CREAT | (exclusive ? O_EXCL : 0) }
        let fd = Glibc.open(path, flags, mode ?? 0)
        guard fd >= 0 else {
            let code = Errno.current
            // O_NOFOLLOW answers ELOOP for a link; O_NONBLOCK answers ENXIO for a FIFO opened to write.
            if code.rawValue == ELOOP || code.rawValue == ENXIO, let kind = kind(at: path, followingLinks: followingLinks) {
                throw FileSystemError(refusing: kind, at: path)
            }
            throw FileSystemError(code, path: path)
        }
        let found: FileKind
        do { found = try status(of: fd).kind } catch {
            Glibc.close(fd)
            throw FileSystemError(error, path: path)
        }
        guard found == .regular else {
            Glibc.close(fd)
            throw FileSystemError(refusing: found, at: path)
        }
        return fd
    }

    /// Creates a new file at `path` (mode 0600 unless told), removing whatever stale entry had that
    /// name first: `unlink` removes a symbolic link itself, and `O_EXCL` fails rather than follow one
    /// that appears in between.
    /// Returns its descriptor, open for writing.
    package static func create(_ path: String, mode: Mode = 0o600) throws(FileSystemError) -> Int32 {
        Glibc.unlink(path)
        return try open(path, .write, creating: mode, exclusive: true)
    }

    /// Opens the directory at `path` (following links), for `fstat`, `fchmod` or `fsync`.
    package static func openDirectory(_ path: String) throws(Errno) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .current }
        return fd
    }

    package static func close(_ fd: Int32) {
        Glibc.close(fd)
    }

    /// A second descriptor of the same open file, close-on-exec (the caller closes it); -1 on failure.
    /// The corresponding call is `fcntl` with `F_DUPFD_CLOEXEC`.
    package static func duplicate(_ fd: Int32) -> Int32 {
        fcntl(fd, F_DUPFD_CLOEXEC, 0)
    }

    // MARK: - Reading and writing

    /// The `BlockTag` of the sampled bytes of `range` (`BlockTag.sampled`) as the file holds them now (fewer past
    /// its end), read into `buffer`, which grows as needed and may be kept for the next call.
    package static func sampledTag(of range: Range<Int64>, in fd: Int32, buffer: inout [UInt8]) throws(Errno) -> UInt32 {
        let parts = BlockTag.sampled(range)
        let count = Int(parts.reduce(0) { $0 + $1.count })
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        let result = buffer.withUnsafeMutableBytes { buffer -> Result<UInt32, Errno> in
            var done = 0
            for part in parts {
                var offset = part.lowerBound
                while offset < part.upperBound {
                    let read: Int
                    do throws(Errno) {
                        read = try Self.read(
                            fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + Int(part.upperBound - offset)]),
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

    /// Reads up to `buffer.count` bytes at `offset`; how many were read (0 at the end of the file).
    /// The corresponding call is `pread`, again when interrupted.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        while true {
            let count = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw .current }
        }
    }

    /// The bytes of `range` of the regular file at `path` (a link is not followed); fewer at its end.
    package static func contents(at path: String, range: Range<Int64>) throws(FileSystemError) -> [UInt8] {
        let fd = try open(path, .read)
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: range.count)
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in
                    try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: range.lowerBound + Int64(done))
                }
            }
            switch count {
            case .success(0): return Array(bytes[0..<done])
            case .success(let count): done += count
            case .failure(let error): throw FileSystemError(error, path: path)
            }
        }
        return Array(bytes[0..<done])
    }

    /// All the bytes of the regular file at `path` (a link is not followed).
    package static func contents(at path: String) throws(FileSystemError) -> [UInt8] {
        let fd = try open(path, .read)
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FileSystemError(.current, path: path) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }

    /// Writes all of `bytes` at `offset`, or where the file stands when `offset` is nil, through
    /// short writes and interrupts. A write that makes no progress is `EIO`.
    /// The corresponding calls are `pwrite` and `write`.
    package static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64? = nil) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let count =
                if let offset {
                    pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
                } else {
                    Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                }
            if count < 0 {
                if errno == EINTR { continue }
                throw .current
            }
            if count == 0 { throw .ioError }
            done += count
        }
    }

    /// `write(_:to:at:)` of an array.
    package static func write(_ bytes: [UInt8], to fd: Int32, at offset: Int64? = nil) throws(Errno) {
        let failure: Errno? = bytes.withUnsafeBytes { buffer in
            do throws(Errno) { try write(buffer, to: fd, at: offset) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Makes the file's data and metadata durable. The corresponding call is `fsync`.
    package static func sync(_ fd: Int32) throws(Errno) {
        if fsync(fd) != 0 { throw .current }
    }

    /// Makes the file's data durable, and its size. The corresponding call is `fdatasync`.
    package static func syncData(_ fd: Int32) throws(Errno) {
        if fdatasync(fd) != 0 { throw .current }
    }

    /// Makes renames and removals in `path`'s directory durable (failures are ignored: the
    /// directory may not be open to this user for reading).
    package static func syncDirectory(of path: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }

    // MARK: - Size, times, locks

    /// Sets the file's length; growing it leaves a hole. The corresponding call is `ftruncate`.
    package static func setLength(_ fd: Int32, _ length: Int64) throws(Errno) {
        if ftruncate(fd, off_t(length)) != 0 { throw .current }
    }

    /// Allocates the disk space of the file's first `length` bytes. The corresponding call is
    /// `posix_fallocate`.
    package static func allocate(_ fd: Int32, length: Int64) throws(Errno) {
        let result = posix_fallocate(fd, 0, off_t(length))
        if result != 0 { throw Errno(rawValue: result) }
    }

    /// Sets the modification time (whole seconds since 1970), and the access time to now.
    /// The corresponding call is `futimens`.
    package static func setModificationTime(_ fd: Int32, _ seconds: Int) {
        _ = futimens(fd, [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)])
    }

    /// Takes the exclusive lock of the open file, without waiting: `.wouldBlock` when another open
    /// file description holds it. The corresponding call is `flock` with `LOCK_EX | LOCK_NB`.
    package static func lock(_ fd: Int32) throws(Errno) {
        if flock(fd, LOCK_EX | LOCK_NB) != 0 { throw .current }
    }

    /// Lets go of the lock for every descriptor of the open file description: a child just spawned
    /// holds a copy until its exec closes it, and a close alone would leave the lock with that copy.
    /// The corresponding call is `flock` with `LOCK_UN`.
    package static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
    }

    // MARK: - Status

    /// What `stat` says of a file, in the units vfetch uses.
    package struct Status: Sendable {
        package var kind: FileKind
        package var size: Int64
        package var device: UInt64
        package var inode: UInt64
        /// The owner's user ID.
        package var owner: UInt32
        /// The permission bits (`0o755`).
        package var permissions: UInt32
        /// The modification time, in whole seconds since 1970.
        package var modified: Int
        /// The disk space it takes (less than `size` for a sparse file).
        package var allocatedBytes: Int64

        fileprivate init(_ info: stat) {
            kind =
                switch info.st_mode & S_IFMT {
                case S_IFREG: .regular
                case S_IFLNK: .symlink
                case S_IFDIR: .directory
                case S_IFIFO: .fifo
                case S_IFCHR: .characterDevice
                case S_IFBLK: .blockDevice
                case S_IFSOCK: .socket
                default: .unknown
                }
            size = Int64(info.st_size)
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            owner = UInt32(info.st_uid)
            permissions = UInt32(info.st_mode & 0o7777)
            modified = Int(info.st_mtim.tv_sec)
            allocatedBytes = Int64(info.st_blocks) * 512
        }

        /// Whether this process's user owns it.
        package var isOwnedByThisUser: Bool { owner == UInt32(geteuid()) }
    }

    /// The open file's status. The corresponding call is `fstat`.
    package static func status(of fd: Int32) throws(Errno) -> Status {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .current }
        return Status(info)
    }

    /// The status of what is at `path`: of a link itself unless `followingLinks`.
    /// The corresponding calls are `lstat` and `stat`.
    package static func status(at path: String, followingLinks: Bool = false) throws(Errno) -> Status {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { throw .current }
        return Status(info)
    }

    /// What is at `path` when it is not a regular file (a directory, a symbolic link); nil when it
    /// is one or nothing is there. A link is described as such unless `followingLinks`.
    package static func kind(at path: String, followingLinks: Bool = false) -> FileKind? {
        guard let kind = try? status(at: path, followingLinks: followingLinks).kind, kind != .regular else { return nil }
        return kind
    }

    /// Whether anything is at `path` (a link counts when what it names exists). The corresponding
    /// call is `access` with `F_OK`.
    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The first `NAME.N.EXT` (`FileName.numbered`) with no file: an unfinished download under that name
    /// is resumed there, not left for the next number.
    package static func freeName(for path: String) -> String {
        var number = 1
        while exists(FileName.numbered(path, number)) { number += 1 }
        return FileName.numbered(path, number)
    }

    // MARK: - Names

    /// Renames `source` over `destination` (atomic on one file system; a link at `destination` is
    /// replaced, never what it points to). The corresponding call is `rename`.
    package static func rename(_ source: String, to destination: String) throws(Errno) {
        if Glibc.rename(source, destination) != 0 { throw .current }
    }

    /// Removes the name `path` (a link itself, never what it points to). The corresponding call is `unlink`.
    package static func remove(_ path: String) throws(Errno) {
        if unlink(path) != 0 { throw .current }
    }

    /// Removes `path` and makes that durable; nothing there is no failure.
    package static func removeDurably(_ path: String) throws(FileSystemError) {
        if unlink(path) != 0, Errno.current != .notFound { throw FileSystemError(.current, path: path) }
        syncDirectory(of: path)
    }

    /// Makes a directory with `mode` (less the umask). The corresponding call is `mkdir`.
    package static func makeDirectory(_ path: String, mode: Mode) throws(Errno) {
        if mkdir(path, mode) != 0 { throw .current }
    }

    /// Makes `path` and the directories above it that are missing, as the umask says (`mkdir -p`).
    package static func makeDirectories(_ path: String) throws(Errno) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            do { try makeDirectory(prefix, mode: 0o777) } catch { if error != .exists { throw error } }
            prefix += "/"
        }
    }

    /// Removes an empty directory. The corresponding call is `rmdir`.
    package static func removeDirectory(_ path: String) throws(Errno) {
        if rmdir(path) != 0 { throw .current }
    }

    /// Sets the permission bits of what is at `path`. The corresponding call is `chmod`.
    package static func setPermissions(_ path: String, _ mode: Mode) throws(Errno) {
        if chmod(path, mode) != 0 { throw .current }
    }

    /// Sets the permission bits of an open file or directory. The corresponding call is `fchmod`.
    package static func setPermissions(_ fd: Int32, _ mode: Mode) throws(Errno) {
        if fchmod(fd, mode) != 0 { throw .current }
    }
}

extension Errno {
    /// The `errno` of the call that just failed on this thread.
    fileprivate static var current: Errno { Errno(rawValue: errno) }
}
