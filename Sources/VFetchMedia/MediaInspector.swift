import Foundation
import VFetch
import VFetchCore

/// What `vfetch info` reports about a file, an unfinished download or a URL.
public struct MediaReport: Sendable, Equatable {
    /// nil when the header is not there yet (see `needs`).
    public var info: MediaInfo?
    public var length: Int64
    /// The fraction of the file's bytes present locally.
    public var downloaded: Double
    /// Time ranges playable from the present bytes, in seconds.
    public var playable: [ClosedRange<Double>]
    /// Bytes that must arrive before anything can be said (an MP4 `moov` at the end, say).
    public var needs: Range<Int64>?
    /// For a URL: the bytes and requests it took to answer.
    public var fetchedBytes: Int64?
    public var requests: Int?
}

/// Probes media without downloading it all: a finished file, the output of an unfinished
/// `vfetch get` (its present blocks), or a URL (its head, then just the index it needs).
public enum MediaInspector {
    /// How much of the start of a remote file the first request asks for.
    public static let headBytes: Int64 = 512 << 10

    /// A finished file, or the output path of an unfinished `vfetch get`.
    public static func inspect(path: String) async throws -> MediaReport {
        let data: String
        let length: Int64
        let present: [Range<Int64>]
        if FileManager.default.fileExists(atPath: path + ".vfetch") {
            let partial = try PartialDownload(outputPath: path)
            (data, length, present) = (path + ".part", partial.length, partial.presentRanges)
        } else {
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber else {
                throw DownloadError.noDownload(path)
            }
            (data, length, present) = (path, size.int64Value, [0..<size.int64Value])
        }
        return try await report(path: data, length: length, present: present)
    }

    /// A remote file: fetches the head, then only the index it needs (an MP4 `moov` wherever it is,
    /// or the tail of other containers), at most three requests in all.
    public static func inspect(url: String, options: DownloadOptions = DownloadOptions()) async throws -> MediaReport {
        let fetcher = try RangeFetcher(url: url, options: options)
        try await onThread { try fetcher.fetch(0..<headBytes) }
        guard let length = fetcher.length else { throw DownloadError.badResponse("the server does not say the length") }
        let layout = MP4Boxes.scan(length: length, read: fetcher.read)
        if MP4Boxes.looksLikeMP4(layout.boxes) {
            if let moov = MP4Boxes.moov(in: layout.boxes) {
                try await fetchMissing(moov.range, with: fetcher)
            } else if let next = layout.stoppedAt {
                // Past `mdat`: the rest of the file is the index (and perhaps a little more).
                try await fetchMissing(next..<length, with: fetcher)
            }
        } else if length > headBytes {
            try await fetchMissing((length - headBytes)..<length, with: fetcher)
        }
        var report = try await self.report(path: fetcher.path, length: length, present: fetcher.present)
        if let needs = report.needs, fetcher.requests < 3, needs.count <= 16 << 20 {
            try await fetchMissing(needs, with: fetcher)
            report = try await self.report(path: fetcher.path, length: length, present: fetcher.present)
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

    private static func report(path: String, length: Int64, present: [Range<Int64>]) async throws -> MediaReport {
        let have = ByteRangeSet(present).count
        var report = MediaReport(
            info: nil, length: length, downloaded: length > 0 ? Double(have) / Double(length) : 1, playable: [])
        do {
            let (info, playable) = try await probeMedia(path: path, length: length, present: present)
            report.info = info
            report.playable = playable
        } catch .needsBytes(let range) {
            report.needs = range
        }
        return report
    }

    /// Runs blocking network I/O on a thread of its own, off the cooperative pool.
    private static func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            Thread { done.resume(with: Result { try work() }) }.start()
        }
    }
}
