import Foundation
import Synchronization
import VFetchCore
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The download behind `Destination.descriptor`: a file in a private temporary directory, and a thread
/// that copies its contiguous head to the descriptor as the download's progress says it grows.
final class OrderedCopy: Sendable {
    private struct State {
        /// The file's bytes from offset 0 that are on disk.
        var head: Int64 = 0
        /// The file is complete: copy to its end.
        var complete = false
        /// The download failed: stop copying.
        var abandoned = false
    }

    let directory: String
    private let descriptor: Int32
    private let state = Mutex(State())
    private let news = DispatchSemaphore(value: 0)

    /// A private (0700) directory in `$TMPDIR` or /tmp, for a copy to `descriptor`.
    init(to descriptor: Int32) throws(DownloadError) {
        self.descriptor = descriptor
        var template = Array((NSTemporaryDirectory() + "vfetch-stdout-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .outputNotWritable("cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        // A second Ctrl-C exits at once, through `exit`, past every `defer`.
        Self.cleanUpAtExit
        Self.removedAtExit.withLock { $0.append(directory) }
    }

    /// The temporary directories to remove however this process exits.
    private static let removedAtExit = Mutex<[String]>([])
    /// Registers `removeAll` to run at exit, once per process.
    private static let cleanUpAtExit: Void = { atexit { OrderedCopy.removeAll() } }()

    private static func removeAll() {
        for directory in removedAtExit.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Where the download writes.
    var path: String { directory + "/download" }

    /// Takes what is on disk from offset 0 from the download's progress.
    func observe(_ event: DownloadEvent) {
        guard case .progress(let progress) = event, let first = progress.doneRanges.first, first.lowerBound == 0 else { return }
        state.withLock { $0.head = max($0.head, first.upperBound) }
        news.signal()
    }

    /// The download succeeded: the rest of the file is copied.
    func finish() {
        state.withLock { $0.complete = true }
        news.signal()
    }

    /// The download failed: copying stops.
    func abandon() {
        state.withLock { $0.abandoned = true }
        news.signal()
    }

    /// Copies on a thread of its own (a player that reads slowly blocks it) until the file is
    /// written out or abandoned; the error of a write to the descriptor that failed, after calling
    /// `onFailure` (a player that quit: the download has no reader left).
    func run(onFailure: @escaping @Sendable () -> Void) async -> Errno? {
        await onOwnThread(named: "vfetch-stdout") {
            let failure = self.copy()
            if failure != nil { onFailure() }
            return failure
        }
    }

    private func copy() -> Errno? {
        var descriptor: Int32 = -1
        defer { if descriptor >= 0 { close(descriptor) } }
        var copied: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let (head, complete, abandoned) = state.withLock { ($0.head, $0.complete, $0.abandoned) }
            if abandoned { return nil }
            guard copied < head || complete else {
                _ = news.wait(timeout: .now() + 0.1)
                continue
            }
            // The side file until it is complete, then the same file under its final name.
            if descriptor < 0 { descriptor = open(SideFiles(output: path).part, O_RDONLY | O_CLOEXEC) }
            if descriptor < 0 { descriptor = open(path, O_RDONLY | O_CLOEXEC) }
            guard descriptor >= 0 else { return Errno(rawValue: errno) }
            let wanted = complete ? buffer.count : Int(min(Int64(buffer.count), head - copied))
            let (fd, offset) = (descriptor, copied)
            let moved = buffer.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) -> Int in
                    let count = try FileSystem.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]), at: offset)
                    try FileSystem.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), to: self.descriptor)
                    return count
                }
            }
            switch moved {
            case .failure(let error): return error
            case .success(0): if complete { return nil }  // all of it written
            case .success(let count): copied += Int64(count)
            }
        }
    }

    /// Removes the temporary directory and what the download left in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
        Self.removedAtExit.withLock { $0.removeAll { $0 == directory } }
    }
}
