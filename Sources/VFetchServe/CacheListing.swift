import VFetchCache
import VFetchCore
import VFetchEngine

/// A cache directory's entries as `vfetch cache ls` lists them, read from the directory alone: no server
/// needs to run, and one that does is not disturbed.
///
/// Each ``Entry`` is one line of `vfetch cache ls --json`: a file, or a stream (an HLS playlist or a DASH
/// manifest played through the cache, with its files inside). URLs are without their passwords.
public enum CacheListing {
    /// The entries of the cache directory at `path`, by ID; AES keys are never listed. Throws as
    /// ``PlayerCacheServer/start(directory:maxCacheSize:port:options:)`` does for a directory it cannot use.
    public static func entries(inDirectory path: String) throws(DownloadError) -> [Entry] {
        let directory = try CacheDirectory(path: path, exclusive: false)
        let known = directory.entries().filter { !$0.isSecret }
        let streams = directory.streams(among: known)
        let byID = Dictionary(uniqueKeysWithValues: known.map { ($0.id, File($0)) })
        let inStreams = Set(streams.flatMap(\.parts))
        let files = known.filter { !inStreams.contains($0.id) }.map { Entry.file(File($0)) }
        let grouped = streams.map { Entry.stream(Stream($0.redacted, parts: $0.parts.compactMap { byID[$0] })) }
        return (files + grouped).sorted { $0.id < $1.id }
    }

    /// One entry: a file, or a stream with its files.
    ///
    /// In JSON: the object of its case, whose `kind` is `file` or `stream`.
    public enum Entry: Sendable, Equatable {
        /// A file cached alone.
        case file(File)
        /// A stream and its files.
        case stream(Stream)

        /// The entry's ID, which `vfetch cache rm` takes.
        public var id: String {
            switch self {
            case .file(let file): file.id
            case .stream(let stream): stream.id
            }
        }
    }

    /// A cached file.
    ///
    /// In JSON: `{"kind": "file", "id", "url", "key", "length", "bytes_cached", "bytes_on_disk", "complete",
    /// "state", "error", "last_access"}`; `length` and `error` are `null` when there is none.
    public struct File: Sendable, Equatable {
        /// The entry's ID: a hash of its key.
        public var id: String
        /// The URL it was fetched from.
        public var url: String
        /// What it is cached by: the URL, unless the player gave a key of its own.
        public var key: String
        /// The file's size, when its manifest says.
        public var length: Int64?
        /// Bytes saved.
        public var bytesCached: Int64
        /// The disk space its part takes.
        public var bytesOnDisk: Int64
        /// Whether every byte is saved.
        public var isComplete: Bool
        /// `complete`, `partial`, `empty` or `failed`.
        public var state: String
        /// Why it failed (its manifest cannot be read).
        public var error: String?
        /// Its latest read, in seconds since 1970.
        public var lastAccess: Double
    }

    /// A stream: its playlist's URL, the variants players read, and its files.
    ///
    /// In JSON: `{"kind": "stream", "id", "url", "state", "complete", "variants", "variants_read", "segments",
    /// "segments_cached", "bytes_cached", "bytes_on_disk", "last_access", "parts"}`, `parts` being its files.
    public struct Stream: Sendable, Equatable {
        /// The ID of the kept copy of its playlist: `vfetch cache rm ID` removes the stream.
        public var id: String
        /// The playlist or manifest players open.
        public var url: String
        /// `complete`, `partial` or `empty`, as files' states are named.
        public var state: String
        /// Whether every file players read is saved.
        public var isComplete: Bool
        /// What a player plays one of: an HLS master's variant playlists, a DASH manifest's video
        /// Representations (`MANIFEST#ID`); a media playlist alone is its own one variant.
        public var variants: [String]
        /// The variants a player read a segment of.
        public var variantsRead: [String]
        /// The files (segments, init sections, keys) of the variants and renditions players read.
        public var segments: Int
        /// How many of those are saved whole.
        public var segmentsCached: Int
        /// Bytes saved of all its files.
        public var bytesCached: Int64
        /// The space its files and kept playlists take.
        public var bytesOnDisk: Int64
        /// Its latest read, of a playlist or a file, in seconds since 1970.
        public var lastAccess: Double
        /// Its files.
        public var parts: [File]
    }
}

extension CacheListing.File {
    init(_ entry: CacheDirectory.EntryInfo) {
        var error: String?
        if case .failed(let reason) = entry.state { error = redactingCredentials(in: reason) }
        self.init(
            id: entry.id, url: redactedURL(entry.url), key: redactedURL(entry.key), length: entry.length, bytesCached: entry.bytesCached,
            bytesOnDisk: entry.bytesOnDisk, isComplete: entry.isComplete, state: entry.state.name, error: error,
            lastAccess: entry.lastAccess)
    }
}

extension CacheListing.Stream {
    init(_ stream: CachedStream, parts: [CacheListing.File]) {
        self.init(
            id: stream.id, url: stream.url, state: stream.state, isComplete: stream.isComplete, variants: stream.variants,
            variantsRead: stream.variantsRead, segments: stream.segments, segmentsCached: stream.segmentsCached,
            bytesCached: stream.bytesCached, bytesOnDisk: stream.bytesOnDisk, lastAccess: stream.lastAccess, parts: parts)
    }
}
