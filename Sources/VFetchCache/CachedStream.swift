import VFetchCore
/// A stream in the player cache, as `vfetch cache ls` and serve's `/status` show it: one entry for an
/// HLS master playlist (or a DASH manifest, or a media playlist played alone) and every file of it
/// serve cached (segments, init sections, keys), with the playlists serve kept of it.
///
/// Nothing records it: the kept playlists say which files a stream is made of (`KeptPlaylist`: a VOD
/// playlist or static manifest), so `group` finds the streams again from the cache directory alone,
/// also for files cached before there were streams. A live stream keeps no playlist: its files list
/// as files. `segments` counts files, init sections and keys included: each is a cache entry.
package struct CachedStream: Sendable, Equatable {
    /// The ID of the kept copy of its first playlist (`CacheIndex.playlistKey`).
    package var id: String
    /// The playlist or manifest players open.
    package var url: String
    /// What a player plays one of: an HLS master's variant playlists, a DASH manifest's video
    /// Representations (`MANIFEST#ID`); a media playlist alone is its own one variant.
    package var variants: [String]
    /// The variants a player read a segment of.
    package var variantsRead: [String]
    /// The files of the lists players read (their variants and renditions), and how many of them are
    /// complete in the cache.
    package var segments: Int
    package var segmentsCached: Int
    /// Bytes saved of all its files, and the space they and its kept playlists take.
    package var bytesCached: Int64
    package var bytesOnDisk: Int64
    /// Seconds since 1970: its latest access, of a playlist or a file.
    package var lastAccess: Double
    /// The entry IDs of its files.
    package var parts: [String]
    /// The IDs of its kept playlists, the first one's included: what `cache rm` of the stream removes with its parts.
    package var playlists: [String]

    package var isComplete: Bool { segments > 0 && segmentsCached == segments }

    /// `complete`, `partial` (some bytes saved) or `empty`, as files' states are named.
    package var state: String { isComplete ? "complete" : bytesCached > 0 ? "partial" : "empty" }

    /// The stream as it may be shown: its URLs without their passwords.
    package var redacted: CachedStream {
        var stream = self
        stream.url = redactedURL(url)
        stream.variants = variants.map(redactedURL)
        stream.variantsRead = variantsRead.map(redactedURL)
        return stream
    }

    /// A kept playlist or manifest, as read: the lists it names or holds.
    package struct Document: Sendable, Equatable {
        package var id: String
        /// The URL players ask for it by.
        package var url: String
        /// Lists by name: an HLS master's media playlists (by URL: their files are in their own
        /// documents), a DASH manifest's Representations (`MANIFEST#ID`); a media playlist names itself.
        package var variants: [String]
        /// Lists played beside a variant: HLS renditions (`EXT-X-MEDIA`), DASH audio and text.
        package var renditions: [String] = []
        /// The files of the lists this document holds, by list name, in play order.
        package var files: [String: [String]] = [:]
        package var bytesOnDisk: Int64 = 0
        package var lastAccess: Double = 0

        package init(
            id: String, url: String, variants: [String], renditions: [String] = [], files: [String: [String]] = [:],
            bytesOnDisk: Int64 = 0, lastAccess: Double = 0
        ) {
            self.id = id
            self.url = url
            self.variants = variants
            self.renditions = renditions
            self.files = files
            self.bytesOnDisk = bytesOnDisk
            self.lastAccess = lastAccess
        }
    }

    /// A file's cache entry.
    package struct File: Sendable, Equatable {
        package var id: String
        package var url: String
        package var bytesCached: Int64
        package var bytesOnDisk: Int64
        package var isComplete: Bool
        package var lastAccess: Double

        package init(id: String, url: String, bytesCached: Int64, bytesOnDisk: Int64, isComplete: Bool, lastAccess: Double) {
            self.id = id
            self.url = url
            self.bytesCached = bytesCached
            self.bytesOnDisk = bytesOnDisk
            self.isComplete = isComplete
            self.lastAccess = lastAccess
        }
    }

    /// The streams among `files`, by ID: one per document no other document names as one of its
    /// lists. A file named by two streams is the first one's; files of no stream are left out.
    package static func group(documents: [Document], files: [File]) -> [CachedStream] {
        var filesOfList: [String: [String]] = [:]
        for document in documents {
            for (name, urls) in document.files { filesOfList[name] = urls }
        }
        let named = Set(documents.flatMap { document in (document.variants + document.renditions).filter { $0 != document.url } })
        let documentAt = Dictionary(documents.map { ($0.url, $0) }) { first, _ in first }
        let entriesAt = Dictionary(grouping: files, by: \.url)
        var claimed = Set<String>()
        var streams: [CachedStream] = []
        for top in documents.sorted(by: { $0.id < $1.id }) where !named.contains(top.url) {
            var lists: [String] = []
            for name in top.variants + top.renditions where !lists.contains(name) { lists.append(name) }
            let listFiles = lists.map { filesOfList[$0] ?? [] }
            // How many lists name each file: one named by a single list shows that a player read that list.
            var listsNaming: [String: Int] = [:]
            for urls in listFiles { for url in Set(urls) { listsNaming[url, default: 0] += 1 } }
            let hasBytes = { (url: String) in entriesAt[url]?.contains { $0.bytesCached > 0 } == true }
            var read = lists.indices.filter { listFiles[$0].contains { listsNaming[$0] == 1 && hasBytes($0) } }
            // One variant alone is what a player reads, before its first byte too.
            if read.isEmpty, top.variants.count == 1, let only = lists.firstIndex(of: top.variants[0]) { read = [only] }
            let wanted = Set(read.flatMap { listFiles[$0] })
            let members = listsNaming.keys.flatMap { entriesAt[$0] ?? [] }.filter { !claimed.contains($0.id) }
                .sorted { $0.id < $1.id }
            claimed.formUnion(members.map(\.id))
            let documentsOfStream = [top] + lists.compactMap { documentAt[$0] }.filter { $0.id != top.id }
            streams.append(
                CachedStream(
                    id: top.id, url: top.url, variants: top.variants,
                    variantsRead: read.map { lists[$0] }.filter(top.variants.contains),
                    segments: wanted.count,
                    segmentsCached: wanted.filter { entriesAt[$0]?.contains(where: \.isComplete) == true }.count,
                    bytesCached: members.reduce(0) { $0 + $1.bytesCached },
                    bytesOnDisk: members.reduce(0) { $0 + $1.bytesOnDisk } + documentsOfStream.reduce(0) { $0 + $1.bytesOnDisk },
                    lastAccess: (members.map(\.lastAccess) + documentsOfStream.map(\.lastAccess)).max() ?? 0,
                    parts: members.map(\.id), playlists: documentsOfStream.map(\.id)))
        }
        return streams
    }
}
