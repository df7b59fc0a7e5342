import Foundation
import VFetchCore

/// A stream's document (an HLS playlist, a DASH manifest), fetched whole into memory.
public struct FetchedDocument: Sendable, Equatable {
    public var bytes: [UInt8]
    /// Where it was fetched from after redirects: the URIs in it resolve against this.
    public var finalURL: String
    public var contentType: String?
}

extension StreamDownload {
    /// Fetches a playlist or manifest whole, following redirects, under `options`' rules (addresses,
    /// headers, retries); a body over `limit` bytes or an error status fails it.
    ///
    /// Documents are fetched afresh on every call: a live playlist changes every target duration.
    public static func document(url: String, options: DownloadOptions, limit: Int64) async throws(DownloadError)
        -> FetchedDocument
    {
        guard isFetchableURL(url) else { throw .badURL(url) }
        let signal = CancelSignal()
        let job = StreamJob(
            url: url, output: "", options: options, format: nil, skipUnavailable: false, events: nil, signal: signal)
        let result = await onOwnThread(named: "vfetch-document") { () -> Result<FetchedDocument, DownloadError> in
            do throws(DownloadError) {
                let fetcher = try SegmentFetcher(options: options, signal: signal)
                let body = try job.fetchDocuments([SegmentFetcher.Request(url: url, limit: limit)], fetcher)[0]
                return .success(FetchedDocument(bytes: body.bytes, finalURL: body.finalURL, contentType: body.contentType))
            } catch {
                return .failure(error)
            }
        }
        // A document is not a segment: its failure reads as a file's would.
        if case .failure(.segmentUnavailable(let failed, let reason)) = result {
            let words = reason.split(separator: " ")
            if words.count >= 2, words[0] == "HTTP", let status = Int(words[1]) { throw .httpStatus(status, url: failed) }
            throw .transferFailed("\(failed): \(reason)")
        }
        return try result.get()
    }
}
