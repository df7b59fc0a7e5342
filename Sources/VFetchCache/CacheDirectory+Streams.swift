import Foundation
import VFetchCore
import VFetchEngine
import VFetchStreams

extension CacheDirectory {
    /// Every kept playlist and manifest, read as `CachedStream.group` needs: the lists each names or
    /// holds. One that cannot be read names nothing (its files list as files).
    package func keptDocuments() -> [CachedStream.Document] {
        keptFiles().compactMap(keptDocument)
    }

    /// A kept playlist's file as it is now, without reading it: what a caller that keeps the documents
    /// it parsed (serve's `/status`) needs to tell whether one changed.
    package struct KeptFile: Sendable, Equatable {
        package var id: String
        /// Inode, size and modification time: a kept copy is replaced by a new file, never changed in place.
        package var stamp: [Int64]
        package var bytesOnDisk: Int64
        package var lastAccess: Double
    }

    /// Every kept playlist's file (see `keptDocuments`).
    package func keptFiles() -> [KeptFile] {
        let access = index.withLock { $0.entries.entries.mapValues(\.lastAccess) }
        return keptPlaylists().compactMap { id in
            guard let status = try? FileSystem.status(at: SideFiles(output: entryPath(id)).keptPlaylist, followingLinks: false)
            else { return nil }
            return KeptFile(
                id: id, stamp: [Int64(bitPattern: status.inode), status.size, Int64(status.modified)],
                bytesOnDisk: status.allocatedBytes, lastAccess: access[id] ?? 0)
        }
    }

    /// The kept playlist of `file` read and parsed as `keptDocuments` does; nil when it cannot be.
    package func keptDocument(_ file: KeptFile) -> CachedStream.Document? {
        let id = file.id
        guard let bytes = try? FileSystem.contents(at: SideFiles(output: entryPath(id)).keptPlaylist),
            let kept = KeptPlaylist(decoding: bytes), let final = URL(string: kept.facts.finalURL),
            let catalog = try? StreamDocument.catalog(kept.body, url: final, contentType: kept.facts.contentType)
        else { return nil }
        var document = CachedStream.Document(
            id: id, url: kept.facts.url, variants: [], bytesOnDisk: file.bytesOnDisk, lastAccess: file.lastAccess)
        for track in catalog.tracks {
            // A media playlist is its own one list; a master's lists are its media playlists; a manifest's, its Representations.
            let name: String
            switch track.segments {
            case .playlist(let url): name = url.absoluteString
            case .list, .indexed: name = catalog.format == .hls ? kept.facts.url : kept.facts.url + "#" + track.id
            case .none: continue
            }
            if track.kind == .video || track.kind == .muxed {
                document.variants.append(name)
            } else {
                document.renditions.append(name)
            }
            if let files = Self.files(of: track.segments) { document.files[name] = files }
        }
        return document
    }

    /// The files of a list a document holds, each once, in play order: segments, init sections, keys.
    private static func files(of source: SegmentSource) -> [String]? {
        var resources: [URL] = []
        switch source {
        case .list(let list):
            for segment in list.segments {
                if let initialization = segment.initialization { resources.append(initialization.url) }
                if case .aes128(let key, _) = segment.encryption { resources.append(key) }
                resources.append(segment.resource.url)
            }
        case .indexed(let url, let initialization, _):
            resources = (initialization.map { [$0.url] } ?? []) + [url]
        case .playlist, .none:
            return nil
        }
        var files: [String] = []
        var seen = Set<String>()
        for url in resources.map(\.absoluteString) where seen.insert(url).inserted { files.append(url) }
        return files
    }

    /// The streams among `entries` (`CachedStream.group`), from the playlists kept beside them.
    package func streams(among entries: [EntryInfo]) -> [CachedStream] {
        let files = entries.map {
            CachedStream.File(
                id: $0.id, url: $0.url, bytesCached: $0.bytesCached, bytesOnDisk: $0.bytesOnDisk, isComplete: $0.isComplete,
                lastAccess: $0.lastAccess)
        }
        return CachedStream.group(documents: keptDocuments(), files: files)
    }

    /// The IDs `name` names, for `vfetch cache rm`: an entry by its ID, URL or key; a stream by its ID or
    /// URL, with its files and kept playlists. Empty when it names none.
    package func ids(named name: String) -> [String] {
        let known = entries()
        let files = known.filter { $0.id == name || $0.url == name || $0.key == name }.map(\.id)
        let streams = streams(among: known).filter { $0.id == name || $0.url == name }
        return files + streams.flatMap { $0.parts + $0.playlists }
    }
}
