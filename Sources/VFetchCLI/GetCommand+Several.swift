import ArgumentParser
import Foundation
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
        let list = DownloadList(urls: all, into: directory ?? ".", options: downloadOptions, maxConcurrent: maxDownloads)
        Interrupts.onInterrupt { list.cancel() }
        defer { Interrupts.onInterrupt(nil) }
        let reporter: any ProgressReporter = json ? JSONReporter() : quiet ? SilentReporter() as any ProgressReporter : LineReporter()
        let printing = Task {
            for await update in list.updates {
                switch update {
                case .event(_, let event): if !event.isProgress { reporter.report(event) }
                case .ended(_, .success): break
                case .ended(_, .failure(.alreadyComplete(let path))): writeStandardError("vfetch: \(DownloadError.alreadyComplete(path))\n")
                case .ended(_, .failure(let error)): reporter.failed(error)
                }
            }
        }
        let failures = await list.run().compactMap { result -> DownloadError? in
            switch result {
            case .failure(.alreadyComplete)?, .success?, nil: nil
            case .failure(let error)?: error
            }
        }
        await printing.value
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
