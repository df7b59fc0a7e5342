import Logging
import Synchronization

/// How the command line shows what the library and serve log: one line on standard error, `vfetch
/// serve: MESSAGE` (the words serve printed before it logged through swift-log), from `level` up.
struct StandardErrorLog: LogHandler {
    /// `serve --log-level`; a logger takes it when it is made (serve's are made once it runs).
    static let level = Mutex<Logger.Level>(.info)

    var logLevel: Logger.Level = level.withLock { $0 }
    var metadata: Logger.Metadata = [:]

    init(label: String) {}

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        writeStandardError("vfetch serve: \(event.message)\n")
    }
}
