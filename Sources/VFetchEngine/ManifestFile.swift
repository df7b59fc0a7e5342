import VFetchCore

/// The manifest beside the side file (`NAME.vfetch`), written as its `ManifestJournal` says:
/// replaced whole (a `FileReplacement`) or appended to. Each write is durable when
/// it returns.
///
/// Appends go to the descriptor of the file this process put in place, never to whatever the name
/// holds now, so a link someone puts there is never written through.
final class ManifestFile {
    let path: String
    /// The file last put in place, open for writing; -1 before the first replace.
    private var descriptor: Int32 = -1
    /// Its size: where the next update goes, and what a failed append is cut back to.
    private var size: Int64 = 0

    init(path: String) {
        self.path = path
    }

    deinit { if descriptor >= 0 { FileSystem.close(descriptor) } }

    func write(_ write: ManifestJournal.Write) throws(DownloadError) {
        switch write {
        case .replace(let bytes):
            let fd: Int32
            do {
                let replacement = try FileReplacement(replacing: path)
                try replacement.write(bytes)
                fd = try replacement.commitKeepingOpen()
            } catch {
                throw .forOutput(error)
            }
            if descriptor >= 0 { FileSystem.close(descriptor) }
            descriptor = fd
            size = Int64(bytes.count)
        case .append(let bytes):
            guard descriptor >= 0 else { throw .forOutput(FileSystemError(.badDescriptor, path: path)) }
            // fdatasync covers the new size: an append is durable without the directory's sync.
            do throws(Errno) {
                try FileSystem.write(bytes, to: descriptor, at: size)
                try FileSystem.syncData(descriptor)
            } catch {
                // What a reader would take for a damaged update becomes a cut-short one, which it ignores.
                try? FileSystem.setLength(descriptor, size)
                throw .forOutput(FileSystemError(error, path: path))
            }
            size += Int64(bytes.count)
        }
    }

    /// Removes the manifest: the download is complete, or its bytes are being written anew.
    func remove() {
        if descriptor >= 0 { FileSystem.close(descriptor) }
        descriptor = -1
        try? FileSystem.remove(path)
    }
}

@available(*, unavailable)
extension ManifestFile: Sendable {}
