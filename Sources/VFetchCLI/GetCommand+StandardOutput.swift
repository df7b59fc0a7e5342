import ArgumentParser
import Foundation
import Synchronization
import VFetchCore
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#endif

extension GetCommand {
    /// `-o -` and `-o /dev/stdout`, as curl: the file goes to standard output (`| mpv -`).
    static func namesStandardOutput(_ path: String) -> Bool { path == "-" || path == "/dev/stdout" }

    /// `get -o -`: the connections fetch the file in parallel and in playback order (`--playback-order`) into a
    /// private temporary directory, from which its contiguous head is copied to standard output as it
    /// grows; the directory is removed at the end, whatever the end. Messages go to stderr only.
    func runToStandardOutput(reporter: any ProgressReporter) async throws {
        let copy: StandardOutputCopy
        do { copy = try StandardOutputCopy() } catch {
            reporter.failed(error)
            throw ExitCode(ExitStatus(error).rawValue)
        }
        defer { copy.remove() }
        // A reader that quits (`| head`) is a failed write, said and cleaned up, not a silent death.
        signal(SIGPIPE, SIG_IGN)
        var options = downloadOptions
        options.playbackOrder = true
        options.privateOutput = true
        // Nothing is resumed from a pipe: no manifest worth syncing.
        options.checkpointInterval = .infinity
        options.checkpointBytes = .max
        // A file only: a stream's remux needs its whole output before a player could read it.
        options.detectsStreams = true
        let download = FileDownload(url: url, to: .file(copy.path), options: options)
        Interrupts.onInterrupt { download.cancel() }
        defer { Interrupts.onInterrupt(nil) }
        let copying = Task { await copy.run(onFailure: { download.cancel() }) }
        let printing = Task {
            for await event in download.events {
                copy.observe(event)
                reporter.report(StandardOutputCopy.shown(event))
            }
        }
        let result: DownloadError?
        do {
            _ = try await download.run()
            result = nil
        } catch {
            result = error
        }
        await printing.value
        if result == nil { copy.finish() } else { copy.abandon() }
        let unwritten = await copying.value
        if let unwritten {
            let error = DownloadError.outputNotWritable("standard output: \(unwritten)")
            reporter.failed(error)
            throw ExitCode(ExitStatus(error).rawValue)
        }
        switch result {
        case nil: return
        case .segmentedStream?:
            writeStandardError("vfetch: -o - writes a file, not an HLS or DASH stream: give -o FILE\n")
            throw ExitCode.validationFailure
        case .metalink?:
            writeStandardError("vfetch: -o - writes one URL's answer, not the file a Metalink file describes: give -o FILE\n")
            throw ExitCode.validationFailure
        case let error?:
            reporter.failed(error)
            throw ExitCode(ExitStatus(error).rawValue)
        }
    }
}

/// The download behind `-o -`: a file in a private temporary directory, and a thread that copies its
/// contiguous head to standard output as the download's progress says it grows.
final class StandardOutputCopy: Sendable {
    private struct State {
        /// The file's bytes from offset 0 that are on disk.
        var head: Int64 = 0
        /// The file is complete: copy to its end.
        var complete = false
        /// The download failed: stop copying.
        var abandoned = false
    }

    let directory: String
    private let state = Mutex(State())
    private let news = DispatchSemaphore(value: 0)

    /// A private (0700) directory in `$TMPDIR` or /tmp.
    init() throws(DownloadError) {
        var template = Array((NSTemporaryDirectory() + "vfetch-stdout-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .outputNotWritable("cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        Self.removedAtExit.withLock { directories in
            // A second Ctrl-C exits at once, through `exit`, past every `defer`.
            if directories.isEmpty { atexit { StandardOutputCopy.removeAll() } }
            directories.append(directory)
        }
    }

    /// The temporary directories to remove however this process exits.
    private static let removedAtExit = Mutex<[String]>([])

    private static func removeAll() {
        for directory in removedAtExit.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Where the download writes.
    var path: String { directory + "/download" }

    /// The event as the user reads it: the file is written to standard output, not to the temporary path.
    static func shown(_ event: DownloadEvent) -> DownloadEvent {
        switch event {
        case .started(var info):
            info.outputPath = "standard output"
            return .started(info)
        case .finished(var summary):
            summary.path = "standard output"
            return .finished(summary)
        default: return event
        }
    }

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
    /// written out or abandoned; the error of a write to standard output that failed, after calling
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
                    try FileSystem.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), to: STDOUT_FILENO)
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
    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
