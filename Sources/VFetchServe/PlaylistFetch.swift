import Foundation
import VFetchCache
import VFetchCore
import VFetchEngine
import VFetchStreams

/// How serve answers a `/media` of a playlist or a manifest, as a value: `PlaylistRoute` tells it
/// what happened (the kept copy was read, the origin answered or failed) and does what it answers
/// (read the kept copy, fetch, keep, touch or forget the copy, log, tell the lookahead, answer).
///
/// Every request fetches the document afresh, since a live playlist changes every target duration,
/// and with few retries: a player waits for the answer. The last good copy of a document that cannot
/// change (a VOD playlist, a static MPD) is kept for offline play: the next fetch is conditional (a
/// 304 answers the copy) and quick to give up, and an origin out of reach is answered with the copy.
/// A web page's request neither reads nor writes a copy: the copies are the player's, perhaps of a
/// private address. Every URI of the answer links back through `/media` on the server as the player
/// reached it, and carries only `url=`: what a plain `/media` request needs, and nothing secret.
///
/// No I/O, no clock: `StreamRewrite` and `StreamDocument` are pure.
struct PlaylistFetch {
    /// What `PlaylistRoute` does next.
    enum Action: Equatable {
        /// Read the copy kept of the URL, then tell `keptCopyRead`.
        case readKeptCopy
        /// Fetch the document whole under `options`, conditional when validators are given, then tell
        /// `fetched` or `fetchFailed`.
        case fetch(options: DownloadOptions, ifNoneMatch: String?, ifModifiedSince: String?)
        /// Keep this as the URL's copy, in place of the last.
        case keep(KeptPlaylist)
        /// The copy was answered again unchanged: a use, for the eviction order.
        case touchKeptCopy
        /// Drop the copy: the document is live now, or the origin says it is gone.
        case forgetKeptCopy
        /// A line for serve's log.
        case log(String)
        /// Tell the lookahead a media playlist's segments or a master's variants (see `SegmentLookahead`).
        case learn(segments: [String], variants: [String])
        /// Tell the lookahead a static MPD's Representations.
        case learnManifest(StreamCatalog)
        /// Answer the rewritten document: the last action.
        case answer(Answer)
        /// Answer 502: the origin failed, or sent what is no playlist. The last action.
        case fail(OriginFailure)
    }

    struct Answer: Equatable, Sendable {
        var body: [UInt8]
        var contentType: String
        var cacheControl: String
    }

    /// The URL the player asked for.
    let url: String
    let requester: RequestGate.Requester
    /// `http://HOST/`, with the `Host` the player sent (which passed the gate's check).
    let server: String
    /// The download options of the server.
    private let options: DownloadOptions
    /// The copy kept of the URL, once read.
    private var kept: KeptPlaylist?

    init(url: String, requester: RequestGate.Requester, server: String, options: DownloadOptions) {
        self.url = url
        self.requester = requester
        self.server = server
        self.options = options
    }

    /// The first actions: a page's request fetches at once, a player's reads its copy first.
    func start() -> [Action] {
        requester == .page ? [fetch] : [.readKeptCopy]
    }

    /// The kept copy, or nil when there is none (or it is damaged).
    mutating func keptCopyRead(_ copy: KeptPlaylist?) -> [Action] {
        kept = requester == .player ? copy : nil
        return [fetch]
    }

    /// The origin answered the fetch.
    mutating func fetched(_ document: FetchedDocument) -> [Action] {
        if document.notModified {
            guard let kept else { return fail("the origin answered 304 Not Modified to a request without validators") }
            return answer(kept, fresh: false)
        }
        let source = KeptPlaylist(
            url: url, finalURL: document.finalURL, contentType: document.contentType, etag: document.etag,
            lastModified: document.lastModified, body: document.bytes)
        return answer(source, fresh: true)
    }

    /// The fetch failed (retries included).
    mutating func fetchFailed(_ error: DownloadError) -> [Action] {
        let failure = OriginFailure(error, publicOnly: requester.publicOnly)
        switch error {
        case .connectFailed, .transferFailed:
            guard let kept else { return [.fail(failure)] }
            // Offline: the last good copy of a VOD playlist, which cannot have changed.
            return [.log("\(redactedURL(url)): origin: \(error); answering the copy kept in the cache")] + answer(kept, fresh: false)
        case .httpStatus(let status, _) where status == 404 || status == 410:
            // The origin says it is gone: so is the copy.
            return (kept == nil ? [] : [.forgetKeptCopy]) + [.fail(failure)]
        default:
            return [.fail(failure)]
        }
    }

    // MARK: - Deciding

    private var fetch: Action {
        var options = options
        options.publicAddressesOnly = options.publicAddressesOnly || requester.publicOnly
        // A player waits for this answer: a dead origin fails it soon rather than after minutes.
        options.retries = min(options.retries, 2)
        if kept != nil {
            // A copy to fall back on: an origin out of reach costs the player seconds, not minutes of retries.
            (options.retries, options.connectTimeout) = (0, min(options.connectTimeout, 5))
            options.stallTimeout = min(options.stallTimeout, 10)
        }
        return .fetch(options: options, ifNoneMatch: kept?.facts.etag, ifModifiedSince: kept?.facts.lastModified)
    }

    private func fail(_ message: String) -> [Action] { [.fail(OriginFailure(message))] }

    /// The answer from `source`, the origin's bytes (`fresh`) or the kept copy, and what becomes of the copy.
    private func answer(_ source: KeptPlaylist, fresh: Bool) -> [Action] {
        let facts = source.facts
        guard let final = URL(string: facts.finalURL) else { return fail("the origin redirected to a bad URL") }
        guard let format = StreamFormat.detect(contentType: facts.contentType, path: final.path, firstBytes: source.body) else {
            let type = facts.contentType ?? "no Content-Type"
            return fail("the origin answered \(type), neither an HLS playlist nor a DASH manifest")
        }
        let document: StreamRewrite.Document
        do {
            let link = linkThroughServer
            document = try StreamRewrite.rewrite(
                source.body, format: format, url: final, requested: URL(string: url), link: { link($0, "") },
                linkKey: { link($0, "&kind=key") })
        } catch {
            return fail("\(error)")
        }
        var actions: [Action] = []
        if requester == .player {
            // Only a good VOD document is kept (a live one changes; a bad one never rewrote). The same bytes
            // again (an origin that ignores If-None-Match): a touch, not a rewrite of the file and its syncs.
            if document.isLive {
                if kept != nil { actions.append(.forgetKeptCopy) }
            } else if !fresh || kept == source {
                actions.append(.touchKeptCopy)
            } else {
                actions.append(.keep(source))
            }
        }
        actions.append(.learn(segments: document.segments, variants: document.variants))
        // A static MPD's segments are told by its templates and timelines: read as `get` reads them.
        if format == .dash, !document.isLive,
            let catalog = try? StreamDocument.catalog(source.body, url: final, contentType: facts.contentType)
        {
            actions.append(.learnManifest(catalog))
        }
        // A live playlist is asked for again every target duration, and must be fresh each time.
        let cacheControl = document.isLive ? "no-store" : "no-cache"
        actions.append(.answer(Answer(body: document.bytes, contentType: document.contentType, cacheControl: cacheControl)))
        return actions
    }

    /// Links a URI (with `kind`, `&kind=key` for an AES key's) as `/media?url=`, root-relative, so
    /// a player resolves it against the address it reached the playlist by, this server's or a
    /// cache's in front of it (docs/SHARING.md). A `/media` link to this server (or one by its old
    /// name, `/stream`) already goes through it: wrapped again, each read would nest deeper. Any other
    /// of its paths is wrapped, so a playlist cannot send a player there.
    private var linkThroughServer: @Sendable (String, String) -> String {
        let own = [server + "media?", server + "stream?"]
        return { uri, kind in own.contains(where: uri.hasPrefix) ? uri : "/media?url=" + percentEncodedValue(uri) + kind }
    }
}
