#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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
        if mkdir(directory, 0o700) != 0, errno != EEXIST { throw .forOutput(errno: errno, path: directory) }
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
            throw .outputNotWritable("\(directory) is not a folder of this user's (a link or a file is in its place)")
        }
        chmod(directory, 0o700)
        do {
            lock = try RegularFile.open(SideFiles.lock(in: directory), O_RDWR | O_CREAT)
        } catch {
            throw .forOutput(error)
        }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            close(lock)
            throw .busy(directory)
        }
    }

    deinit { close(lock) }

    func path(of fetch: Int) -> String { SideFiles.segment(fetch, in: directory) }

    /// Removes a parts folder and everything in it (only vfetch's own files are ever there).
    static func remove(_ directory: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    /// Writes one fetch's bytes durably (fsync before the manifest may name them).
    func write(_ bytes: [UInt8], fetch: Int) throws(DownloadError) {
        let path = path(of: fetch)
        let fd: Int32
        do { fd = try RegularFile.create(path) } catch { throw .forOutput(error) }
        defer { close(fd) }
        var failure = RegularFile.write(bytes, to: fd)
        if failure == 0, fdatasync(fd) != 0 { failure = errno }
        if failure != 0 { throw .forOutput(errno: failure, path: path) }
    }

    /// The fetches an earlier run kept for this exact list (its fingerprint), each checked against its file.
    func kept(fingerprint: String, fetches: Int) -> [StreamManifest.Kept] {
        guard let bytes = try? RegularFile.contents(at: SideFiles.segmentsManifest(in: directory)),
            let manifest = StreamManifest.decode(bytes), manifest.fingerprint == fingerprint, manifest.fetches == fetches
        else { return [] }
        return manifest.kept.filter { kept in
            guard let bytes = try? RegularFile.contents(at: path(of: kept.fetch)) else { return false }
            return Int64(bytes.count) == kept.size && BlockTag.of(bytes) == kept.tag
        }
    }

    /// Writes the whole manifest (atomically), as a run starts.
    func save(_ manifest: StreamManifest) throws(DownloadError) {
        try OutputFile.replaceDurably(SideFiles.segmentsManifest(in: directory), with: manifest.encoded())
    }

    /// Records one more kept fetch: an append, synced (its bytes were synced before).
    func append(_ entry: StreamManifest.Kept) throws(DownloadError) {
        let path = SideFiles.segmentsManifest(in: directory)
        let fd: Int32
        do { fd = try RegularFile.open(path, O_WRONLY | O_APPEND) } catch { throw .forOutput(error) }
        defer { close(fd) }
        var failure = RegularFile.write(StreamManifest.line(entry), to: fd)
        if failure == 0, fdatasync(fd) != 0 { failure = errno }
        if failure != 0 { throw .forOutput(errno: failure, path: path) }
    }

}
