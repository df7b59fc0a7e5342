#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A C `errno` value, with names for those vfetch's callers tell apart.
package struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// `ENOSPC`: the disk is full.
    package static let noSpace = Errno(rawValue: ENOSPC)
    /// `EDQUOT`: the user's quota is full.
    package static let quotaExceeded = Errno(rawValue: EDQUOT)
    /// `ENOENT`.
    package static let notFound = Errno(rawValue: ENOENT)
    /// `EEXIST`.
    package static let exists = Errno(rawValue: EEXIST)
    /// `EWOULDBLOCK`: a lock another descriptor holds.
    package static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    /// `EBADF`.
    package static let badDescriptor = Errno(rawValue: EBADF)
    /// `EIO`.
    package static let ioError = Errno(rawValue: EIO)

    /// Whether there is no room left to write: the disk or the quota is full.
    package var isNoSpace: Bool { self == .noSpace || self == .quotaExceeded }

    /// The system's message for it. The corresponding call is `strerror`.
    package var description: String { String(cString: strerror(rawValue)) }
}

/// What a path holds, as `stat` tells it.
package enum FileKind: Sendable, Equatable, CustomStringConvertible {
    case regular, directory, symlink, fifo, characterDevice, blockDevice, socket, unknown

    /// "a FIFO", as messages name it.
    package var description: String {
        switch self {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .symlink: "a symbolic link"
        case .fifo: "a FIFO"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .socket: "a socket"
        case .unknown: "an unknown kind of file"
        }
    }
}

/// Why a file was not opened, written or replaced: something other than a regular file is where
/// vfetch wants one, or the system said no. Callers that download map it to ``DownloadError``.
package enum FileSystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A symbolic link is where only a regular file may be; vfetch never writes through one.
    case symlink(path: String)
    /// Something else that is not a regular file is there (a FIFO, a device, a directory).
    case notRegular(path: String, kind: FileKind)
    /// The disk or the user's quota is full (`ENOSPC`, `EDQUOT`).
    case noSpace(path: String, Errno)
    /// Any other failed call.
    case system(path: String, Errno)

    /// A failed call on `path`.
    package init(_ errno: Errno, path: String) {
        self = errno.isNoSpace ? .noSpace(path: path, errno) : .system(path: path, errno)
    }

    /// A refusal of what is at `path`.
    package init(refusing kind: FileKind, at path: String) {
        self = kind == .symlink ? .symlink(path: path) : .notRegular(path: path, kind: kind)
    }

    /// The failed call's `errno`; nil when what is at the path was refused.
    package var errno: Errno? {
        switch self {
        case .symlink, .notRegular: nil
        case .noSpace(_, let errno), .system(_, let errno): errno
        }
    }

    /// The same failed call said of `path`; a refusal keeps the path of what was refused.
    package func at(_ path: String) -> FileSystemError {
        switch self {
        case .symlink, .notRegular: self
        case .noSpace(_, let errno): .noSpace(path: path, errno)
        case .system(_, let errno): .system(path: path, errno)
        }
    }

    package var description: String {
        switch self {
        case .symlink(let path): "\(path) is \(FileKind.symlink), not a regular file"
        case .notRegular(let path, let kind): "\(path) is \(kind), not a regular file"
        case .noSpace(let path, let errno), .system(let path, let errno): "\(path): \(errno)"
        }
    }
}
