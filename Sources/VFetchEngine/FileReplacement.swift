import VFetchCore

/// The one way vfetch replaces a file whole (a manifest snapshot, the cache index, the queue, a
/// remux's output): the new bytes go to a new file beside it (`SideFiles.temporary(for:)`), which is
/// synced, renamed over the old one and its directory synced.
///
/// The rename is atomic, so a reader sees the old file or the new one, never a mix; the syncs make
/// a crash leave one of them whole: before the rename the old file is still there (a torn
/// temporary is never renamed, and the next writer overwrites it), after it the new one is durable.
/// A replacement dropped without ``commit()`` removes its temporary file. Confined to one thread.
package final class FileReplacement {
    /// The file being replaced.
    package let path: String
    /// Where the new bytes are written until the rename.
    package let temporaryPath: String
    /// The temporary file, open for writing; -1 once committed or abandoned.
    package private(set) var descriptor: Int32

    /// Creates the temporary file, removing a stale one (a link there is replaced, never followed):
    /// private (0600) unless `mode` says otherwise, as for the user's own output.
    package init(replacing path: String, mode: FileSystem.Mode = 0o600) throws(FileSystemError) {
        self.path = path
        temporaryPath = SideFiles.temporary(for: path)
        descriptor = try FileSystem.create(temporaryPath, mode: mode)
    }

    deinit { abandon() }

    /// Writes `bytes` to `path` durably and atomically.
    package static func write(_ bytes: [UInt8], to path: String) throws(FileSystemError) {
        let replacement = try FileReplacement(replacing: path)
        try replacement.write(bytes)
        try replacement.commit()
    }

    /// Appends `bytes` to the new file.
    package func write(_ bytes: [UInt8]) throws(FileSystemError) {
        do { try FileSystem.write(bytes, to: descriptor) } catch {
            abandon()
            throw FileSystemError(error, path: path)
        }
    }

    /// Puts the new file in place: `fsync`, `rename` over `path`, `fsync` of the directory.
    package func commit() throws(FileSystemError) {
        FileSystem.close(try commitKeepingOpen())
    }

    /// ``commit()``, then hands over the new file's descriptor, still open for writing (the caller
    /// closes it): appends through it reach the file put in place, never whatever the name holds later.
    package func commitKeepingOpen() throws(FileSystemError) -> Int32 {
        do throws(Errno) {
            try FileSystem.sync(descriptor)
            try FileSystem.rename(temporaryPath, to: path)
        } catch {
            abandon()
            throw FileSystemError(error, path: path)
        }
        FileSystem.syncDirectory(of: path)
        defer { descriptor = -1 }
        return descriptor
    }

    /// Closes and removes the temporary file; the old file stays.
    package func abandon() {
        guard descriptor >= 0 else { return }
        FileSystem.close(descriptor)
        descriptor = -1
        try? FileSystem.remove(temporaryPath)
    }
}

@available(*, unavailable)
extension FileReplacement: Sendable {}
