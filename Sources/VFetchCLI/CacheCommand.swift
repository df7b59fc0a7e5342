import ArgumentParser
import Foundation
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchServe

struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List and tidy the player cache of `vfetch serve`.",
        discussion:
            "Exit codes: 0 done, 1 no such entry, 7 cache directory not writable, 11 an entry in use (while `vfetch serve` runs, `rm` and `clear` ask it, which keeps what a player reads or a download fills) or, for `gc`, a server runs (it keeps its own --max-cache-size).",
        subcommands: [List.self, Remove.self, Clear.self, Collect.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the cached files and streams.")
        @OptionGroup var location: CacheLocation
        @Flag(help: "Print one JSON object per entry.")
        var json = false

        func run() throws {
            let entries: [CacheListing.Entry]
            do {
                entries = try CacheListing.entries(inDirectory: location.cacheDirectory)
            } catch {
                writeStandardError("vfetch: \(error)\n")
                throw ExitCode(ExitStatus(error).rawValue)
            }
            if json {
                for entry in entries { printJSONLine(entry) }
            } else if !entries.isEmpty {
                for line in Self.table(entries) { print(line) }
            }
        }

        /// ID, STATE, SIZE (on disk) and URL in aligned columns, under a header: a file per line, and a
        /// stream (its playlist's URL, which of its variants players read) per line.
        static func table(_ entries: [CacheListing.Entry]) -> [String] {
            let rows =
                [["ID", "STATE", "SIZE", "URL"]]
                + entries.map { entry in
                    switch entry {
                    case .file(let file):
                        let state = CacheEntryState(length: file.length, bytesCached: file.bytesCached, failure: file.error)
                        return [file.id, state.description, humanSize(file.bytesOnDisk), file.url]
                    case .stream(let stream):
                        let state = "stream \(stream.segmentsCached)/\(stream.segments)"
                        return [stream.id, state, humanSize(stream.bytesOnDisk), stream.url + variantNote(stream)]
                    }
                }
            let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
            return rows.map { cells in
                let id = cells[0].padding(toLength: widths[0], withPad: " ", startingAt: 0)
                let state = cells[1].padding(toLength: widths[1], withPad: " ", startingAt: 0)
                let size = String(repeating: " ", count: widths[2] - cells[2].count) + cells[2]
                let line = [id, state, size, cells[3]].joined(separator: "  ")
                return String(line.reversed().drop { $0 == " " }.reversed())  // no URL: no trailing spaces
            }
        }

        /// ` (3 variants, read: 1, 3)`: which of a stream's variants players read, by their place in
        /// the playlist; nothing for a stream of one.
        static func variantNote(_ stream: CacheListing.Stream) -> String {
            guard stream.variants.count > 1 else { return "" }
            let read = stream.variants.indices.filter { stream.variantsRead.contains(stream.variants[$0]) }.map { String($0 + 1) }
            return " (\(stream.variants.count) variants, " + (read.isEmpty ? "none read)" : "read: \(read.joined(separator: ", ")))")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove entries (a stream with its files), named by ID or URL.")
        @OptionGroup var location: CacheLocation
        @Argument(help: "Entry IDs (as `vfetch cache ls` shows) or the URLs (or keys) they were read by.")
        var entries: [String]

        func run() throws {
            guard let directory = try CacheCommand.openUnlessServed(location) else { return try removeThroughServer() }
            let missing = directory.remove(named: entries)
            if !missing.isEmpty {
                writeStandardError("vfetch: not in the cache: \(missing.map(redactedURL).joined(separator: ", "))\n")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
        }

        /// The cache's server holds it: the server removes them (`DELETE /api/cache?entry=NAME`), all but
        /// those a player reads or that are being fetched.
        func removeThroughServer() throws {
            let server = try ServerLocation.parse(["--cache-dir", location.cacheDirectory])
            var failure: ExitCode?
            for name in entries {
                do {
                    try server.call("DELETE", "/api/cache?entry=" + percentEncodedValue(name), answer: QueueAPI.CacheRemoved.self)
                } catch let exit as ExitCode {
                    failure = failure ?? exit
                }
            }
            if let failure { throw failure }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every entry.")
        @OptionGroup var location: CacheLocation

        func run() throws {
            guard let directory = try CacheCommand.openUnlessServed(location) else { return try clearThroughServer() }
            directory.clear()
        }

        /// The cache's server holds it: every entry is removed as `rm` removes them through the server,
        /// but those a player reads or that are being fetched, which are named (exit code 11).
        func clearThroughServer() throws {
            let directory = try open(location, exclusive: false)
            var remove = Remove()
            remove.location = location
            remove.entries = directory.entries().map(\.id) + directory.keptPlaylists()
            guard !remove.entries.isEmpty else { return }
            try remove.removeThroughServer()
        }
    }

    struct Collect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gc", abstract: "Evict least recently used entries until the cache fits, and remove leftovers.")
        @OptionGroup var location: CacheLocation
        @Option(name: .customLong("max-cache-size"), help: "The size to fit in (K, M, G, T).")
        var maxCacheSize = ByteCount(argument: "10G")!

        func run() throws {
            guard let directory = try CacheCommand.openUnlessServed(location) else {
                writeStandardError(
                    "vfetch: vfetch serve runs on \(location.cacheDirectory) and keeps it within its own --max-cache-size "
                        + "(stop it to gc to another size; `vfetch cache clear` and `rm` work while it runs)\n")
                throw ExitCode(ExitStatus.busy.rawValue)
            }
            let evicted = directory.collect(toFit: maxCacheSize.bytes)
            print("evicted \(evicted.count) entries")
        }
    }

    /// The directory, locked for changes; nil when its running server holds it (the command then asks the
    /// server, or says why it cannot). Any other failure is one line and its exit code.
    static func openUnlessServed(_ location: CacheLocation) throws -> CacheDirectory? {
        do {
            return try CacheDirectory(path: location.cacheDirectory, exclusive: true)
        } catch DownloadError.busy where location.runningServer() != nil {
            return nil
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
    }

    static func open(_ location: CacheLocation, exclusive: Bool) throws -> CacheDirectory {
        do {
            return try CacheDirectory(path: location.cacheDirectory, exclusive: exclusive)
        } catch {
            writeStandardError("vfetch: \(error)\n")
            throw ExitCode(ExitStatus(error).rawValue)
        }
    }
}

extension ParsableCommand {
    fileprivate func open(_ location: CacheLocation, exclusive: Bool) throws -> CacheDirectory {
        try CacheCommand.open(location, exclusive: exclusive)
    }
}
