#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening files by name so that only a regular file is ever read or written.
///
/// vfetch's side files (`NAME.part`, `NAME.vfetch`, temporary files, locks) sit beside the user's
/// output, where someone may have put a symbolic link to a file of theirs, a FIFO or a device. A
/// symbolic link is never followed there, a FIFO never blocks an open, and anything but a regular
/// file is refused. Every open of such a file goes through here.
package enum RegularFile {
    /// Why a path was not opened: something other than a regular file is there, or the system said no.
    package struct Refusal: Error, CustomStringConvertible {
        package let path: String
        /// The `errno` of a failed call; 0 when the path is something other than a regular file.
        package let code: Int32
        /// What is there instead ("a symbolic link", "a FIFO"), when that is the reason.
        package let kind: String?

        package var description: String {
            if let kind { return "\(path) is \(kind), not a regular file" }
            return "\(path): \(String(cString: strerror(code)))"
        }
    }

    /// Opens `path` with `flags` (`O_CREAT` creates it with `mode`, less the umask) and returns the
    /// descriptor, unless something other than a regular file is there. A symbolic link is not
    /// followed unless `followingLinks` (for files the user names, such as `vfetch info FILE`).
    ///
    /// The descriptor is close-on-exec and non-blocking, which changes nothing for a regular file.
    /// The corresponding calls are `open` with `O_NOFOLLOW | O_NONBLOCK`, then `fstat`.
    package static func open(
        _ path: String, _ flags: Int32, mode: mode_t = 0o600, followingLinks: Bool = false
    ) throws(Refusal) -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW), mode)
        guard fd >= 0 else {
            let code = errno
            // O_NOFOLLOW answers ELOOP for a link; O_NONBLOCK answers ENXIO for a FIFO opened to write.
            if code == ELOOP || code == ENXIO, let kind = kind(at: path, followingLinks: followingLinks) {
                throw Refusal(path: path, code: 0, kind: kind)
            }
            throw Refusal(path: path, code: code, kind: nil)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw Refusal(path: path, code: code, kind: nil)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw Refusal(path: path, code: 0, kind: describe(info.st_mode))
        }
        return fd
    }

    /// Creates a new file at `path` (mode 0600) for writing, removing whatever stale entry had that
    /// name first: `unlink` removes a symbolic link itself, and `O_EXCL` fails rather than follow one
    /// that appears in between.
    package static func create(_ path: String) throws(Refusal) -> Int32 {
        unlink(path)
        return try open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
    }

    /// All the bytes of the regular file at `path` (a link is not followed).
    package static func contents(at path: String) throws(Refusal) -> [UInt8] {
        let fd = try open(path, O_RDONLY)
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Refusal(path: path, code: errno, kind: nil) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }

    /// Writes all of `bytes` to `fd` (at `offset`, or where it stands), through short writes and
    /// interrupts; the `errno` of a failure, or 0.
    package static func write(_ bytes: [UInt8], to fd: Int32, at offset: Int64? = nil) -> Int32 {
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count =
                    if let offset {
                        pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                    } else {
                        Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done)
                    }
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += count
            }
            return 0
        }
    }

    /// Makes renames and removals in `path`'s directory durable.
    package static func syncDirectory(of path: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// What is at `path` when it is not a regular file ("a directory", "a symbolic link"); nil when
    /// it is one or nothing is there. A link is described as such unless `followingLinks`.
    package static func kind(at path: String, followingLinks: Bool = false) -> String? {
        var info = stat()
        let found = followingLinks ? stat(path, &info) : lstat(path, &info)
        guard found == 0, info.st_mode & S_IFMT != S_IFREG else { return nil }
        return describe(info.st_mode)
    }

    private static func describe(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFLNK: "a symbolic link"
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "an unknown kind of file"
        }
    }
}
