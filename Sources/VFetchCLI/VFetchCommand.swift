import ArgumentParser

@main
struct VFetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vfetch",
        abstract: "Fetch large video files over HTTP(S) with many connections at once.",
        subcommands: [GetCommand.self, InfoCommand.self, StatusCommand.self, ServeCommand.self, PlayCommand.self, CacheCommand.self,
            AddCommand.self, ListCommand.self, PauseCommand.self, ResumeCommand.self, RemoveCommand.self, WaitCommand.self,
        ]
    )

    static func main() async {
        Interrupts.start()
        await main(nil)
    }
}
