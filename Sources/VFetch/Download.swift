import Foundation
import Synchronization
import VFetchContainers
import VFetchCore
import VFetchEngine
import VFetchMedia
import VFetchStreams

/// A download of any URL into one file: a plain file over many connections, or an HLS playlist or
/// DASH manifest whose chosen tracks (`DownloadOptions.format`) are fetched segment by segment in
/// parallel and remuxed, without re-encoding, into one file (its extension picks MP4, MKV or TS).
///
/// ```swift
/// let download = Download(url: "https://example.com/movie.m3u8", to: .file("movie.mp4"))
/// Task { for await event in download.events { print(event) } }
/// let summary = try await download.run()
/// ```
///
/// Both kinds resume where an interrupted run stopped, and both end in `DownloadEvent.finished`.
public final class Download: Sendable {
    /// The URL asked for: it stays the download's identity across redirects and runs.
    public let url: String
    /// Where the file goes: a path, or a directory in which the server's or the URL's name is used.
    public let destination: Destination
    /// Connections, retries, headers, the stream format and the rest.
    public let options: DownloadOptions
    /// Progress, notices and the summary, as they happen; ends when `run()` returns.
    public let events: AsyncStream<DownloadEvent>
    private let continuation: AsyncStream<DownloadEvent>.Continuation
    /// The part running now, for `cancel()` and `pause()`; `cancelled` and `paused` stop a part that has yet
    /// to start, and `run()` waits in `resumed` while paused.
    private let running = Mutex(Control())

    private struct Control {
        var part: Part?
        var cancelled = false
        var paused = false
        /// A pause stopped the part running: its `interrupted` is not the download's end.
        var partStoppedByPause = false
        var resumed: CheckedContinuation<Void, Never>?

        mutating func takePartStoppedByPause() -> Bool {
            defer { partStoppedByPause = false }
            return partStoppedByPause && !cancelled
        }
    }

    private enum Part {
        case file(FileDownload)
        case stream(StreamDownload)

        func cancel() {
            switch self {
            case .file(let download): download.cancel()
            case .stream(let download): download.cancel()
            }
        }
    }

    /// A download of `url` into `destination`; nothing happens until ``run()``.
    public init(url: String, to destination: Destination, options: DownloadOptions = DownloadOptions()) {
        self.url = url
        self.destination = destination
        self.options = options
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Downloads the URL; call once. A file whose finished copy is already at the output throws
    /// `DownloadError.alreadyComplete`, as a stream's saved output does.
    public func run() async throws(DownloadError) -> DownloadSummary {
        defer { continuation.finish() }
        let result = await withTaskCancellationHandler { () async -> Result<DownloadSummary, DownloadError> in
            while true {
                do throws(DownloadError) {
                    return .success(try await runFileOrStream())
                } catch .interrupted where running.withLock({ $0.takePartStoppedByPause() }) {
                    // Paused: what was saved stays; the same download goes on from it once resumed.
                    continuation.yield(.notice("paused"))
                    await untilResumed()
                    if running.withLock({ $0.cancelled }) { return .failure(.interrupted) }
                } catch {
                    return .failure(error)
                }
            }
        } onCancel: {
            cancel()
        }
        return try result.get()
    }

    private func runFileOrStream() async throws(DownloadError) -> DownloadSummary {
        if case .descriptor(let descriptor) = destination { return try await runWriting(to: descriptor) }
        var fileOptions = options
        fileOptions.detectsStreams = true
        var destination = destination
        try Self.makeDirectory(of: destination)
        if options.continuePartialFile, !options.overwrite, let (path, prefix) = try await adoptPartialFile() {
            destination = .file(path)
            fileOptions.adoptedPrefix = prefix
        }
        let file = FileDownload(url: url, to: destination, options: fileOptions)
        do {
            return try await run(.file(file), events: file.events) { () async throws(DownloadError) in try await file.run() }
        } catch .segmentedStream {
            return try await runStream()
        } catch .metalink {
            return try await runMetalink()
        }
    }

    /// As aria2c and wget: a destination directory is made, and those above it (`get -d`, the queue and a
    /// Metalink file's download alike).
    static func makeDirectory(of destination: Destination) throws(DownloadError) {
        guard case .directory(let directory) = destination else { return }
        do throws(Errno) { try FileSystem.makeDirectories(directory) } catch {
            throw .outputNotWritable("\(directory): \(error)")
        }
    }

    /// Stops the download; `run()` then throws `DownloadError.interrupted` and what was saved stays
    /// for the next run.
    public func cancel() {
        let (part, resumed) = running.withLock { running in
            running.cancelled = true
            defer { running.resumed = nil }
            return (running.part, running.resumed)
        }
        part?.cancel()
        resumed?.resume()
    }

    /// Stops the transfers, keeping what was saved, as URLSession's `suspend()`: `run()` does not return
    /// but waits for ``resume()`` and then goes on from the saved bytes (a stream from its kept segments).
    /// The event `notice("paused")` says the transfers have stopped. A stream's remux, once begun, is not
    /// paused.
    public func pause() {
        if case .descriptor = destination { return }  // what was written to it cannot be taken back to go on
        let part = running.withLock { running in
            guard !running.cancelled else { return nil as Part? }
            running.paused = true
            running.partStoppedByPause = true
            return running.part
        }
        part?.cancel()
    }

    /// Goes on after ``pause()``.
    public func resume() {
        let resumed = running.withLock { running in
            running.paused = false
            defer { running.resumed = nil }
            return running.resumed
        }
        resumed?.resume()
    }

    /// Returns once resumed (or cancelled).
    private func untilResumed() async {
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            let waits = running.withLock { running in
                guard running.paused, !running.cancelled else { return false }
                running.resumed = resumed
                return true
            }
            if !waits { resumed.resume() }
        }
    }

    /// Makes a partial file another program left at the output (as `wget -c` finds it) the `NAME.part`
    /// of this download, once the remote file's last 64 KiB before its end are its own: another file, or
    /// a changed one, is never continued. Nil when there is no such file, or the server has no ranges.
    private func adoptPartialFile() async throws(DownloadError) -> (path: String, prefix: Int64)? {
        // As wget names it: after the URL.
        let path = destination.path { FileName.choose(url: self.url, suggested: nil) }
        let sides = SideFiles(output: path)
        guard !FileSystem.exists(sides.part), !FileSystem.exists(sides.manifest),
            let status = try? FileSystem.status(at: path), status.kind == .regular, status.size > 0
        else { return nil }
        let size = status.size
        let tail = max(0, size - (64 << 10))..<size
        let (url, options) = (url, options)
        let fetched = await onOwnThread(named: "vfetch-probe") { () -> Result<(length: Int64?, bytes: [UInt8]?), DownloadError> in
            do throws(DownloadError) {
                let fetcher = try RangeFetcher(url: url, options: options)
                try fetcher.fetch(0..<1)  // the first answer, from 0, says what the file is
                try fetcher.fetch(tail)
                return .success((fetcher.length, fetcher.read(tail.lowerBound, tail.count)))
            } catch {
                return .failure(error)
            }
        }
        let (length, remoteBytes) = try fetched.get()
        guard let length, let remoteBytes else {
            continuation.yield(.notice("the server does not serve byte ranges: \(path) cannot be continued"))
            return nil
        }
        guard size <= length, let localBytes = try? FileSystem.contents(at: path, range: tail), localBytes == remoteBytes else {
            throw .remoteChanged("\(path) is not the start of this remote file (its last bytes differ): --force downloads it anew")
        }
        if size == length { throw .alreadyComplete(path) }
        do { try FileSystem.rename(path, to: sides.part) } catch { throw .forOutput(FileSystemError(error, path: path)) }
        continuation.yield(.notice("continuing \(path) from the \(size) bytes another program saved"))
        return (path, size)
    }

    /// Where a stream's remuxed file goes: the destination's path, or a name from the playlist's URL.
    var streamOutput: String { destination.path { FileName.forStream(url: url) } }

    /// Fetches the stream's segments into the output's parts folder, then remuxes them into the output.
    private func runStream() async throws(DownloadError) -> DownloadSummary {
        let named = streamOutput
        let output =
            FileSystem.exists(named) && !options.overwrite && options.existingOutput == .rename ? FileSystem.freeName(for: named) : named
        guard OutputContainer(path: output) != nil else {
            throw .formatUnavailable("cannot save a stream as \(output): its name must end in \(OutputContainer.extensions)")
        }
        if FileSystem.exists(output), !options.overwrite {
            // As yt-dlp: a stream saved before is not fetched again (`overwrite` fetches it anew).
            guard FileSystem.exists(SideFiles(output: output).segments) else { throw .alreadyComplete(output) }
            throw .outputExists(output)
        }
        continuation.yield(.started(.stream(url: url, outputPath: output)))
        let stream = StreamDownload(
            url: url, output: output, options: options, format: options.format, skipUnavailable: options.skipUnavailableSegments)
        let fetched = try await run(.stream(stream), events: stream.events) { () async throws(DownloadError) in try await stream.run() }
        let saved = try StreamDownload.joiningSubtitles(of: fetched)
        let inside = OutputContainer(path: output)?.holdsSubtitles ?? true
        var tracks: [RemuxTrack] = []
        var beside: [StreamDownloadSummary.Track] = []
        for track in saved.tracks where !track.files.isEmpty {
            if track.kind == "subtitles", !inside {
                beside.append(track)
                continue
            }
            let kinds: StreamKinds = track.kind == "audio" ? .audio : track.kind == "subtitles" ? .subtitles : .all
            tracks.append(RemuxTrack(files: track.files, streams: kinds, language: track.language))
        }
        let remuxed = await onOwnThread(named: "vfetch-remux") { [tracks] in
            Result { () throws(MediaError) in try StreamRemuxer.remux(tracks: tracks, to: output) }
        }
        let start: Double
        switch remuxed {
        case .success(let seconds): start = seconds
        case .failure(let error): throw .badResponse("cannot remux the segments into \(output): \(error)")
        }
        for track in beside {
            let path = try StreamDownload.saveBeside(track, output: output, shift: -start, replacing: options.overwrite)
            continuation.yield(.notice("subtitles saved beside the video (MPEG-TS holds none): \(path)"))
        }
        if !options.keepSegments { StreamDownload.removeParts(of: fetched) }
        for gap in fetched.skipped { continuation.yield(.notice("left out (--skip-unavailable): \(gap)")) }
        let summary = DownloadSummary(
            path: output, bytes: (try? FileSystem.status(at: output).size) ?? fetched.bytes, seconds: fetched.seconds,
            connections: 0, peakConnections: 0, retries: 0, sha256: nil, resumedBytes: 0,
            stream: StreamSummary(
                segments: fetched.segments, resumedSegments: fetched.resumedSegments,
                mediaSeconds: fetched.tracks.first?.seconds ?? 0, skipped: fetched.skipped))
        continuation.yield(.finished(summary))
        return summary
    }

    /// The file in order into `descriptor` as it arrives (`Destination.descriptor`): the connections fetch it
    /// in playback order into a private temporary directory, from which its contiguous head is copied as it
    /// grows; the directory is removed at the end, whatever the end.
    private func runWriting(to descriptor: Int32) async throws(DownloadError) -> DownloadSummary {
        let copy = try OrderedCopy(to: descriptor)
        defer { copy.remove() }
        var options = options
        options.playbackOrder = true
        options.privateOutput = true
        // Nothing is resumed from a pipe: no manifest worth syncing.
        options.checkpointInterval = .infinity
        options.checkpointBytes = .max
        // A file only: a stream's remux needs its whole output before a player could read it.
        options.detectsStreams = true
        let file = FileDownload(url: url, to: .file(copy.path), options: options)
        let copying = Task { await copy.run(onFailure: { file.cancel() }) }
        let shownPath = destination.path { "" }
        let result: Result<DownloadSummary, DownloadError>
        do throws(DownloadError) {
            let relayed: @Sendable (DownloadEvent) -> DownloadEvent = { event in
                copy.observe(event)
                return event.writing(to: shownPath)
            }
            var summary = try await run(.file(file), events: file.events, relaying: relayed) { () async throws(DownloadError) in
                try await file.run()
            }
            summary.path = shownPath
            result = .success(summary)
        } catch {
            result = .failure(error)
        }
        if case .success = result { copy.finish() } else { copy.abandon() }
        if let unwritten = await copying.value { throw .outputNotWritable("\(shownPath): \(unwritten)") }
        return try result.get()
    }

    /// Reads the Metalink document the URL answered with and downloads the file it describes, as aria2c's
    /// `--follow-metalink`: into its name (in a destination directory), from its first URL with the others as
    /// mirrors, its size and SHA-256 checked. Its URLs are downloaded as they are, never followed as documents.
    private func runMetalink() async throws(DownloadError) -> DownloadSummary {
        let fetched = try await StreamDownload.document(url: url, options: options, limit: Int64(MetalinkDocument.maxBytes))
        let document: MetalinkDocument
        do { document = try MetalinkDocument.parse(fetched.bytes) } catch { throw .badResponse("\(url): \(error.description)") }
        let options = try options.following(document)
        let sources = document.urls.count == 1 ? "its URL" : "its \(document.urls.count) URLs"
        continuation.yield(.notice("\(url) is a Metalink file: downloading \(document.name) from \(sources)"))
        let file = FileDownload(url: document.urls[0], to: .file(destination.path { document.name }), options: options)
        return try await run(.file(file), events: file.events) { () async throws(DownloadError) in try await file.run() }
    }

    /// Runs one part, passing its events on, unless the download was cancelled before it began.
    private func run<Summary>(
        _ part: Part, events: AsyncStream<DownloadEvent>, relaying relayed: @escaping @Sendable (DownloadEvent) -> DownloadEvent = { $0 },
        _ body: () async throws(DownloadError) -> Summary
    ) async throws(DownloadError) -> Summary {
        let stopped = running.withLock { running in
            running.part = part
            if running.paused { running.partStoppedByPause = true }
            return running.cancelled || running.paused
        }
        if stopped { part.cancel() }
        let continuation = continuation
        let unusedFormat = options.format.map { "--format \($0) is for HLS and DASH streams; this is a plain file, saved whole" }
        let playable = options.playbackOrder && { if case .file = part { true } else { false } }() ? PlayableTracker() : nil
        let probing = Task { await playable?.run() }
        let relay = Task {
            // The file part's `finished` is this download's; a stream's comes after the remux.
            for await event in events {
                playable?.observe(event)
                let event = relayed(event)
                if case .progress(var progress) = event, let playable {
                    progress.playableTo = playable.playableTo
                    continuation.yield(.progress(progress))
                } else {
                    continuation.yield(event)
                }
                if case .started = event, case .file = part, let unusedFormat { continuation.yield(.notice(unusedFormat)) }
            }
        }
        defer {
            probing.cancel()
            running.withLock { $0.part = nil }
        }
        do {
            let summary = try await body()
            await relay.value
            return summary
        } catch {
            await relay.value
            throw error
        }
    }
}

extension DownloadEvent {
    /// The event of a download into a temporary file, as of one into `path`.
    package func writing(to path: String) -> DownloadEvent {
        switch self {
        case .started(var info):
            info.outputPath = path
            return .started(info)
        case .finished(var summary):
            summary.path = path
            return .finished(summary)
        default: return self
        }
    }
}
