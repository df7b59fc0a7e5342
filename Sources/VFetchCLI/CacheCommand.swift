import ArgumentParser
import Foundation
import VFetch
import VFetchCore

struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List and tidy the player cache of `vfetch serve`.",
        discussion: "Exit codes: 0 done, 1 no such entry, 7 cache directory not writable, 11 a server uses the cache (stop it first).",
        subcommands: [List.self, Remove.self, Clear.self, Collect.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the cached files.")
        @OptionGroup var location: CacheLocation
        @Flag(help: "Print one JSON object per entry.")
        var json = false

        func run() throws {
            let directory = try open(location, exclusive: false)
            let entries = directory.entries()
            if json {
                for entry in entries {
                    let state = entry.state
                    var error: String?
                    if case .failed(let reason) = state { error = reason }
                    printJSONLine([
                        "id": entry.id, "url": redactedURL(entry.url), "key": redactedURL(entry.key), "length": entry.length as Any,
                        "bytes_cached": entry.bytesCached, "bytes_on_disk": entry.bytesOnDisk,
                        "complete": entry.isComplete, "last_access": entry.lastAccess, "state": state.name,
                        "error": error.map(redactingCredentials(in:)) as Any,
                    ])
                }
            } else if !entries.isEmpty {
                for line in Self.table(entries) { print(line) }
            }
        }

        /// ID, STATE, SIZE (on disk) and URL in aligned columns, under a header.
        static func table(_ entries: [CacheDirectory.EntryInfo]) -> [String] {
            let rows =
                [["ID", "STATE", "SIZE", "URL"]]
                + entries.map { entry in
                    [entry.id, redactingCredentials(in: entry.state.description), humanSize(entry.bytesOnDisk), redactedURL(entry.url)]
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
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove entries, named by ID or URL.")
        @OptionGroup var location: CacheLocation
        @Argument(help: "Entry IDs (as `vfetch cache ls` shows) or the URLs (or keys) they were read by.")
        var entries: [String]

        func run() throws {
            let directory = try open(location, exclusive: true)
            let known = directory.entries()
            var missing: [String] = []
            for name in entries {
                let matches = known.filter { $0.id == name || $0.url == name || $0.key == name }
                if matches.isEmpty { missing.append(name) }
                for entry in matches { directory.remove(entry.id) }
            }
            directory.save()
            if !missing.isEmpty {
                writeStandardError("vfetch: not in the cache: \(missing.map(redactedURL).joined(separator: ", "))\n")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every entry.")
        @OptionGroup var location: CacheLocation

        func run() throws {
            let directory = try open(location, exclusive: true)
            for entry in directory.entries() { directory.remove(entry.id) }
            for id in directory.keptPlaylists() { directory.remove(id) }
            directory.save()
        }
    }

    struct Collect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gc", abstract: "Evict least recently used entries until the cache fits, and remove leftovers.")
        @OptionGroup var location: CacheLocation
        @Option(name: .customLong("max-cache-size"), help: "The size to fit in (K, M, G, T).")
        var maxCacheSize = ByteCount(argument: "10G")!

        func run() throws {
            let directory = try open(location, exclusive: true)
            // Files without a readable manifest hold nothing a server could serve.
            for entry in directory.entries() where entry.length == nil { directory.remove(entry.id) }
            let evicted = directory.evict(toFit: maxCacheSize.bytes, inUse: [])
            directory.save()
            print("evicted \(evicted.count) entries")
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
