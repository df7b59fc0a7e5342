import Foundation

/// Events as JSON, one object each, the shapes `vfetch get --json` prints (one per line):
///
/// - `{"event": "started", "url", "final_url", "length", "accepts_ranges", "etag", "last_modified",
///   "content_type", "path", "resumed_bytes"}`
/// - a file's `{"event": "progress", "bytes", "total", "bytes_per_second", "connections", "done_ranges",
///   "seconds", "playable_to"}`
/// - a stream's `{"event": "progress", "segment", "segments_done", "segments", "media_seconds",
///   "media_seconds_total", "bytes", "bytes_per_second", "connections"}`
/// - `{"event": "notice", "message"}`
/// - `{"event": "done", "path", "bytes", "seconds", "connections", "peak_connections", "retries", "sha256",
///   "resumed_bytes", "duplicate_bytes"}`, and for a stream also `"segments", "resumed_segments",
///   "media_seconds", "skipped"`, and for a file with mirrors also `"sources": [{"url", "bytes"}, …]`
///   (`DownloadSummary.sources`)
///
/// Sizes are bytes, times seconds (to the millisecond), rates bytes per second (whole); an unknown value
/// is `null`, and `done_ranges` is `[[start, end], …]` with `end` exclusive.
extension DownloadEvent: Codable {
    private enum Keys: String, CodingKey {
        case event, message
        case url, finalURL = "final_url", length, acceptsRanges = "accepts_ranges", etag, lastModified = "last_modified"
        case contentType = "content_type", path, resumedBytes = "resumed_bytes"
        case bytes, total, bytesPerSecond = "bytes_per_second", connections, doneRanges = "done_ranges", seconds
        case playableTo = "playable_to"
        case segment, segmentsDone = "segments_done", segments, mediaSeconds = "media_seconds"
        case mediaSecondsTotal = "media_seconds_total"
        case peakConnections = "peak_connections", retries, sha256, duplicateBytes = "duplicate_bytes"
        case resumedSegments = "resumed_segments", skipped, sources
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        switch self {
        case .started(let info):
            try json.encode("started", forKey: .event)
            try json.encode(info.url, forKey: .url)
            try json.encode(info.finalURL, forKey: .finalURL)
            try json.encode(info.length, forKey: .length)
            try json.encode(info.acceptsRanges, forKey: .acceptsRanges)
            try json.encode(info.etag, forKey: .etag)
            try json.encode(info.lastModified, forKey: .lastModified)
            try json.encode(info.contentType, forKey: .contentType)
            try json.encode(info.outputPath, forKey: .path)
            try json.encode(info.resumedBytes, forKey: .resumedBytes)
        case .progress(let progress):
            try json.encode("progress", forKey: .event)
            try json.encode(progress.bytesDone, forKey: .bytes)
            try json.encode(progress.totalBytes, forKey: .total)
            try json.encode(progress.bytesPerSecond.rounded(), forKey: .bytesPerSecond)
            try json.encode(progress.activeConnections, forKey: .connections)
            try json.encode(progress.doneRanges.map { [$0.lowerBound, $0.upperBound] }, forKey: .doneRanges)
            try json.encode(milliseconds(progress.seconds), forKey: .seconds)
            try json.encode(progress.playableTo.map(milliseconds), forKey: .playableTo)
        case .streamProgress(let progress):
            try json.encode("progress", forKey: .event)
            try json.encode(progress.lastSegment, forKey: .segment)
            try json.encode(progress.segmentsDone, forKey: .segmentsDone)
            try json.encode(progress.segmentsTotal, forKey: .segments)
            try json.encode(milliseconds(progress.secondsDone), forKey: .mediaSeconds)
            try json.encode(milliseconds(progress.secondsTotal), forKey: .mediaSecondsTotal)
            try json.encode(progress.bytesDone, forKey: .bytes)
            try json.encode(progress.bytesPerSecond.rounded(), forKey: .bytesPerSecond)
            try json.encode(progress.activeConnections, forKey: .connections)
        case .notice(let message):
            try json.encode("notice", forKey: .event)
            try json.encode(message, forKey: .message)
        case .finished(let summary):
            try json.encode("done", forKey: .event)
            try json.encode(summary.path, forKey: .path)
            try json.encode(summary.bytes, forKey: .bytes)
            try json.encode(milliseconds(summary.seconds), forKey: .seconds)
            try json.encode(summary.connections, forKey: .connections)
            try json.encode(summary.peakConnections, forKey: .peakConnections)
            try json.encode(summary.retries, forKey: .retries)
            try json.encode(summary.sha256, forKey: .sha256)
            try json.encode(summary.resumedBytes, forKey: .resumedBytes)
            try json.encode(summary.duplicateBytes, forKey: .duplicateBytes)
            if let stream = summary.stream {
                try json.encode(stream.segments, forKey: .segments)
                try json.encode(stream.resumedSegments, forKey: .resumedSegments)
                try json.encode(milliseconds(stream.mediaSeconds), forKey: .mediaSeconds)
                try json.encode(stream.skipped, forKey: .skipped)
            }
            if !summary.sources.isEmpty { try json.encode(summary.sources, forKey: .sources) }
        }
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        switch try json.decode(String.self, forKey: .event) {
        case "started":
            self = .started(
                RemoteInfo(
                    url: try json.decode(String.self, forKey: .url), finalURL: try json.decode(String.self, forKey: .finalURL),
                    length: try json.decodeIfPresent(Int64.self, forKey: .length),
                    acceptsRanges: try json.decode(Bool.self, forKey: .acceptsRanges),
                    etag: try json.decodeIfPresent(String.self, forKey: .etag),
                    lastModified: try json.decodeIfPresent(String.self, forKey: .lastModified),
                    contentType: try json.decodeIfPresent(String.self, forKey: .contentType),
                    outputPath: try json.decode(String.self, forKey: .path),
                    resumedBytes: try json.decode(Int64.self, forKey: .resumedBytes)))
        case "progress" where json.contains(.segmentsDone):
            self = .streamProgress(
                StreamProgress(
                    segmentsDone: try json.decode(Int.self, forKey: .segmentsDone),
                    segmentsTotal: try json.decode(Int.self, forKey: .segments),
                    secondsDone: try json.decode(Double.self, forKey: .mediaSeconds),
                    secondsTotal: try json.decode(Double.self, forKey: .mediaSecondsTotal),
                    bytesDone: try json.decode(Int64.self, forKey: .bytes),
                    bytesPerSecond: try json.decode(Double.self, forKey: .bytesPerSecond),
                    activeConnections: try json.decode(Int.self, forKey: .connections),
                    lastSegment: try json.decodeIfPresent(Int.self, forKey: .segment)))
        case "progress":
            let ranges = try json.decodeIfPresent([[Int64]].self, forKey: .doneRanges) ?? []
            guard ranges.allSatisfy({ $0.count == 2 && $0[0] <= $0[1] }) else {
                throw DecodingError.dataCorruptedError(forKey: .doneRanges, in: json, debugDescription: "not [[start, end], …]")
            }
            self = .progress(
                DownloadProgress(
                    bytesDone: try json.decode(Int64.self, forKey: .bytes),
                    totalBytes: try json.decodeIfPresent(Int64.self, forKey: .total),
                    bytesPerSecond: try json.decode(Double.self, forKey: .bytesPerSecond),
                    activeConnections: try json.decode(Int.self, forKey: .connections), doneRanges: ranges.map { $0[0]..<$0[1] },
                    seconds: try json.decode(Double.self, forKey: .seconds),
                    playableTo: try json.decodeIfPresent(Double.self, forKey: .playableTo)))
        case "notice":
            self = .notice(try json.decode(String.self, forKey: .message))
        case "done":
            let stream =
                json.contains(.segments)
                ? StreamSummary(
                    segments: try json.decode(Int.self, forKey: .segments),
                    resumedSegments: try json.decode(Int.self, forKey: .resumedSegments),
                    mediaSeconds: try json.decode(Double.self, forKey: .mediaSeconds),
                    skipped: try json.decode([String].self, forKey: .skipped)) : nil
            self = .finished(
                DownloadSummary(
                    path: try json.decode(String.self, forKey: .path), bytes: try json.decode(Int64.self, forKey: .bytes),
                    seconds: try json.decode(Double.self, forKey: .seconds), connections: try json.decode(Int.self, forKey: .connections),
                    peakConnections: try json.decode(Int.self, forKey: .peakConnections),
                    retries: try json.decode(Int.self, forKey: .retries), sha256: try json.decodeIfPresent(String.self, forKey: .sha256),
                    resumedBytes: try json.decode(Int64.self, forKey: .resumedBytes),
                    duplicateBytes: try json.decode(Int64.self, forKey: .duplicateBytes), stream: stream,
                    sources: try json.decodeIfPresent([SourceBytes].self, forKey: .sources) ?? []))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .event, in: json, debugDescription: "no event named \(other)")
        }
    }
}

/// Seconds to the millisecond: what a reader of progress needs, without the float noise.
private func milliseconds(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
