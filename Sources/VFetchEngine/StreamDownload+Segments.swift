import Foundation
import VFetchCore
import VFetchStreams

/// The fetches of a stream download as they accumulate: each track's init sections (where they first
/// apply) and segments, in play order, under one numbering. A live stream appends to it at every reload.
struct FetchList {
    private(set) var resources: [MediaResource] = []
    private(set) var segments: [Int: MediaSegment] = [:]
    /// The init sections (by fetch) that are encrypted.
    private var initializationEncryption: [Int: SegmentEncryption] = [:]
    /// Per track, its fetches in play order.
    private(set) var tracks: [[Int]]
    private(set) var trackSeconds: [Double]
    private var lastInit: [MediaResource?]
    private var seen: Set<MediaResource> = []

    init(trackCount: Int) {
        tracks = Array(repeating: [], count: trackCount)
        trackSeconds = Array(repeating: 0, count: trackCount)
        lastInit = Array(repeating: nil, count: trackCount)
        takenInParts = Array(repeating: [], count: trackCount)
    }

    /// LL-HLS, per track: the segments taken as parts while they were written, whose later parts are taken
    /// too, never the whole segment again.
    private var takenInParts: [Set<Int>]

    /// Adds the segments of `track` not yet in the list (a live reload repeats the ones it had), then the
    /// parts of the segment still being written.
    mutating func append(_ list: SegmentList, track: Int) throws(DownloadError) {
        for segment in list.segments {
            if takenInParts[track].contains(segment.sequence) {
                for part in segment.parts where !seen.contains(part.resource) { try add(part, track: track) }
            } else if !seen.contains(segment.resource) {
                try add(segment, track: track)
            }
        }
        for part in list.partial where !seen.contains(part.resource) {
            takenInParts[track].insert(part.sequence)
            try add(part, track: track)
        }
    }

    private mutating func add(_ segment: MediaSegment, track: Int) throws(DownloadError) {
        for case .unsupported(let name) in [segment.encryption, segment.initializationEncryption] { throw .drm(name) }
        seen.insert(segment.resource)
        if let initialization = segment.initialization, initialization != lastInit[track] {
            lastInit[track] = initialization
            if segment.initializationEncryption != .none {
                initializationEncryption[resources.count] = segment.initializationEncryption
            }
            tracks[track].append(resources.count)
            resources.append(initialization)
        }
        segments[resources.count] = segment
        tracks[track].append(resources.count)
        resources.append(segment.resource)
        trackSeconds[track] += segment.duration
    }

    /// How fetch `fetch` is encrypted, and the sequence number that is its IV when its key gives none.
    func encryption(of fetch: Int) -> (encryption: SegmentEncryption, sequence: Int) {
        if let segment = segments[fetch] { return (segment.encryption, segment.sequence) }
        return (initializationEncryption[fetch] ?? .none, 0)
    }
}

extension StreamJob {
    /// Fetches every segment of the chosen tracks into the parts folder, resuming what an earlier run kept.
    /// A live stream is recorded from its live edge until Ctrl-C, `--duration`, or its end.
    func fetchSegments(of tracks: [StreamTrack], lists: [SegmentList?], _ fetcher: SegmentFetcher) throws -> StreamDownloadSummary {
        let isLive = lists.contains { $0?.isComplete == false }
        var list = FetchList(trackCount: tracks.count)
        for (track, segments) in lists.enumerated() {
            guard var segments else { continue }
            // A live window can reach back hours: start at its live edge, as players do.
            if isLive { segments.segments = Array(segments.segments.suffix(Self.liveEdgeSegments)) }
            try list.append(segments, track: track)
        }
        guard !list.resources.isEmpty else { throw DownloadError.badResponse("the stream has no segments") }

        let parts = try StreamParts(output: output)
        let fingerprint = StreamManifest.fingerprint(of: list.resources)
        let earlier = isLive ? (kept: [], held: [:]) : parts.earlier(fingerprint: fingerprint, fetches: list.resources.count)
        if !earlier.kept.isEmpty || !earlier.held.isEmpty {
            let held = earlier.held.isEmpty ? "" : ", \(earlier.held.count) in part"
            events?.yield(.notice("resuming: \(earlier.kept.count) of \(list.resources.count) segments kept by an earlier run\(held)"))
        }
        let state = SegmentState(
            manifest: StreamManifest(
                source: url, fingerprint: fingerprint, fetches: list.resources.count, kept: earlier.kept, held: earlier.held),
            parts: parts, isLive: isLive)
        if !isLive { try parts.save(state.manifest) }
        var skipped: [String] = []
        var keys: [URL: [UInt8]] = [:]
        var fetched = 0  // fetches of the batches before
        var ended = !isLive
        var lastReload = fetcher.now
        var pacing = LiveReloadPacing(targetDuration: lists.compactMap { $0?.targetDuration }.min())
        while true {
            let batch = Array(fetched..<list.resources.count)
            let newKeys = Set(batch.compactMap { list.encryption(of: $0).encryption.keyURL }).subtracting(keys.keys)
            guard let fetchedKeys = try endingRecording(isLive, { try fetchKeys(Array(newKeys), fetcher) }) else { break }
            for (url, key) in fetchedKeys { keys[url] = key }
            switch fetchBatch(batch, of: list, keys: keys, state: state, fetcher) {
            case .failure(.interrupted) where isLive && state.writeError == nil:
                ended = true  // Ctrl-C ends a recording: what arrived is saved
            case .failure(let error): throw state.writeError ?? error
            case .success(let left): skipped += left
            }
            fetched = list.resources.count
            if let duration = options.recordDuration, list.trackSeconds[0] >= duration { ended = true }
            guard !ended, waitUntil(lastReload + pacing.interval, fetcher) else { break }
            lastReload = fetcher.now
            let reload = {
                // Segments listed in the document itself (DASH) come with the document read again.
                let inline = tracks.contains { if case .list = $0.segments { true } else { false } }
                let fresh = inline ? try self.readCatalog(fetcher).tracks : []
                let current = tracks.map { track in fresh.first { $0.id == track.id } ?? track }
                return try self.segmentLists(of: current, fetcher)
            }
            guard let reloaded = try endingRecording(isLive, reload) else { break }
            for (track, segments) in reloaded.enumerated() {
                if let segments { try list.append(segments, track: track) }
            }
            pacing.reloaded(targetDuration: reloaded.compactMap { $0?.targetDuration }.min(), changed: list.resources.count > fetched)
            ended = reloaded.allSatisfy { $0?.isComplete != false }
        }
        let kept = Set(state.manifest.kept.map(\.fetch))
        let saved = tracks.indices.map { track in
            StreamDownloadSummary.Track(
                id: tracks[track].id, kind: tracks[track].kind.rawValue, language: tracks[track].language,
                files: list.tracks[track].filter(kept.contains).map(parts.path(of:)),
                seconds: list.tracks[track].filter(kept.contains).reduce(0.0) { $0 + (list.segments[$1]?.duration ?? 0) })
        }
        return StreamDownloadSummary(
            tracks: saved, partsDirectory: parts.directory, segments: list.resources.count, resumedSegments: earlier.kept.count,
            bytes: state.bytes, seconds: elapsed, skipped: skipped)
    }

    /// What `body` answers; nil when Ctrl-C stopped it during a live recording, which then ends and is saved
    /// wherever the stop came (a playlist's reload, a key's fetch), as ffmpeg and yt-dlp keep a recording.
    func endingRecording<T>(_ isLive: Bool, _ body: () throws -> T) throws -> T? {
        do {
            return try body()
        } catch DownloadError.interrupted where isLive {
            return nil
        }
    }

    /// Segments a live recording starts with: the last few of the window, as ffmpeg and streamlink do.
    static let liveEdgeSegments = 3

    /// Sleeps until `time` on the fetcher's clock; false when the download was stopped meanwhile.
    func waitUntil(_ time: Double, _ fetcher: SegmentFetcher) -> Bool {
        while fetcher.now < time {
            if signal.isCancelled { return false }
            Thread.sleep(forTimeInterval: min(0.1, time - fetcher.now))
        }
        return !signal.isCancelled
    }

    /// Fetches `batch` (fetch numbers of `list`) in parallel; the skipped ones come back with why.
    func fetchBatch(_ batch: [Int], of list: FetchList, keys: [URL: [UInt8]], state: SegmentState, _ fetcher: SegmentFetcher)
        -> Result<[String], DownloadError>
    {
        let kept = Set(state.manifest.kept.map(\.fetch))
        var done = Set(batch.indices.filter { kept.contains(batch[$0]) })
        var requests = batch.map {
            var request = SegmentFetcher.Request(
                url: list.resources[$0].url.absoluteString, range: list.resources[$0].byteRange, limit: Self.segmentLimit,
                file: state.parts.path(of: $0))
            request.length = list.resources[$0].byteRange.map { Int64($0.count) }
            // Held bytes of a length the fetch cannot have (a damaged or hostile manifest) are not trusted.
            if let held = state.manifest.held[$0], held.length <= Self.segmentLimit, request.length ?? held.length == held.length {
                (request.held, request.length, request.validator) = (held.bytes, held.length, held.validator)
            }
            return request
        }
        let total = list.trackSeconds.first ?? 0
        let firstTrack = Set(list.tracks.first ?? [])
        func progress(lastSegment: Int?) -> DownloadEvent {
            let inFlight = fetcher.bytesInFlight
            return .streamProgress(
                StreamProgress(
                    segmentsDone: state.manifest.kept.count, segmentsTotal: list.resources.count, secondsDone: state.secondsDone,
                    secondsTotal: state.isLive ? state.secondsDone : total, bytesDone: state.bytes + inFlight,
                    bytesPerSecond: Double(state.bytes + inFlight - state.resumedBytes) / max(fetcher.now, 0.001),
                    activeConnections: fetcher.active, lastSegment: lastSegment))
        }
        let arriving: () -> Void = { _ = self.events?.yield(progress(lastSegment: nil)) }
        func deliver(_ position: Int, _ body: SegmentFetcher.Body) -> RequestFailure? {
            let fetch = batch[position]
            if let type = body.contentType?.lowercased(), type.hasPrefix("text/html") {
                return .invalid("an HTML page, not a segment")
            }
            var cipher: AES128CBC?
            if case (.aes128(let key, let iv), let sequence) = list.encryption(of: fetch) {
                guard let keyBytes = keys[key] else { return .invalid("no key") }
                do {
                    // The parser lets no negative sequence number stand for an IV.
                    cipher = try AES128CBC(key: keyBytes, iv: iv ?? AES128CBC.hlsIV(mediaSequence: UInt64(max(0, sequence))))
                } catch {
                    return .invalid("cannot decrypt with its key: \(error)")
                }
            }
            do throws(StreamParts.SealFailure) {
                let sealed = try state.parts.seal(fetch, length: body.length, decrypting: cipher)
                do throws(DownloadError) { try state.keep(fetch: fetch, size: sealed.size, tag: sealed.tag) } catch { throw .output(error) }
            } catch {
                switch error {
                case .decryption(let reason): return .invalid("cannot decrypt with its key: \(reason)")
                case .output(let error):
                    state.writeError = state.writeError ?? error
                    signal.cancel()
                    return .invalid("\(error)")
                }
            }
            if firstTrack.contains(fetch) { state.secondsDone += list.segments[fetch]?.duration ?? 0 }
            events?.yield(progress(lastSegment: fetch))
            return nil
        }
        // A fetch an earlier run held whole has nothing left to ask: it is kept now, or else fetched anew.
        for (position, request) in requests.enumerated() where !done.contains(position) {
            guard let length = request.length, request.held.count == length else { continue }
            let body = SegmentFetcher.Body(file: request.file, length: length, finalURL: request.url)
            if deliver(position, body) == nil {
                done.insert(position)
            } else {
                requests[position].held = ByteRangeSet()
                requests[position].validator = nil
                requests[position].length = list.resources[batch[position]].byteRange.map { Int64($0.count) }
            }
            if let error = state.writeError { return .failure(error) }
        }
        var plan = SegmentFetchPlan(
            count: batch.count, lengths: requests.indices.reduce(into: [:]) { $0[$1] = requests[$1].length }, done: done,
            held: requests.indices.reduce(into: [:]) { $0[$1] = requests[$1].held }, connections: options.connections,
            retry: retryPolicy, skipUnavailable: skipUnavailable)
        // A stream that cannot resume (live) records nothing of its fetches under way. Segments are small files
        // whose syncs cost little: a checkpoint at least every 2 MiB, every 512 KiB while that stays cheap.
        let checkpoints =
            state.isLive
            ? nil : CheckpointPacing(interval: options.checkpointInterval, bytes: min(options.checkpointBytes, Self.checkpointBytes))
        let hold = { (arrived: [SegmentFetcher.Arrived]) in
            do throws(DownloadError) {
                try state.hold(arrived.map { ($0.bytes.isEmpty ? nil : $0, batch[$0.request]) })
            } catch {
                state.writeError = state.writeError ?? error
                self.signal.cancel()
            }
        }
        let result = fetcher.run(requests, plan: &plan, progress: arriving, checkpoints: checkpoints, hold: hold, deliver: deliver)
        return result.map { plan.skipped.map { "\(requests[$0.fetch].url): \($0.reason)" } }
    }

    /// The most bytes of segments under way a kill may cost.
    static let checkpointBytes: Int64 = 2 << 20

    /// The largest segment taken: it goes to a file, never to memory, so only the disk bounds it.
    static let segmentLimit: Int64 = 16 << 30
}

/// What the segment stage has kept so far; recorded (for a finite stream) at every kept segment, so a
/// kill never costs a finished one. Confined to the download's thread.
final class SegmentState {
    var manifest: StreamManifest
    let parts: StreamParts
    let isLive: Bool
    let resumedBytes: Int64
    /// What an earlier run held of each fetch, counted in `bytes` from the start.
    private let resumedHeld: [Int: Int64]
    /// Bytes appended to the manifest since it was last written whole.
    private var appended = 0
    var bytes: Int64
    var secondsDone = 0.0
    var writeError: DownloadError?

    init(manifest: StreamManifest, parts: StreamParts, isLive: Bool) {
        self.manifest = manifest
        self.parts = parts
        self.isLive = isLive
        resumedHeld = manifest.held.mapValues(\.bytes.count)
        resumedBytes = manifest.kept.reduce(0) { $0 + $1.size } + resumedHeld.values.reduce(0, +)
        bytes = resumedBytes
    }

    /// Records a fetch whose file is final (`StreamParts.seal`).
    func keep(fetch: Int, size: Int64, tag: UInt32) throws(DownloadError) {
        let entry = StreamManifest.Kept(fetch: fetch, size: size, tag: tag)
        manifest.kept.append(entry)
        // What an earlier run held of it was counted from the start.
        bytes += size - (resumedHeld[fetch] ?? 0)
        manifest.held[fetch] = nil
        manifest.fetches = max(manifest.fetches, fetch + 1)
        // A live recording cannot resume (its window moves on), so it keeps no manifest.
        if !isLive { try parts.append(entry) }
    }

    /// Records what a checkpoint found of fetches still arriving (`arrived`, by fetch; nil: what was recorded of
    /// it is gone). The manifest is written whole again once such lines pass a MiB, so it grows with the
    /// segments, not with the bytes.
    func hold(_ found: [(arrived: SegmentFetcher.Arrived?, fetch: Int)]) throws(DownloadError) {
        var lines: [UInt8] = []
        for (arrived, fetch) in found {
            guard let arrived else {
                manifest.held[fetch] = nil
                lines += StreamManifest.forgetting(fetch)
                continue
            }
            let held = try parts.held(fetch: fetch, length: arrived.length, validator: arrived.validator, bytes: arrived.bytes)
            manifest.held[fetch] = held
            lines += StreamManifest.line(held)
        }
        if appended + lines.count > Self.compactAfter {
            try parts.save(manifest)
            appended = 0
        } else {
            try parts.append(lines)
            appended += lines.count
        }
    }

    private static let compactAfter = 1 << 20
}

extension SegmentEncryption {
    var keyURL: URL? { if case .aes128(let key, _) = self { key } else { nil } }
}
