import ArgumentParser
import Foundation
import Logging
import VFetchEngine
import VFetchMedia

@main
struct VFetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vfetch",
        abstract: "Fetch large video files over HTTP(S) with many connections at once.",
        version: "vfetch \(Version.vfetch) (libcurl \(Version.libcurl), libavformat \(MediaInspector.libavformatVersion))",
        subcommands: [
            GetCommand.self, InfoCommand.self, StatusCommand.self, ServeCommand.self, PlayCommand.self, CacheCommand.self,
            AddCommand.self, ListCommand.self, PauseCommand.self, ResumeCommand.self, RemoveCommand.self, WaitCommand.self,
        ]
    )

    static func main() async {
        Interrupts.start()
        LoggingSystem.bootstrap(StandardErrorLog.init(label:))
        // `vfetch` alone is bad usage, as `curl` and `wget` alone are: the help on stderr, exit code 64.
        if CommandLine.arguments.count == 1 {
            writeStandardError(helpMessage() + "\n")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            // Bad usage is one line, like every other error; help and exit codes go the usual way.
            let message = message(for: error)
            if !(error is ExitCode), exitCode(for: error) == .validationFailure, !message.isEmpty {
                writeStandardError("vfetch: \(message) (see --help)\n")
                Foundation.exit(ExitCode.validationFailure.rawValue)
            }
            exit(withError: error)
        }
    }
}
