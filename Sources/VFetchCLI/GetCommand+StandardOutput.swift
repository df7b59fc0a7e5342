import ArgumentParser
import Foundation
import VFetch
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#endif

extension GetCommand {
    /// `-o -` and `-o /dev/stdout`, as curl: the file goes to standard output (`| mpv -`).
    static func namesStandardOutput(_ path: String) -> Bool { path == "-" || path == "/dev/stdout" }

    /// `get -o -`: `download` goes to `Destination.descriptor`, the file in order on standard output as it
    /// arrives over many connections. Messages go to stderr only.
    func runToStandardOutput(_ download: Download, reporter: any ProgressReporter) async throws {
        // A reader that quits (`| head`) is a failed write, said and cleaned up, not a silent death.
        signal(SIGPIPE, SIG_IGN)
        Interrupts.onInterrupt { download.cancel() }
        defer { Interrupts.onInterrupt(nil) }
        let printing = Task {
            for await event in download.events { reporter.report(event.writing(to: "standard output")) }
        }
        do {
            _ = try await download.run()
            await printing.value
        } catch .segmentedStream {
            await printing.value
            writeStandardError("vfetch: -o - writes a file, not an HLS or DASH stream: give -o FILE\n")
            throw ExitCode.validationFailure
        } catch .metalink {
            await printing.value
            writeStandardError("vfetch: -o - writes one URL's answer, not the file a Metalink file describes: give -o FILE\n")
            throw ExitCode.validationFailure
        } catch {
            await printing.value
            reporter.failed(error)
            throw ExitCode(ExitStatus(error).rawValue)
        }
    }
}
