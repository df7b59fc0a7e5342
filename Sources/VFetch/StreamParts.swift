import Foundation
import VFetchCore
import VFetchStreams

/// The folder beside a stream's output where its fetched segments wait for the remux: `NAME.parts/`,
/// private (0700), one file per fetch (`000042`), the `manifest` of what is kept, and a `lock` that keeps
/// a second vfetch out. Confined to the download's thread.
final class StreamParts {
    let directory: String
    private let lock: Int32

    /// Opens (or creates) the folder for `output` and locks it; refuses a link or a file in its place.
    init(output: String) throws(DownloadError) {
        directory = SideFiles(output: output).segments
        do { try FileSystem.makeDirectory(directory, mode: 0o700) } catch {
            if error != .exists { throw .forOutput(FileSystemError(error, path: directory)) }
        }
        guard let status = try? FileSystem.status(at: directory), status.kind == .directory, status.isOwnedByThisUser else {
            throw .outputNotWritable("\(directory) is not a folder of this user's (a link or a file is in its place)")
        }
        try? FileSystem.setPermissions(directory, 0o700)
        do {
            lock = try FileSystem.open(SideFiles.lock(in: directory), .readWrite, creating: 0o600)
        } catch {
            throw .forOutput(error)
        }
        do { try FileSystem.lock(lock) } catch {
            FileSystem.close(lock)
            throw .busy(directory)
        }
    }

    deinit { FileSystem.close(lock) }

    func path(of fetch: Int) -> String { SideFiles.segment(fetch, in: directory) }

    /// Removes a parts folder and everything in it (only vfetch's own files are ever there).
    static func remove(_ directory: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            try? FileSystem.remove(directory + "/" + name)
        }
        try? FileSystem.removeDirectory(directory)
    }

    /// Writes one fetch's bytes durably (fsync before the manifest may name them).
    func write(_ bytes: [UInt8], fetch: Int) throws(DownloadError) {
        let path = path(of: fetch)
        let fd: Int32
        do { fd = try FileSystem.create(path) } catch { throw .forOutput(error) }
        defer { FileSystem.close(fd) }
        do throws(Errno) {
            try FileSystem.write(bytes, to: fd)
            try FileSystem.syncData(fd)
        } catch {
            throw .forOutput(FileSystemError(error, path: path))
        }
    }

    /// The fetches an earlier run kept for this exact list (its fingerprint), each checked against its file.
    func kept(fingerprint: String, fetches: Int) -> [StreamManifest.Kept] {
        guard let bytes = try? FileSystem.contents(at: SideFiles.segmentsManifest(in: directory)),
            let manifest = StreamManifest.decode(bytes), manifest.fingerprint == fingerprint, manifest.fetches == fetches
        else { return [] }
        return manifest.kept.filter { kept in
            guard let bytes = try? FileSystem.contents(at: path(of: kept.fetch)) else { return false }
            return Int64(bytes.count) == kept.size && BlockTag.of(bytes) == kept.tag
        }
    }

    /// Writes the whole manifest (atomically), as a run starts.
    func save(_ manifest: StreamManifest) throws(DownloadError) {
        do { try FileReplacement.write(manifest.encoded(), to: SideFiles.segmentsManifest(in: directory)) } catch {
            throw .forOutput(error)
        }
    }

    /// Records one more kept fetch: an append, synced (its bytes were synced before).
    func append(_ entry: StreamManifest.Kept) throws(DownloadError) {
        let path = SideFiles.segmentsManifest(in: directory)
        let fd: Int32
        do { fd = try FileSystem.open(path, .append) } catch { throw .forOutput(error) }
        defer { FileSystem.close(fd) }
        do throws(Errno) {
            try FileSystem.write(StreamManifest.line(entry), to: fd)
            try FileSystem.syncData(fd)
        } catch {
            throw .forOutput(FileSystemError(error, path: path))
        }
    }

}
