import Foundation
import VFetchContainers
import VFetchCore
import VFetchStreams

/// A download of a segmented stream (an HLS playlist or a DASH manifest): reads the playlist, picks the
/// tracks, and fetches every segment of them over parallel connections into `NAME.parts/`, resumable
/// after any kill. What it returns is each track's files in play order, for the remux into one file.
///
/// A segment that cannot be fetched fails the download, naming it, unless `skipUnavailable`.
public final class StreamDownload: Sendable {
    public let url: String
    public let output: String
    public let options: DownloadOptions
    public let format: String?
    public let skipUnavailable: Bool
    public let events: AsyncStream<DownloadEvent>
    private let continuation: AsyncStream<DownloadEvent>.Continuation
    private let signal = CancelSignal()

    /// `format`: a `--format` selector (`TrackSelection`); nil for the best video with its audio.
    public init(
        url: String, output: String, options: DownloadOptions = DownloadOptions(), format: String? = nil, skipUnavailable: Bool = false
    ) {
        self.url = url
        self.output = output
        self.options = options
        self.format = format
        self.skipUnavailable = skipUnavailable
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Fetches the stream's segments; call once. Runs on a thread of its own, off the cooperative pool.
    public func run() async throws(DownloadError) -> StreamDownloadSummary {
        defer { continuation.finish() }
        guard isFetchableURL(url) else { throw .badURL(url) }
        let job = StreamJob(
            url: url, output: output, options: options, format: format, skipUnavailable: skipUnavailable, events: continuation,
            signal: signal)
        let signal = signal
        let result = await withTaskCancellationHandler {
            await onOwnThread(named: "vfetch-segments") { job.run() }
        } onCancel: {
            signal.cancel()
        }
        return try result.get()
    }

    /// Removes the parts folder a finished download left, once its files are remuxed.
    public static func removeParts(of summary: StreamDownloadSummary) { StreamParts.remove(summary.partsDirectory) }

    /// Removes the parts folder of the stream download into `output`, if there is one.
    package static func removeParts(ofOutput output: String) { StreamParts.remove(SideFiles(output: output).segments) }

    /// Stops the download; `run()` then throws `DownloadError.interrupted` and the parts stay for the next run.
    public func cancel() { signal.cancel() }

    /// Reads the stream's playlist (and, for HLS, its media playlists) and returns what it offers, for
    /// `vfetch info URL` and `--list-formats`.
    public static func catalog(url: String, options: DownloadOptions = DownloadOptions()) async throws(DownloadError) -> StreamCatalogInfo {
        guard isFetchableURL(url) else { throw .badURL(url) }
        let signal = CancelSignal()
        let job = StreamJob(url: url, output: "", options: options, format: nil, skipUnavailable: false, events: nil, signal: signal)
        return try await onOwnThread(named: "vfetch-segments") { job.describe() }.get()
    }
}

/// What a finished stream download saved.
public struct StreamDownloadSummary: Sendable, Equatable {
    public struct Track: Sendable, Equatable {
        public var id: String
        /// `video`, `audio`, `subtitles` or `muxed`.
        public var kind: String
        /// BCP 47 language tag, as the playlist or manifest names it.
        public var language: String?
        /// The track's init section (if any) and segments, in play order: together one stream file.
        public var files: [String]
        /// Media seconds in the kept segments.
        public var seconds: Double
    }

    public var tracks: [Track]
    /// The parts folder, removed once the caller has remuxed (`removeParts()`), unless kept.
    public var partsDirectory: String
    public var segments: Int
    public var resumedSegments: Int
    public var bytes: Int64
    public var seconds: Double
    /// Fetches left out by `skipUnavailable`, with why.
    public var skipped: [String]
}

/// A stream as `info` shows it: the format and every track.
///
/// In JSON, the object `vfetch info --json` prints for a playlist or manifest: `{"stream": "hls" or "dash",
/// "live", "duration", "tracks"}`.
public struct StreamCatalogInfo: Sendable, Equatable {
    /// One track: a video variant, an audio or subtitle rendition, or a variant of video and audio together.
    ///
    /// In JSON: `{"id", "kind", "bandwidth", "width", "height", "codecs", "language", "name", "segments",
    /// "duration", "encryption", "problem"}`, `duration` being `seconds`; a value not known is `null`.
    public struct Track: Sendable, Equatable {
        /// What `DownloadOptions.format` picks it by (`id=ID`): a DASH Representation's `id`; for HLS, the
        /// variant's position (`v0`, `v1`, …) or the rendition's `TYPE/GROUP-ID/NAME`.
        public var id: String
        /// `video`, `audio`, `subtitles` or `muxed` (video and audio in one).
        public var kind: String
        /// Bits per second, as the playlist or manifest declares it.
        public var bandwidth: Int?
        /// Picture width in pixels, when declared.
        public var width: Int?
        /// Picture height in pixels, when declared.
        public var height: Int?
        /// RFC 6381 codec strings, such as `avc1.64001f`.
        public var codecs: [String]
        /// BCP 47 language tag.
        public var language: String?
        /// A human name (HLS `NAME`, a DASH `Label`).
        public var name: String?
        /// nil when its segments are in a media playlist not read.
        public var segments: Int?
        /// Its length in seconds, when its segments were listed.
        public var seconds: Double?
        /// `none`, `AES-128`, or the DRM system.
        public var encryption: String
        /// Why its segments could not be listed (its media playlist or `sidx` index unreachable or
        /// malformed); nil when they were, or when there is nothing to list.
        public var problem: String? = nil
    }

    /// `hls` or `dash`.
    public var format: String
    /// A live stream, whose playlist grows (HLS without `EXT-X-ENDLIST`, a dynamic DASH manifest).
    public var isLive: Bool
    /// Seconds, as the document states it or as its longest listed track lasts.
    public var duration: Double?
    /// Every track, in the document's order.
    public var tracks: [Track]
}

/// One stream download, on its own thread: the steps of `StreamDownload.run()` in order.
final class StreamJob: @unchecked Sendable {
    // Handed to one thread at creation and used only there.
    let url: String
    let output: String
    let options: DownloadOptions
    let format: String?
    let skipUnavailable: Bool
    let events: AsyncStream<DownloadEvent>.Continuation?
    let signal: CancelSignal
    let started = ContinuousClock.now

    init(
        url: String, output: String, options: DownloadOptions, format: String?, skipUnavailable: Bool,
        events: AsyncStream<DownloadEvent>.Continuation?, signal: CancelSignal
    ) {
        self.url = url
        self.output = output
        self.options = options
        self.format = format
        self.skipUnavailable = skipUnavailable
        self.events = events
        self.signal = signal
    }

    /// The largest playlist or manifest read.
    static let documentLimit: Int64 = 16 << 20

    func run() -> Result<StreamDownloadSummary, DownloadError> {
        do {
            let fetcher = try SegmentFetcher(options: options, signal: signal)
            let catalog = try readCatalog(fetcher)
            let chosen: [StreamTrack]
            do {
                chosen = try TrackSelection(format).tracks(of: catalog)
            } catch {
                throw DownloadError.formatUnavailable(error.description)
            }
            events?.yield(.notice("format: " + chosen.map(\.summary).joined(separator: " + ")))
            // A master's EXT-X-SESSION-KEY (or a DASH ContentProtection) names DRM before any media playlist is read.
            for case .unsupported(let name) in chosen.map(\.encryption) { throw DownloadError.drm(name) }
            let lists = try segmentLists(of: chosen, fetcher)
            // A playlist need not name its codecs; HLS segments without an init section are MPEG-TS.
            let codecs = zip(chosen, lists).flatMap { track, list in
                guard track.codecs.isEmpty, catalog.format == .hls, list?.segments.first?.initialization == nil else { return track.codecs }
                return [track.kind == .subtitles ? "wvtt" : "MPEG-TS"]
            }
            if let problem = OutputContainer(path: output)?.problem(codecs: codecs) { throw DownloadError.formatUnavailable(problem) }
            return .success(try fetchSegments(of: chosen, lists: lists, fetcher))
        } catch let error as DownloadError {
            return .failure(error)
        } catch {
            return .failure(.transferFailed("\(error)"))
        }
    }

    func describe() -> Result<StreamCatalogInfo, DownloadError> {
        do {
            let fetcher = try SegmentFetcher(options: options, signal: signal)
            let catalog = try readCatalog(fetcher)
            // Media playlists are read so that segment counts and durations can be shown: one at a time, each
            // dropped once what is shown of it is taken, so memory holds one (16 MiB at most), not every variant.
            // A track that cannot be read (a rendition's playlist answering 404) is shown with why, as players
            // play the others; only when no track can be read does `info` fail.
            var tracks: [StreamCatalogInfo.Track] = []
            var longest: Double?
            var firstError: DownloadError?
            var anyRead = false
            for track in catalog.tracks {
                var list: SegmentList?
                var problem: String?
                do {
                    list = try segmentLists(of: [track], fetcher)[0]
                    anyRead = anyRead || list != nil
                } catch let error as DownloadError where error != .interrupted {
                    firstError = firstError ?? error
                    problem = error.description
                }
                tracks.append(
                    StreamCatalogInfo.Track(
                        id: track.id, kind: track.kind.rawValue, bandwidth: track.bandwidth, width: track.width, height: track.height,
                        codecs: track.codecs, language: track.language, name: track.name, segments: list?.segments.count,
                        seconds: list?.duration, encryption: list.map(Self.encryption) ?? Self.name(track.encryption), problem: problem))
                if let seconds = list?.duration { longest = max(longest ?? seconds, seconds) }
            }
            if let firstError, !anyRead { throw firstError }
            let duration = catalog.duration ?? longest
            return .success(StreamCatalogInfo(format: catalog.format.rawValue, isLive: catalog.isLive, duration: duration, tracks: tracks))
        } catch let error as DownloadError {
            return .failure(error)
        } catch {
            return .failure(.transferFailed("\(error)"))
        }
    }

    static func encryption(of list: SegmentList) -> String {
        Self.name(list.segments.lazy.map(\.encryption).first { $0 != .none } ?? .none)
    }

    /// `none`, `AES-128`, or the DRM system, as `info` shows a track's encryption.
    static func name(_ encryption: SegmentEncryption) -> String {
        switch encryption {
        case .none: "none"
        case .aes128: "AES-128"
        case .unsupported(let name): name
        }
    }

    // MARK: - Documents

    /// Fetches small documents (playlists, manifests, keys, indexes) in parallel, each whole.
    func fetchDocuments(_ requests: [SegmentFetcher.Request], _ fetcher: SegmentFetcher) throws(DownloadError) -> [SegmentFetcher.Body] {
        var bodies = [SegmentFetcher.Body?](repeating: nil, count: requests.count)
        // Documents are small: each is asked for whole.
        var plan = SegmentFetchPlan(count: requests.count, connections: min(8, options.connections), pieceSize: nil, retry: retryPolicy)
        let result = fetcher.run(requests, plan: &plan) { index, body in
            bodies[index] = body
            return nil
        }
        // A document is not a segment: its failure reads as a file's would (HTTP 404, exit 5), not as
        // "segment unavailable", which --skip-unavailable cannot help.
        guard case .failure(.segmentUnavailable(let failed, let reason)) = result else {
            try result.get()
            return bodies.map { $0! }
        }
        switch requests.firstIndex(where: { $0.url == failed }).flatMap({ fetcher.lastFailures[$0] }) {
        case .status(let status, _)?: throw .httpStatus(status, url: failed)
        case .transfer(let kind, _)? where kind == .unresolved || kind == .notConnected:
            throw .connectFailed("\(failed): \(reason)")
        case .invalid?: throw .badResponse("\(failed): \(reason)")
        default: throw .transferFailed("\(failed): \(reason)")
        }
    }

    var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: options.retries, maxRetryAfter: options.maxRetryWait) }

    func readCatalog(_ fetcher: SegmentFetcher) throws -> StreamCatalog {
        let body = try fetchDocuments([SegmentFetcher.Request(url: url, limit: Self.documentLimit)], fetcher)[0]
        guard let finalURL = URL(string: body.finalURL) else { throw DownloadError.badURL(body.finalURL) }
        do {
            return try StreamDocument.catalog(body.bytes, url: finalURL, contentType: body.contentType)
        } catch {
            throw DownloadError.badResponse("\(url): \(error.description)")
        }
    }

    /// Each track's segments: from the document, or by reading its media playlist or its `sidx` index.
    func segmentLists(of tracks: [StreamTrack], _ fetcher: SegmentFetcher) throws -> [SegmentList?] {
        var requests: [SegmentFetcher.Request] = []
        var asked: [Int: Int] = [:]
        for (index, track) in tracks.enumerated() {
            switch track.segments {
            case .playlist(let url):
                asked[index] = requests.count
                requests.append(SegmentFetcher.Request(url: url.absoluteString, limit: Self.documentLimit))
            case .indexed(let url, _, let indexRange):
                asked[index] = requests.count
                requests.append(SegmentFetcher.Request(url: url.absoluteString, range: indexRange, limit: Self.documentLimit))
            case .list, .none: continue
            }
        }
        let bodies = try fetchDocuments(requests, fetcher)
        return try tracks.enumerated().map { (index, track) throws -> SegmentList? in
            switch track.segments {
            case .list(let list): return list
            case .none: return nil
            case .playlist(let url), .indexed(let url, _, _):
                let body = bodies[asked[index]!]
                do throws(StreamParseError) {
                    return try StreamDocument.segments(of: track, body: body.bytes, url: URL(string: body.finalURL) ?? url)
                } catch {
                    throw DownloadError.badResponse("\(url.absoluteString): \(error.description)")
                }
            }
        }
    }

    // MARK: - Segments

    var elapsed: Double { started.secondsAgo }

    /// Fetches AES-128 keys; each must be 16 bytes. Keys stay in memory, never on disk.
    func fetchKeys(_ urls: [URL], _ fetcher: SegmentFetcher) throws(DownloadError) -> [URL: [UInt8]] {
        let bodies = try fetchDocuments(urls.map { SegmentFetcher.Request(url: $0.absoluteString, limit: 1024) }, fetcher)
        var keys: [URL: [UInt8]] = [:]
        for (url, body) in zip(urls, bodies) {
            guard body.bytes.count == 16 else {
                throw .badResponse("the key at \(url.absoluteString) has \(body.bytes.count) bytes, not 16")
            }
            keys[url] = body.bytes
        }
        return keys
    }
}
