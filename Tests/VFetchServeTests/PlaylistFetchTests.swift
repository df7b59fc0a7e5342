import Foundation
import Testing
import VFetchCache
import VFetchCore

@testable import VFetchEngine
@testable import VFetchServe

/// The playlist policy against simulated origins: each run performs the machine's actions as
/// `PlaylistRoute` does, on a kept copy held in memory.
@Suite struct PlaylistFetchTests {
    static let url = "http://o/v/index.m3u8"
    static let server = "http://127.0.0.1:8080/"
    static let vod =
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\"\n#EXTINF:2,\ns1.ts\n#EXTINF:2,\ns2.ts\n#EXT-X-ENDLIST\n"
    static let live = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:2,\ns7.ts\n"

    /// What a simulated origin answers a fetch, given the validators it carries.
    typealias Origin = (_ ifNoneMatch: String?, _ ifModifiedSince: String?) -> Result<FetchedDocument, DownloadError>

    /// An origin that sends `text` with these validators, and 304 to a request that names them when `honorsValidators`.
    static func origin(
        _ text: String, type: String? = "application/vnd.apple.mpegurl", etag: String? = "\"v2\"", honorsValidators: Bool = true,
        at url: String = url
    ) -> Origin {
        { ifNoneMatch, _ in
            if honorsValidators, let ifNoneMatch, ifNoneMatch == etag {
                return .success(FetchedDocument(bytes: [], finalURL: url, contentType: type, notModified: true, etag: etag))
            }
            return .success(FetchedDocument(bytes: Array(text.utf8), finalURL: url, contentType: type, etag: etag, lastModified: nil))
        }
    }

    static func failing(_ error: DownloadError) -> Origin { { _, _ in .failure(error) } }

    static func copy(
        _ text: String = vod, etag: String = "\"v1\"", lastModified: String? = "Mon, 02 Jun 2025 10:00:00 GMT"
    ) -> KeptPlaylist {
        KeptPlaylist(
            url: url, finalURL: url, contentType: "application/vnd.apple.mpegurl", etag: etag, lastModified: lastModified,
            body: Array(text.utf8))
    }

    struct Run {
        var actions: [PlaylistFetch.Action] = []
        var kept: KeptPlaylist?
        var fetches: [(options: DownloadOptions, ifNoneMatch: String?, ifModifiedSince: String?)] = []
        var result: Result<PlaylistFetch.Answer, OriginFailure>?

        var answer: PlaylistFetch.Answer? { if case .success(let answer) = result { answer } else { nil } }
        var failure: OriginFailure? { if case .failure(let failure) = result { failure } else { nil } }
        var text: String { String(decoding: answer?.body ?? [], as: UTF8.self) }
    }

    func run(
        _ requester: RequestGate.Requester = .player, url: String = Self.url, kept: KeptPlaylist? = nil,
        options: DownloadOptions = DownloadOptions(), origin: Origin
    ) -> Run {
        var machine = PlaylistFetch(url: url, requester: requester, server: Self.server, options: options)
        var run = Run(kept: kept)
        var pending = machine.start()
        while !pending.isEmpty, run.result == nil {
            let action = pending.removeFirst()
            run.actions.append(action)
            switch action {
            case .readKeptCopy: pending += machine.keptCopyRead(run.kept)
            case .fetch(let options, let ifNoneMatch, let ifModifiedSince):
                run.fetches.append((options, ifNoneMatch, ifModifiedSince))
                switch origin(ifNoneMatch, ifModifiedSince) {
                case .success(let document): pending += machine.fetched(document)
                case .failure(let error): pending += machine.fetchFailed(error)
                }
            case .keep(let playlist): run.kept = playlist
            case .forgetKeptCopy: run.kept = nil
            case .touchKeptCopy, .log, .learn, .learnManifest: break
            case .answer(let answer): run.result = .success(answer)
            case .fail(let failure): run.result = .failure(failure)
            }
        }
        #expect(pending.isEmpty, "nothing after the answer")
        return run
    }

    /// `url` as the machine links it: root-relative, percent-encoded but for RFC 3986's unreserved characters.
    func linked(_ url: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return "/media?url=" + (url.addingPercentEncoding(withAllowedCharacters: unreserved) ?? url)
    }

    @Test func aPlayersFirstReadFetchesWithFewRetriesKeepsTheCopyAndLinksThroughServe() throws {
        let run = run(origin: Self.origin(Self.vod))
        #expect(run.actions.first == .readKeptCopy)
        let fetch = try #require(run.fetches.first)
        #expect(run.fetches.count == 1 && fetch.options.retries == 2 && !fetch.options.publicAddressesOnly)
        #expect(fetch.ifNoneMatch == nil && fetch.ifModifiedSince == nil)
        #expect(run.answer?.contentType == "application/vnd.apple.mpegurl" && run.answer?.cacheControl == "no-cache")
        #expect(run.text.contains(linked("http://o/v/s1.ts") + "\n"), "\(run.text)")
        #expect(run.text.contains("URI=\"" + linked("http://o/v/k.bin") + "&kind=key\""), "\(run.text)")
        #expect(run.kept?.body == Array(Self.vod.utf8) && run.kept?.facts.etag == "\"v2\"")
        #expect(run.actions.contains(.learn(segments: ["http://o/v/s1.ts", "http://o/v/s2.ts"], variants: [])))
        #expect(!run.actions.contains(.touchKeptCopy))
    }

    @Test func withACopyTheFetchIsConditionalAndQuickAndA304AnswersTheCopy() throws {
        var options = DownloadOptions()
        (options.connectTimeout, options.stallTimeout) = (30, 60)
        let run = run(kept: Self.copy(etag: "\"v2\""), options: options, origin: Self.origin("never sent"))
        let fetch = try #require(run.fetches.first)
        #expect(fetch.options.retries == 0 && fetch.options.connectTimeout == 5 && fetch.options.stallTimeout == 10)
        #expect(fetch.ifNoneMatch == "\"v2\"" && fetch.ifModifiedSince == "Mon, 02 Jun 2025 10:00:00 GMT")
        #expect(run.text.contains(linked("http://o/v/s2.ts")))
        #expect(run.actions.contains(.touchKeptCopy) && run.kept == Self.copy(etag: "\"v2\""))
    }

    @Test(arguments: [DownloadError.connectFailed("refused"), .transferFailed("reset")])
    func anOriginOutOfReachIsAnsweredWithThePlayersCopy(error: DownloadError) throws {
        let offline = run(kept: Self.copy(), origin: Self.failing(error))
        #expect(offline.text.contains(linked("http://o/v/s1.ts")))
        #expect(offline.actions.contains { if case .log(let line) = $0 { line.contains("answering the copy kept") } else { false } })
        #expect(offline.actions.contains(.touchKeptCopy) && offline.kept == Self.copy())
        // Without a copy: the origin's failure, with the exit code `get` gives for it.
        let none = run(origin: Self.failing(error))
        #expect(none.failure == OriginFailure("origin: \(error)", exitStatus: ExitStatus(error).rawValue))
        // A web page's request never reads the player's copy (perhaps of a private address), nor writes one.
        let page = run(.page, kept: Self.copy(), origin: Self.failing(error))
        #expect(!page.actions.contains(.readKeptCopy) && page.failure != nil && page.kept == Self.copy())
        let fetch = try #require(page.fetches.first)
        #expect(fetch.options.publicAddressesOnly && fetch.options.retries == 2 && fetch.ifNoneMatch == nil)
        if case .connectFailed = error { #expect(page.failure?.message.contains("reaches only public addresses") == true) }
    }

    @Test func aPagesAnswerIsNeverKept() {
        let run = run(.page, origin: Self.origin(Self.vod))
        #expect(run.answer != nil && run.kept == nil)
        #expect(!run.actions.contains { if case .keep = $0 { true } else { false } })
    }

    @Test(arguments: [404, 410])
    func anOriginSayingGoneDropsTheCopy(status: Int) {
        let run = run(kept: Self.copy(), origin: Self.failing(.httpStatus(status, url: Self.url)))
        #expect(run.kept == nil && run.actions.contains(.forgetKeptCopy))
        #expect(run.failure?.exitStatus == ExitStatus(.httpStatus(status, url: Self.url)).rawValue)
    }

    @Test func otherErrorsLeaveTheCopyAndRetriesBelowTwoStay() throws {
        let run = run(kept: Self.copy(), origin: Self.failing(.httpStatus(500, url: Self.url)))
        #expect(run.kept == Self.copy() && run.failure?.message.contains("HTTP 500") == true)
        var options = DownloadOptions()
        options.retries = 0
        let fetch = try #require(self.run(options: options, origin: Self.origin(Self.vod)).fetches.first)
        #expect(fetch.options.retries == 0)
    }

    @Test func aLiveDocumentIsNeverKeptAndDropsTheCopy() {
        let run = run(kept: Self.copy(), origin: Self.origin(Self.live))
        #expect(run.answer?.cacheControl == "no-store" && run.text.contains(linked("http://o/v/s7.ts")))
        #expect(run.kept == nil && run.actions.contains(.forgetKeptCopy))
    }

    @Test func theSameBytesAgainAreATouchNotAWrite() {
        let copy = Self.copy(etag: "\"v2\"", lastModified: nil)
        let same = run(kept: copy, origin: Self.origin(Self.vod, honorsValidators: false))
        #expect(same.actions.contains(.touchKeptCopy) && !same.actions.contains { if case .keep = $0 { true } else { false } })
        let changed = Self.vod.replacingOccurrences(of: "s2.ts", with: "s3.ts")
        let other = run(kept: copy, origin: Self.origin(changed, honorsValidators: false))
        #expect(other.kept?.body == Array(changed.utf8) && !other.actions.contains(.touchKeptCopy))
    }

    @Test func whatIsNoPlaylistIsA502AndNeverKept() {
        let page = run(origin: Self.origin("<html>login</html>", type: "text/html"))
        #expect(page.failure == OriginFailure("the origin answered text/html, neither an HLS playlist nor a DASH manifest"))
        #expect(page.kept == nil)
        let broken = run(kept: Self.copy(), origin: Self.origin("not a playlist"))
        #expect(broken.failure?.message.contains("#EXTM3U") == true && broken.failure?.exitStatus == nil)
        #expect(broken.kept == Self.copy())
        let unasked = run(origin: { _, _ in .success(FetchedDocument(bytes: [], finalURL: Self.url, notModified: true)) })
        #expect(unasked.failure == OriginFailure("the origin answered 304 Not Modified to a request without validators"))
    }

    /// `/stream`, the old name of `/media`, is this server's too.
    @Test(arguments: ["media", "stream"])
    func aLinkThroughThisServerIsNotWrappedAgainButItsOtherPathsAre(_ path: String) {
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(Self.server)\(path)?url=x\n#EXTINF:2,\n\(Self.server)status\n#EXT-X-ENDLIST\n"
        let run = run(origin: Self.origin(text))
        #expect(run.text.contains("\n\(Self.server)\(path)?url=x\n"))
        #expect(run.text.contains(linked(Self.server + "status")))
    }

    @Test func aStaticMPDTellsTheLookaheadItsRepresentations() throws {
        let mpd = """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S" minBufferTime="PT2S">
            <Period><AdaptationSet mimeType="video/mp4"><Representation id="v1" bandwidth="1000" codecs="avc1.4d401f">
            <SegmentList duration="2" timescale="1"><Initialization sourceURL="init.mp4"/>
            <SegmentURL media="s1.m4s"/><SegmentURL media="s2.m4s"/></SegmentList>
            </Representation></AdaptationSet></Period></MPD>
            """
        let url = "http://o/d/manifest.mpd"
        let run = run(url: url, origin: Self.origin(mpd, type: "application/dash+xml", at: url))
        #expect(run.answer?.contentType == "application/dash+xml" && run.text.contains(linked("http://o/d/s1.m4s")), "\(run.text)")
        let catalog = try #require(
            run.actions.lazy.compactMap { if case .learnManifest(let catalog) = $0 { catalog } else { nil } }.first)
        #expect(catalog.tracks.count == 1)
        #expect(run.kept?.body == Array(mpd.utf8))
    }
}
