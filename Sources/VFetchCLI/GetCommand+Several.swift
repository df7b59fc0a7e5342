import ArgumentParser
import Foundation
import Synchronization
import VFetch
import VFetchCore
import VFetchEngine

extension GetCommand {
    /// `get URL URL…` and `-i FILE`, as aria2c's: at most `-j` downloads at once into `-d` (or here), each
    /// saying where it goes and what it saved; progress is left out, since several lines would fight over
    /// one. Fails (with the first failure's exit code) when any fails, naming how many.
    func runSeveral() async throws {
        var all = urls
        if let inputFile { all += try Self.urls(inFile: inputFile) }
        try requireFetchable(all)
        if let directory { try makeDirectories(directory) }
        let running = Mutex<[Download]>([])
        Interrupts.onInterrupt { for download in running.withLock({ $0 }) { download.cancel() } }
        defer { Interrupts.onInterrupt(nil) }
        let (destination, options, limit) = (Destination.directory(directory ?? "."), downloadOptions, maxDownloads)
        let reporter: any ProgressReporter = json ? JSONReporter() : quiet ? SilentReporter() as any ProgressReporter : LineReporter()
        let failures = await withTaskGroup(of: DownloadError?.self) { group in
            var next = 0
            func start() {
                let download = Download(url: all[next], to: destination, options: options)
                running.withLock { $0.append(download) }
                next += 1
                group.addTask { () async -> DownloadError? in
                    let printing = Task {
                        for await event in download.events where !event.isProgress { reporter.report(event) }
                    }
                    do throws(DownloadError) {
                        _ = try await download.run()
                        await printing.value
                        return nil
                    } catch .alreadyComplete(let path) {
                        await printing.value
                        writeStandardError("vfetch: \(DownloadError.alreadyComplete(path))\n")
                        return nil
                    } catch {
                        await printing.value
                        reporter.failed(error)
                        return error
                    }
                }
            }
            while next < min(limit, all.count) { start() }
            var failures: [DownloadError] = []
            for await failure in group {
                if let failure { failures.append(failure) }
                if next < all.count, failures.allSatisfy({ $0 != .interrupted }) { start() }
            }
            return failures
        }
        guard let first = failures.first else { return }
        if !quiet { writeStandardError("vfetch: \(failures.count) of \(all.count) downloads failed\n") }
        throw ExitCode(ExitStatus(first).rawValue)
    }

    /// The URLs of an input file (`-` for stdin): one per line, blank lines and `#` comments skipped.
    static func urls(inFile path: String) throws -> [String] {
        let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path)
        guard let data else {
            writeStandardError("vfetch: cannot read \(path)\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}

extension DownloadEvent {
    /// A progress snapshot, of a file or of a stream.
    var isProgress: Bool {
        switch self {
        case .progress, .streamProgress: true
        default: false
        }
    }
}
