import Foundation
import VFetchCore

/// A stream's document (an HLS playlist, a DASH manifest), fetched whole into memory.
public struct FetchedDocument: Sendable, Equatable {
    public var bytes: [UInt8]
    /// Where it was fetched from after redirects: the URIs in it resolve against this.
    public var finalURL: String
    public var contentType: String?
    /// The origin answered 304 to the validators given: `bytes` is empty, the caller's copy is current.
    public var notModified = false
    /// The validators the origin sent, for a later conditional request.
    public var etag: String?
    public var lastModified: String?
}

extension StreamDownload {
    /// Fetches a playlist or manifest whole, following redirects, under `options`' rules (addresses,
    /// headers, retries); a body over `limit` bytes or an error status fails it. With `ifNoneMatch` or
    /// `ifModifiedSince` (the validators of a copy the caller keeps) the request is conditional, and
    /// a 304 answers `notModified`.
    ///
    /// Documents are fetched afresh on every call: a live playlist changes every target duration.
    /// An origin out of reach (no name, no connection) fails with `connectFailed`, any other failure
    /// below HTTP with `transferFailed`: what a caller holding a copy may answer with it instead.
    public static func document(
        url: String, options: DownloadOptions, limit: Int64, ifNoneMatch: String? = nil, ifModifiedSince: String? = nil
    ) async throws(DownloadError) -> FetchedDocument {
        guard isFetchableURL(url) else { throw .badURL(url) }
        var conditionalOptions = options
        if let ifNoneMatch { conditionalOptions.headers.append("If-None-Match: \(ifNoneMatch)") }
        if let ifModifiedSince { conditionalOptions.headers.append("If-Modified-Since: \(ifModifiedSince)") }
        let options = conditionalOptions
        let conditional = ifNoneMatch != nil || ifModifiedSince != nil
        let signal = CancelSignal()
        let job = StreamJob(
            url: url, output: "", options: options, format: nil, skipUnavailable: false, events: nil, signal: signal)
        let result = await onOwnThread(named: "vfetch-document") {
            () -> Result<FetchedDocument, DownloadError> in
            do throws(DownloadError) {
                // A player waits on it.
                let fetcher = try SegmentFetcher(options: options, signal: signal, urgent: true)
                let request = SegmentFetcher.Request(url: url, limit: limit, acceptsNotModified: conditional)
                let body = try job.fetchDocuments([request], fetcher)[0]
                return .success(
                    FetchedDocument(
                        bytes: body.bytes, finalURL: body.finalURL, contentType: body.contentType,
                        notModified: body.notModified, etag: body.etag, lastModified: body.lastModified))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
