import NIOPosix
import Synchronization
import VFetchCache
import VFetchCore
import VFetchEngine

/// The kept playlists as `/status` groups streams by (`CachedStream.group`), parsed on a thread of
/// their own, one at a time, and each only once while its file is unchanged: a parse of many large
/// playlists never holds the disk threads players' reads wait for, and asking `/status` again
/// parses nothing new.
final class KeptDocuments: Sendable {
    private let directory: CacheDirectory
    /// The one thread that reads and parses kept playlists; stopped by `shutdown`.
    private let thread = NIOThreadPool(numberOfThreads: 1)
    /// The documents parsed, by ID, with the stamp of the file they were parsed from.
    private let parsed = Mutex<[String: (stamp: [Int64], document: CachedStream.Document?)]>([:])

    init(directory: CacheDirectory) {
        self.directory = directory
        thread.start()
    }

    /// Every kept playlist's document, as `CacheDirectory.keptDocuments` reads them.
    func documents() async -> [CachedStream.Document] {
        (try? await thread.runIfActive { [self] in read() }) ?? []
    }

    private func read() -> [CachedStream.Document] {
        let files = directory.keptFiles()
        let known = parsed.withLock { $0 }
        var now: [String: (stamp: [Int64], document: CachedStream.Document?)] = [:]
        for file in files {
            var document: CachedStream.Document?
            if let old = known[file.id], old.stamp == file.stamp {
                document = old.document
            } else {
                document = directory.keptDocument(file)
            }
            // What changes without a new file: when it was read, the space it takes.
            document?.lastAccess = file.lastAccess
            document?.bytesOnDisk = file.bytesOnDisk
            now[file.id] = (file.stamp, document)
        }
        // Only those still on disk are remembered.
        parsed.withLock { $0 = now }
        return files.compactMap { now[$0.id]?.document }
    }

    func shutdown() async { try? await thread.shutdownGracefully() }
}
