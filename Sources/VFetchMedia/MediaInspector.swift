import CAVFormat
import Foundation
import VFetchContainers
import VFetchCore
import VFetchEngine

/// What `vfetch info` reports about a file, an unfinished download or a URL.
///
/// In JSON, the object `vfetch info --json` prints for media: `{"container", "duration", "bit_rate",
/// "streams", "faststart", "fragmented", "length", "downloaded", "complete", "present", "playable",
/// "needs", "fetched_bytes", "requests"}`. The fields of `info` are at the top (`streams` is `[]` and the
/// others `null` while the header is missing); byte ranges are `[start, end]` pairs with `end` exclusive,
/// time ranges `[start, end]` in seconds; a value not known is `null`. Decoding gives `info` when the
/// object holds any of its fields.
public struct MediaReport: Sendable, Equatable {
    /// nil when the header is not there yet (see `needs`).
    public var info: MediaInfo?
    /// The file's size in bytes.
    public var length: Int64
    /// The fraction of the file's bytes present locally.
    public var downloaded: Double
    /// The byte ranges present locally, sorted and merged: for an unfinished download, those its
    /// manifest records as saved, never merely the extent of its `.part` file.
    public var present: [Range<Int64>]
    /// Whether every byte of the file is present.
    public var isComplete: Bool { present == (length > 0 ? [0..<length] : []) }
    /// Time ranges playable from the present bytes, in seconds.
    public var playable: [ClosedRange<Double>]
    /// Bytes that must arrive before anything can be said (an MP4 `moov` at the end, say).
    public var needs: Range<Int64>?
    /// The short container name: that of `info`, or, while its header is missing, what the box layout
    /// already tells (an MP4).
    public var container: String?
    /// For an MP4, whether `moov` comes before `mdat`: from `info`, or from the box layout.
    public var faststart: Bool?
    /// For a URL: the bytes it took to answer.
    public var fetchedBytes: Int64?
    /// For a URL: the requests it took to answer.
    public var requests: Int?
}

/// Probes media without downloading it all: a finished file, the output of an unfinished
/// `vfetch get` (its present blocks), or a URL (its head, then just the index it needs).
public enum MediaInspector {
    /// The libavformat version vfetch was built against (its headers), e.g. `59.27.100`.
    public static let libavformatVersion =
        "\(LIBAVFORMAT_VERSION_MAJOR).\(LIBAVFORMAT_VERSION_MINOR).\(LIBAVFORMAT_VERSION_MICRO)"

    /// How much of the start of a remote file the first request asks for.
    public static let headBytes: Int64 = 512 << 10
    /// How much is fetched past an MP4's `mdat` to read the box headers there: all of a small
    /// `moov` that ends the file, or the header of a larger one, fetched exactly next.
    public static let boxHeaderBytes: Int64 = 64 << 10
    /// How much of the end of a fragmented MP4 is fetched to learn its duration: its `mfra` and
    /// last fragment, whose end is the end of the movie.
    public static let fragmentedTailBytes: Int64 = 512 << 10

    /// A finished file, or an unfinished `vfetch get`: named by its output path, its `NAME.part` or
    /// its `NAME.vfetch`. An unfinished download's present bytes are those its manifest records,
    /// and only when the manifest was written for that very part.
    public static func inspect(path: String) async throws -> MediaReport {
        if let output = unfinishedDownload(named: path) {
            return try await report(file: openPart(of: output))
        }
        // A part without its manifest (not written yet, lost, or the part copied alone): which of
        // its bytes arrived cannot be known, whatever its holes say (a copy can fill them with zeros).
        if let output = SideFiles.output(ofPart: path) ?? (FileManager.default.fileExists(atPath: path) ? nil : path),
            FileManager.default.fileExists(atPath: SideFiles(output: output).part)
        {
            let sides = SideFiles(output: output)
            throw DownloadError.badManifest("\(sides.manifest) is missing, so which bytes of \(sides.part) were saved cannot be known")
        }
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber else {
            throw DownloadError.noDownload(path)
        }
        return try await report(file: PartialFile(path: path, length: size.int64Value, present: [0..<size.int64Value]))
    }

    /// The part of the unfinished download to `output`, with the bytes its manifest records as
    /// present, once the manifest is known to vouch for that part.
    private static func openPart(of output: String) throws -> PartialFile {
        let partial = try PartialDownload(outputPath: output)
        let sides = SideFiles(output: output)
        let descriptor: Int32
        do {
            descriptor = try FileSystem.open(sides.part, .read, followingLinks: true)
        } catch {
            throw DownloadError.badManifest("\(sides.manifest) has no part to vouch for: \(error)")
        }
        // The file owns the descriptor from here on, and closes it whatever happens next.
        let file = PartialFile(descriptor: descriptor, path: sides.part, length: partial.length, present: partial.presentRanges)
        if let reason = partial.reasonNotToTrust(partAt: descriptor) {
            throw DownloadError.badManifest("\(sides.manifest) cannot vouch for \(sides.part): \(reason)")
        }
        return file
    }

    /// The output path of the unfinished download `path` names (the output path itself, its
    /// `NAME.part` or its `NAME.vfetch`), when that download's manifest is there.
    package static func unfinishedDownload(named path: String) -> String? {
        let candidates = [path] + (SideFiles.output(ofSideFile: path).map { [$0] } ?? [])
        return candidates.first { FileManager.default.fileExists(atPath: SideFiles(output: $0).manifest) }
    }

    /// A remote file: fetches the head, then only the index it needs, exactly where the container says
    /// (`ContainerIndex`, the lookup playback uses: an MP4 `moov` wherever it is, a fragmented MP4's
    /// `mfra`, a Matroska file's `Cues`), or the tail of other containers; at most three requests in all.
    public static func inspect(url: String, options: DownloadOptions = DownloadOptions()) async throws -> MediaReport {
        let fetcher = try RangeFetcher(url: url, options: options)
        try await onThread { try fetcher.fetch(0..<headBytes) }
        guard let length = fetcher.length else { throw DownloadError.badResponse("the server does not say the length") }
        if MP4Boxes.hasFragments(MP4Boxes.scan(length: length, read: fetcher.read).boxes) {
            // A fragmented MP4's duration is in its last fragment, beside the mfra that ends the file.
            try await fetchMissing(max(0, length - fragmentedTailBytes)..<length, with: fetcher)
        }
        var located = false
        lookup: for _ in 0..<3 {
            switch ContainerIndex.locate(length: length, read: fetcher.read) {
            case .range(let index):
                try await fetchMissing(index, with: fetcher)
                located = true
                break lookup
            case .headerAt(let offset):
                // The header there, and all of a small index that starts with it.
                try await fetchMissing(offset..<min(length, offset + boxHeaderBytes), with: fetcher)
            case .none, .unknown, .damaged:
                break lookup
            }
        }
        if MP4Boxes.looksLikeMP4(MP4Boxes.scan(length: length, read: fetcher.read).boxes) {
            if located, MP4Boxes.movieDuration(length: length, read: fetcher.read) == .unknown {
                try await fetchMissing(max(0, length - fragmentedTailBytes)..<length, with: fetcher)
            }
        } else if !located, length > headBytes {
            try await fetchMissing((length - headBytes)..<length, with: fetcher)
        }
        var report = try await self.report(file: localCopy(of: fetcher, length: length))
        if let needs = report.needs, fetcher.requests < 3, needs.count <= 16 << 20 {
            try await fetchMissing(needs, with: fetcher)
            report = try await self.report(file: localCopy(of: fetcher, length: length))
        }
        report.fetchedBytes = fetcher.bytesFetched
        report.requests = fetcher.requests
        return report
    }

    private static func fetchMissing(_ range: Range<Int64>, with fetcher: RangeFetcher) async throws {
        for gap in ByteRangeSet(fetcher.present).gaps(in: range) {
            try await onThread { try fetcher.fetch(gap) }
        }
    }

    /// What the fetcher has so far, read through a descriptor of its own: the copy has no name.
    private static func localCopy(of fetcher: RangeFetcher, length: Int64) throws -> PartialFile {
        let descriptor = fetcher.duplicateDescriptor()
        guard descriptor >= 0 else { throw DownloadError.transferFailed("cannot read the fetched bytes") }
        return PartialFile(descriptor: descriptor, path: fetcher.url, length: length, present: fetcher.present)
    }

    private static func report(file: PartialFile) async throws -> MediaReport {
        let (length, present) = (file.length, file.present)
        let have = ByteRangeSet(present).count
        var report = MediaReport(
            info: nil, length: length, downloaded: length > 0 ? Double(have) / Double(length) : 1,
            present: ByteRangeSet(present).ranges, playable: [])
        do {
            let (info, playable) = try await probeMedia(file: file)
            report.info = info
            report.playable = playable
            report.container = info.container
            report.faststart = info.faststart
        } catch .needsBytes(let range) {
            report.needs = range
            // No header yet, but the box walk tells an MP4, and whether its `moov` comes first.
            let boxes = MP4Boxes.scan(length: length) { file.bytes(at: $0, count: $1) }.boxes
            if MP4Boxes.looksLikeMP4(boxes) {
                report.container = "mp4"
                report.faststart = MP4Boxes.isFaststart(boxes)
            }
        }
        return report
    }

    /// Runs blocking network I/O on a thread of its own, off the cooperative pool.
    private static func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await onOwnThread(named: "vfetch info") { Result { try work() } }.get()
    }
}
