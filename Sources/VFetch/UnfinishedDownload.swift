import Foundation
import VFetchCore
import VFetchEngine
import VFetchMedia

/// What an unfinished download of a file has saved, from its manifest, as `vfetch status` shows it.
///
/// In JSON, the object `vfetch status --json` prints: `{"path", "url", "final_url", "length", "bytes_done",
/// "fraction", "percent", "done_ranges", "block_size", "etag", "last_modified", "content_type", "map",
/// "created"}`. `done_ranges` is `[[start, end], …]` with `end` exclusive, `created` an ISO 8601 time in UTC
/// (`2025-01-31T12:00:00Z`), and a validator the server did not send is `null`.
public struct UnfinishedDownload: Sendable, Equatable {
    /// The output path; its bytes are in `NAME.part` until the download completes.
    public var outputPath: String
    /// The URL asked for: the identity of the download.
    public var url: String
    /// Where redirects led.
    public var finalURL: String
    /// The file's size in bytes.
    public var length: Int64
    /// Bytes saved durably (complete blocks and partial ones).
    public var bytesDone: Int64
    /// The byte ranges saved, sorted and merged.
    public var doneRanges: [Range<Int64>]
    /// The bytes of one block of the manifest's bitmap.
    public var blockSize: Int64
    /// The server's `ETag`, which a resume checks.
    public var etag: String?
    /// The server's `Last-Modified`, which a resume checks.
    public var lastModified: String?
    /// The server's `Content-Type`.
    public var contentType: String?
    /// When the download started (whole seconds), kept across resumes.
    public var created: Date
    /// The saved blocks in 64 characters: █ done, ▓ half or more, ░ started, · not yet.
    public var map: String

    /// The share of the file saved, from 0 to 1 (1 for an empty file).
    public var fraction: Double { length > 0 ? Double(bytesDone) / Double(length) : 1 }

    /// ``fraction`` in percent, to one decimal.
    public var percent: Double { (fraction * 1000).rounded() / 10 }

    /// Reads the manifest of the unfinished download named by its output path, its `NAME.part` or its
    /// `NAME.vfetch`. Throws `DownloadError.noDownload` when there is none, `badManifest` when it cannot be read.
    public init(named path: String) throws(DownloadError) {
        let partial = try PartialDownload(outputPath: MediaInspector.unfinishedDownload(named: path) ?? path)
        self.init(
            outputPath: partial.outputPath, url: partial.url, finalURL: partial.finalURL, length: partial.length,
            bytesDone: partial.bytesDone, doneRanges: partial.presentRanges, blockSize: partial.blockSize, etag: partial.etag,
            lastModified: partial.lastModified, contentType: partial.contentType, created: partial.created,
            map: partial.map(width: 64))
    }

    init(
        outputPath: String, url: String, finalURL: String, length: Int64, bytesDone: Int64, doneRanges: [Range<Int64>],
        blockSize: Int64, etag: String?, lastModified: String?, contentType: String?, created: Date, map: String
    ) {
        self.outputPath = outputPath
        self.url = url
        self.finalURL = finalURL
        self.length = length
        self.bytesDone = bytesDone
        self.doneRanges = doneRanges
        self.blockSize = blockSize
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.created = created
        self.map = map
    }
}

extension UnfinishedDownload: Codable {
    private enum Keys: String, CodingKey {
        case path, url, finalURL = "final_url", length, bytesDone = "bytes_done", fraction, percent, doneRanges = "done_ranges"
        case blockSize = "block_size", etag, lastModified = "last_modified", contentType = "content_type", map, created
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(outputPath, forKey: .path)
        try json.encode(url, forKey: .url)
        try json.encode(finalURL, forKey: .finalURL)
        try json.encode(length, forKey: .length)
        try json.encode(bytesDone, forKey: .bytesDone)
        try json.encode(fraction, forKey: .fraction)
        try json.encode(percent, forKey: .percent)
        try json.encode(pairs: doneRanges, forKey: .doneRanges)
        try json.encode(blockSize, forKey: .blockSize)
        try json.encode(etag, forKey: .etag)
        try json.encode(lastModified, forKey: .lastModified)
        try json.encode(contentType, forKey: .contentType)
        try json.encode(map, forKey: .map)
        try json.encode(ISO8601DateFormatter().string(from: created), forKey: .created)
    }

    /// `fraction` and `percent` are read from `bytes_done` and `length`, not from the object.
    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        let created = try json.decode(String.self, forKey: .created)
        guard let date = ISO8601DateFormatter().date(from: created) else {
            throw DecodingError.dataCorruptedError(forKey: .created, in: json, debugDescription: "not an ISO 8601 time")
        }
        self.init(
            outputPath: try json.decode(String.self, forKey: .path), url: try json.decode(String.self, forKey: .url),
            finalURL: try json.decode(String.self, forKey: .finalURL), length: try json.decode(Int64.self, forKey: .length),
            bytesDone: try json.decode(Int64.self, forKey: .bytesDone),
            doneRanges: try json.decodePairs(Range<Int64>.self, forKey: .doneRanges),
            blockSize: try json.decode(Int64.self, forKey: .blockSize), etag: try json.decodeIfPresent(String.self, forKey: .etag),
            lastModified: try json.decodeIfPresent(String.self, forKey: .lastModified),
            contentType: try json.decodeIfPresent(String.self, forKey: .contentType), created: date,
            map: try json.decode(String.self, forKey: .map))
    }
}
