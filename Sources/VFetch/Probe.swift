import Foundation
import VFetchCore
import VFetchEngine
import VFetchMedia
import VFetchStreams

/// What a URL or a file holds, as `vfetch info` shows it.
///
/// Its JSON is the object `vfetch info --json` prints: the case's value as it encodes itself, with no key
/// naming the case. Media is `MediaReport`'s `{"container", "duration", "bit_rate", "streams", …}`; a stream is
/// `StreamCatalogInfo`'s `{"stream": "hls" or "dash", "live", "duration", "tracks"}`; an unfinished stream
/// download is ``UnfinishedStream``'s `{"stream": URL, "complete": false, "segments", "segments_kept",
/// "bytes_kept"}`. Decoding tells them apart by `tracks` and `segments_kept`.
public enum ProbeResult: Sendable, Equatable {
    /// A media file, whole or partial, local or remote: its container and streams, what of it is
    /// playable, and which bytes playback needs next.
    case media(MediaReport)
    /// An HLS playlist or a DASH manifest: its tracks, among which `DownloadOptions.format` chooses.
    case stream(StreamCatalogInfo)
    /// The segments an unfinished stream download has kept so far.
    case unfinishedStream(UnfinishedStream)
}

/// What an interrupted stream download kept, from the manifest in its parts folder.
///
/// In JSON: `{"stream": URL, "complete": false, "segments", "segments_kept", "bytes_kept"}`.
public struct UnfinishedStream: Sendable, Equatable {
    /// The playlist's or manifest's URL.
    public var source: String
    /// Segments (and init sections) in all.
    public var segments: Int
    /// The indexes of those kept, in order.
    public var segmentsKept: [Int]
    /// The bytes of those kept.
    public var bytesKept: Int64
}

/// Why `probe(_:options:)` could not say what a target holds.
public enum ProbeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No such file, and no unfinished download of that name.
    case notFound(String)
    /// A FIFO, a device or a directory: never read (a FIFO would block the probe for ever).
    case notARegularFile(String, kind: String)
    /// The URL could not be read (the same errors as a download's).
    case download(DownloadError)
    /// libavformat cannot read it as media.
    case notMedia(String)

    /// One line saying why, credentials masked.
    public var description: String {
        switch self {
        case .notFound(let path): "\(path) does not exist"
        case .notARegularFile(let path, let kind): "\(path) is \(kind), not a regular file"
        case .download(let error): error.description
        case .notMedia(let reason): redactingCredentials(in: reason)
        }
    }
}

/// Probes a URL (its head and index only: an MP4's moov wherever it is, not the file), a file, the output path
/// of an unfinished download or its `NAME.part`, or an unfinished stream download's output.
public func probe(_ target: String, options: DownloadOptions = DownloadOptions()) async throws(ProbeError) -> ProbeResult {
    let lower = target.lowercased()
    guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return try await probe(path: target) }
    do {
        return .media(try await MediaInspector.inspect(url: target, options: options))
    } catch DownloadError.segmentedStream {
        do { return .stream(try await StreamDownload.catalog(url: target, options: options)) } catch { throw .download(error) }
    } catch let error as DownloadError {
        throw .download(error)
    } catch {
        throw .notMedia("\(target): \(error)")
    }
}

private func probe(path: String) async throws(ProbeError) -> ProbeResult {
    let sides = SideFiles(output: path)
    if !FileSystem.exists(path) {
        if let stream = unfinishedStream(output: path) { return .unfinishedStream(stream) }
        guard FileSystem.exists(sides.manifest) || FileSystem.exists(sides.part) else { throw .notFound(path) }
    }
    if let kind = FileSystem.kind(at: path, followingLinks: true) { throw .notARegularFile(path, kind: "\(kind)") }
    do {
        return .media(try await MediaInspector.inspect(path: path))
    } catch let error as DownloadError {
        throw .download(error)
    } catch {
        throw .notMedia("\(path): \(error)")
    }
}

/// The manifest of an unfinished stream download whose output is `path` (or `path` is its parts folder).
private func unfinishedStream(output path: String) -> UnfinishedStream? {
    let folder = SideFiles.segments(named: path)
    guard let bytes = try? FileSystem.contents(at: SideFiles.segmentsManifest(in: folder)),
        let manifest = StreamManifest.decode(bytes)
    else { return nil }
    return UnfinishedStream(
        source: manifest.source, segments: manifest.fetches, segmentsKept: manifest.kept.map(\.fetch).sorted(),
        bytesKept: manifest.kept.reduce(0) { $0 + $1.size })
}
