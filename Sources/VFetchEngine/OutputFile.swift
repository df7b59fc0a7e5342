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
    /// it is made as the umask says (`mode` less the umask); a symbolic link, FIFO or device in its
    /// place is refused. A failure the user fixes at the output (no such directory, no permission)
    /// names `output`, the path they gave, rather than the side file's.
    init(path: String, mode: FileSystem.Mode = 0o644, naming output: String? = nil) throws(DownloadError) {
        self.path = path
        let fd: Int32
        do { fd = try FileSystem.open(path, .readWrite, creating: mode) } catch {
            throw .forOutput(output.map { error.at($0) } ?? error)
        }
        guard Self.lock(fd) == nil else {
            FileSystem.close(fd)
            throw .busy(path)
        }
        descriptor = fd
    }

    /// Creates a private file (mode 0600) in `directory` that has no name: it is removed as soon as
    /// it is open, so no exit, not even `kill -9`, can leave it behind.
    init(unnamedIn directory: String, prefix: String) throws(DownloadError) {
        let name = (directory.hasSuffix("/") ? directory : directory + "/") + prefix + UUID().uuidString
        path = name
        do { descriptor = try FileSystem.open(name, .readWrite, creating: 0o600, exclusive: true) } catch { throw .forOutput(error) }
        try? FileSystem.remove(name)
    }

    /// Takes the exclusive lock on `fd`, waiting up to half a second for a holder that is only passing:
    /// a child this process forks (a player, ffmpeg) keeps a copy of every descriptor, and so of a lock
    /// just released with it, until it execs. Nil once taken, else why not.
    private static func lock(_ fd: Int32) -> Errno? {
        for attempt in 0..<25 {
            do { try FileSystem.lock(fd) } catch {
                guard error == .wouldBlock, attempt < 24 else { return error }
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            return nil
        }
        return .wouldBlock
    }

    /// The file's current size.
    var size: Int64 { (try? FileSystem.status(of: descriptor).size) ?? -1 }

    /// Which file this is (device and inode), for the manifest to name: the descriptor's, so a
    /// file put in place of the name since it was opened is not mistaken for this one.
    func identity() throws(DownloadError) -> PartIdentity {
        let status: FileSystem.Status
        do { status = try FileSystem.status(of: descriptor) } catch { throw .forOutput(FileSystemError(error, path: path)) }
        return PartIdentity(device: status.device, inode: status.inode)
    }

    /// Records which remote file this is, so that a later `get` to the same path sees it is current:
    /// its Last-Modified as the modification time, as `curl -R` and `wget` do.
    func stamp(lastModified: String?) {
        guard let modified = lastModified.flatMap(HTTPDate.parse) else { return }
        FileSystem.setModificationTime(descriptor, modified)
    }

    /// Whether the finished file at `path` is `remote`, as `stamp` recorded it: the same length and
    /// Last-Modified (as `wget -N` judges). Never true when the remote file gives no Last-Modified.
    static func isFinishedCopy(at path: String, of remote: RemoteFile) -> Bool {
        guard let status = try? FileSystem.status(at: path), status.kind == .regular, let length = remote.length,
            status.size == length, let modified = remote.lastModified.flatMap(HTTPDate.parse)
        else { return false }
        return status.modified == modified
    }

    /// The `BlockTag` of the bytes in `range` as the file holds them now (fewer past its end).
    func tag(of range: Range<Int64>) throws(DownloadError) -> UInt32 {
        do { return try FileSystem.sampledTag(of: range, in: descriptor, buffer: &tagBuffer) } catch {
            throw .forOutput(FileSystemError(error, path: path))
        }
    }

    /// Takes over what an earlier run left durable (from its manifest).
    func assumeWritten(_ ranges: ByteRangeSet) { written = ranges }

    deinit { FileSystem.close(descriptor) }

    /// Sets the final length, sparse (holes cost no disk), or allocated up front when `preallocate`.
    func setLength(_ length: Int64, preallocate: Bool) throws(DownloadError) {
        if length < size { written = ByteRangeSet(written.ranges.compactMap { $0.clamped(to: 0..<length).nilIfEmpty }) }
        do throws(Errno) {
            try FileSystem.setLength(descriptor, length)
            if preallocate, length > 0 { try FileSystem.allocate(descriptor, length: length) }
        } catch {
            throw .forOutput(FileSystemError(error, path: path))
        }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(DownloadError) {
        do { try FileSystem.write(bytes, to: descriptor, at: offset) } catch { throw .forOutput(FileSystemError(error, path: path)) }
        self.written.insert(offset..<(offset + Int64(bytes.count)))
        bytesWritten += Int64(bytes.count)
    }

    /// Makes written data durable (`fdatasync`).
    func sync() throws(DownloadError) {
        do { try FileSystem.syncData(descriptor) } catch { throw .forOutput(FileSystemError(error, path: path)) }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(DownloadError) -> Int {
        do { return try FileSystem.read(descriptor, into: buffer, at: offset) } catch {
            throw .forOutput(FileSystemError(error, path: path))
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
        guard let opened = try? FileSystem.status(of: descriptor), let named = try? FileSystem.status(at: path),
            opened.device == named.device, opened.inode == named.inode
        else { throw .outputNotWritable("\(path) was replaced while vfetch was writing it") }
        try Self.refuseIrregular(destination)
        do { try FileSystem.rename(path, to: destination) } catch { throw .forOutput(FileSystemError(error, path: destination)) }
    }

    /// Throws unless `path` is a regular file or nothing: vfetch never replaces a device, a FIFO, a
    /// socket, a directory or a symbolic link.
    static func refuseIrregular(_ path: String) throws(DownloadError) {
        if let kind = FileSystem.kind(at: path) { throw .forOutput(FileSystemError(refusing: kind, at: path)) }
    }

    /// A second descriptor of the file, for a reader of its own (the caller closes it).
    func duplicateDescriptor() -> Int32 { FileSystem.duplicate(descriptor) }

    /// Whether another process holds the lock of an existing file at `path`.
    static func isLocked(_ path: String) -> Bool {
        guard let fd = try? FileSystem.open(path, .read) else { return false }
        defer { FileSystem.close(fd) }
        return lock(fd) == .wouldBlock
    }
}

@available(*, unavailable)
extension OutputFile: Sendable {}

extension Range where Bound == Int64 {
    fileprivate var nilIfEmpty: Range? { isEmpty ? nil : self }
}
