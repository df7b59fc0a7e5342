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

    /// Makes the file the fetcher wrote for `fetch` (`length` bytes) final: decrypted in place with `cipher`
    /// (its PKCS7 padding removed), then synced before the manifest may name it. Reads and writes in steps,
    /// so memory never holds a segment. Answers its size and tag for the manifest.
    func seal(_ fetch: Int, length: Int64, decrypting cipher: AES128CBC?) throws(SealFailure) -> (size: Int64, tag: UInt32) {
        let path = path(of: fetch)
        let fd: Int32
        do { fd = try FileSystem.open(path, .readWrite) } catch { throw .output(.forOutput(error)) }
        defer { FileSystem.close(fd) }
        do {
            var size = length
            if var cipher {
                guard length > 0, length % Int64(AES128CBC.blockSize) == 0 else {
                    throw SealFailure.decryption("\(length) bytes, not whole AES blocks")
                }
                // Page-aligned: the kernel's copies into a buffer 16 bytes past a page ran 2-3x slower.
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.step, alignment: 4096)
                defer { buffer.deallocate() }
                var offset: Int64 = 0
                while offset < length {
                    let count = Int(min(Int64(Self.step), length - offset))
                    let step = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                    try Self.fill(step, from: fd, at: offset)
                    try cipher.decryptInPlace(step)
                    var plainCount = count
                    if offset + Int64(count) == length {
                        plainCount -= try AES128CBC.paddingLength(UnsafeRawBufferPointer(step))
                        size = offset + Int64(plainCount)
                    }
                    try FileSystem.write(UnsafeRawBufferPointer(rebasing: step[0..<plainCount]), to: fd, at: offset)
                    offset += Int64(count)
                }
                try FileSystem.setLength(fd, size)
            }
            try FileSystem.syncData(fd)
            return (size, try Self.tag(of: fd, size: size))
        } catch let failure as SealFailure {
            throw failure
        } catch let failure as AES128CBC.Failure {
            throw .decryption("\(failure)")
        } catch {
            let code = (error as? Errno) ?? Errno(rawValue: EIO)
            throw .output(.forOutput(FileSystemError(code, path: path)))
        }
    }

    /// Why a fetched file cannot be kept: the output cannot be written, or the bytes are not what their key decrypts.
    enum SealFailure: Error {
        case output(DownloadError)
        case decryption(String)
    }

    /// Decryption reads and writes this much at a time.
    private static let step = 1 << 20

    /// The tag of a file's `size` bytes, read a step at a time: memory never holds a segment (a mapping would
    /// count the whole file in the process's resident memory).
    private static func tag(of fd: Int32, size: Int64) throws(Errno) -> UInt32 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: step, alignment: 4096)
        defer { buffer.deallocate() }
        var tag = BlockTag.Running()
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(Int64(step), size - offset))
            try fill(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]), from: fd, at: offset)
            tag.add(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return tag.value
    }

    /// Reads exactly `buffer.count` bytes at `offset`; EIO when the file ends before.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, from fd: Int32, at offset: Int64) throws(Errno) {
        var filled = 0
        while filled < buffer.count {
            let read = try FileSystem.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), at: offset + Int64(filled))
            guard read > 0 else { throw Errno(rawValue: EIO) }
            filled += read
        }
    }

    /// What an earlier run kept and held for this exact list (its fingerprint), each checked against its file:
    /// a kept fetch's whole bytes, a held one's sampled runs.
    func earlier(fingerprint: String, fetches: Int) -> (kept: [StreamManifest.Kept], held: [Int: StreamManifest.Held]) {
        guard let bytes = try? FileSystem.contents(at: SideFiles.segmentsManifest(in: directory)),
            let manifest = StreamManifest.decode(bytes), manifest.fingerprint == fingerprint, manifest.fetches == fetches
        else { return ([], [:]) }
        let kept = manifest.kept.filter { kept in
            guard let fd = try? FileSystem.open(path(of: kept.fetch), .read) else { return false }
            defer { FileSystem.close(fd) }
            return (try? FileSystem.status(of: fd).size) == kept.size && (try? Self.tag(of: fd, size: kept.size)) == kept.tag
        }
        let held = manifest.held.filter { _, held in
            guard let fd = try? FileSystem.open(path(of: held.fetch), .read) else { return false }
            defer { FileSystem.close(fd) }
            var buffer: [UInt8] = []
            return held.runs.allSatisfy { (try? FileSystem.sampledTag(of: $0.range, in: fd, buffer: &buffer)) == $0.tag }
        }
        return (kept, held)
    }

    /// The held bytes of a fetch as the manifest records them: each run with the tag of its sampled bytes.
    func held(fetch: Int, length: Int64, validator: String, bytes: ByteRangeSet) throws(DownloadError) -> StreamManifest.Held {
        let path = path(of: fetch)
        let fd: Int32
        do { fd = try FileSystem.open(path, .read) } catch { throw .forOutput(error) }
        defer { FileSystem.close(fd) }
        var runs: [StreamManifest.Held.Run] = []
        var buffer: [UInt8] = []
        for range in bytes.ranges {
            do throws(Errno) { runs.append(.init(range: range, tag: try FileSystem.sampledTag(of: range, in: fd, buffer: &buffer))) } catch
            {
                throw .forOutput(FileSystemError(error, path: path))
            }
        }
        return StreamManifest.Held(fetch: fetch, length: length, validator: validator, runs: runs)
    }

    /// Writes the whole manifest (atomically), as a run starts.
    func save(_ manifest: StreamManifest) throws(DownloadError) {
        do { try FileReplacement.write(manifest.encoded(), to: SideFiles.segmentsManifest(in: directory)) } catch {
            throw .forOutput(error)
        }
    }

    /// Records one more kept fetch: an append, synced (its bytes were synced before).
    func append(_ entry: StreamManifest.Kept) throws(DownloadError) {
        try append(StreamManifest.line(entry))
    }

    /// Appends manifest lines, synced.
    func append(_ lines: [UInt8]) throws(DownloadError) {
        let path = SideFiles.segmentsManifest(in: directory)
        let fd: Int32
        do { fd = try FileSystem.open(path, .append) } catch { throw .forOutput(error) }
        defer { FileSystem.close(fd) }
        do throws(Errno) {
            try FileSystem.write(lines, to: fd)
            try FileSystem.syncData(fd)
        } catch {
            throw .forOutput(FileSystemError(error, path: path))
        }
    }

}
