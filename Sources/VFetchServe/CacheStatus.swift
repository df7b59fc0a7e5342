import VFetchCache
import VFetchCore

/// What the player cache holds and serves right now, as `vfetch serve`'s `GET /status` answers it and
/// ``PlayerCacheServer/status()`` returns it: every entry (a stream as one, its files inside), with the
/// players reading each file, its download, and the time ranges playable from its bytes.
///
/// In JSON: `{"entries": [entry, …], "bytes_cached", "readers"}`, each entry an object whose `kind` is `file`
/// (``File``) or `stream` (``Stream``). URLs are without their passwords.
public struct CacheStatus: Sendable, Equatable {
    /// Every entry, by ID.
    public var entries: [Entry]
    /// Bytes saved, of every file.
    public var bytesCached: Int64
    /// Players reading now, of every file.
    public var readers: Int

    /// One entry: a file, or a stream with its files.
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

    /// A cached file, as it is now (a file being fetched included).
    ///
    /// In JSON: `{"kind": "file", "id", "url", "key", "length", "bytes_cached", "bytes_on_disk", "complete",
    /// "state", "last_access", "readers", "downloading", "playable"}`; `length` and `playable` are left out
    /// while the file's length is not known.
    public struct File: Sendable, Equatable {
        /// The entry's ID: a hash of its key.
        public var id: String
        /// The URL it is fetched from.
        public var url: String
        /// What it is cached by: the URL, unless the player gave a key of its own.
        public var key: String
        /// The file's size, once known.
        public var length: Int64?
        /// Bytes saved.
        public var bytesCached: Int64
        /// The disk space its part takes.
        public var bytesOnDisk: Int64
        /// Whether every byte is saved.
        public var isComplete: Bool
        /// `complete`, `partial`, `empty` or `failed`.
        public var state: String
        /// Its latest read, in seconds since 1970.
        public var lastAccess: Double
        /// Players reading it now.
        public var readers: Int
        /// Whether the cache is fetching it now.
        public var isDownloading: Bool
        /// Time ranges in seconds playable from the bytes saved, as `[start, end]` pairs in JSON; empty when it
        /// is not media or its index is not saved yet, nil while its length is not known.
        public var playable: [ClosedRange<Double>]?
    }

    /// A stream: its playlist's URL, the variants players read, and its files.
    ///
    /// In JSON: `{"kind": "stream", "id", "url", "state", "complete", "variants", "variants_read", "segments",
    /// "segments_cached", "bytes_cached", "bytes_on_disk", "last_access", "parts", "readers", "downloading"}`,
    /// `parts` being its files.
    public struct Stream: Sendable, Equatable {
        /// The ID of the kept copy of its playlist.
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
        /// Players reading its files now.
        public var readers: Int
        /// Whether the cache is fetching any of its files now.
        public var isDownloading: Bool
    }
}

extension CacheStatus.Stream {
    /// `stream` with its files' entries; its readers and download are theirs.
    init(_ stream: CachedStream, parts: [CacheStatus.File]) {
        self.init(
            id: stream.id, url: stream.url, state: stream.state, isComplete: stream.isComplete, variants: stream.variants,
            variantsRead: stream.variantsRead, segments: stream.segments, segmentsCached: stream.segmentsCached,
            bytesCached: stream.bytesCached, bytesOnDisk: stream.bytesOnDisk, lastAccess: stream.lastAccess, parts: parts,
            readers: parts.reduce(0) { $0 + $1.readers }, isDownloading: parts.contains(where: \.isDownloading))
    }
}
