import Foundation
import Testing

@testable import VFetchStreams

/// The proxy link the tests use: the origin URL percent-encoded as serve does it.
private func link(_ url: String) -> String {
    let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    return "http://127.0.0.1:9/media?url=" + url.addingPercentEncoding(withAllowedCharacters: unreserved)!
}

private func hls(_ text: String, url: String) throws -> (text: String, isLive: Bool) {
    let document = try StreamRewrite.rewrite(Array(text.utf8), format: .hls, url: URL(string: url)!, link: link)
    return (String(decoding: document.bytes, as: UTF8.self), document.isLive)
}

private func dash(_ text: String, url: String) throws -> (text: String, isLive: Bool) {
    let document = try StreamRewrite.rewrite(Array(text.utf8), format: .dash, url: URL(string: url)!, link: link)
    return (String(decoding: document.bytes, as: UTF8.self), document.isLive)
}

@Suite struct StreamRewriteHLSTests {
    @Test func masterPlaylistLinksVariantsRenditionsAndIFrames() throws {
        let text = """
            #EXTM3U\r
            #EXT-X-INDEPENDENT-SEGMENTS\r
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="../keys/session.key"\r
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main",LANGUAGE="en",URI="audio/en.m3u8"\r
            #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"\r
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",URI="https://subs.example.org/en.m3u8?lang=en&x=1"\r
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud",SUBTITLES="subs"\r
            720p/index.m3u8\r
            #EXT-X-STREAM-INF:BANDWIDTH=2560000\r
            /abs/1080p/index.m3u8?token=a%2Fb\r
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="iframes/index.m3u8"\r

            """
        let (rewritten, isLive) = try hls(text, url: "https://cdn.example.com/vod/movie/master.m3u8")
        #expect(!isLive)
        let expected = """
            #EXTM3U\r
            #EXT-X-INDEPENDENT-SEGMENTS\r
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="\(link("https://cdn.example.com/vod/keys/session.key"))"\r
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main",LANGUAGE="en",URI="\(link("https://cdn.example.com/vod/movie/audio/en.m3u8"))"\r
            #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"\r
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",URI="\(link("https://subs.example.org/en.m3u8?lang=en&x=1"))"\r
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud",SUBTITLES="subs"\r
            \(link("https://cdn.example.com/vod/movie/720p/index.m3u8"))\r
            #EXT-X-STREAM-INF:BANDWIDTH=2560000\r
            \(link("https://cdn.example.com/abs/1080p/index.m3u8?token=a%2Fb"))\r
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="\(link("https://cdn.example.com/vod/movie/iframes/index.m3u8"))"\r

            """
        #expect(rewritten == expected)
        // Its variants (not its renditions, nor the I-frame playlist), for serve's prefetch; no segments.
        let document = try StreamRewrite.rewrite(
            Array(text.utf8), format: .hls, url: URL(string: "https://cdn.example.com/vod/movie/master.m3u8")!, link: link)
        #expect(
            document.variants == [
                "https://cdn.example.com/vod/movie/720p/index.m3u8", "https://cdn.example.com/abs/1080p/index.m3u8?token=a%2Fb",
            ])
        #expect(document.segments.isEmpty)
    }

    @Test func mediaPlaylistLinksSegmentsMapAndKeysAndKeepsByteRanges() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k?id=7",IV=0x0000000000000000000000000000002A
            #EXTINF:4.0,
            #EXT-X-BYTERANGE:10000@720
            main.mp4
            #EXTINF:4.0,title, with "quotes"
            #EXT-X-BYTERANGE:12000
            main.mp4
            # a comment about ../x.ts
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key-id",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4.0,
            http://other.example.com/seg.ts
            #EXT-X-ENDLIST
            """
        let (rewritten, isLive) = try hls(text, url: "https://cdn.example.com/vod/a/b/index.m3u8")
        #expect(!isLive)
        let expected = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="\(link("https://cdn.example.com/vod/a/b/init.mp4"))",BYTERANGE="720@0"
            #EXT-X-KEY:METHOD=AES-128,URI="\(link("https://keys.example.com/k?id=7"))",IV=0x0000000000000000000000000000002A
            #EXTINF:4.0,
            #EXT-X-BYTERANGE:10000@720
            \(link("https://cdn.example.com/vod/a/b/main.mp4"))
            #EXTINF:4.0,title, with "quotes"
            #EXT-X-BYTERANGE:12000
            \(link("https://cdn.example.com/vod/a/b/main.mp4"))
            # a comment about ../x.ts
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key-id",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4.0,
            \(link("http://other.example.com/seg.ts"))
            #EXT-X-ENDLIST
            """
        #expect(rewritten == expected)
        // The segments in play order, each file once (its byte ranges count once); no key, no init section.
        let document = try StreamRewrite.rewrite(
            Array(text.utf8), format: .hls, url: URL(string: "https://cdn.example.com/vod/a/b/index.m3u8")!, link: link)
        #expect(document.segments == ["https://cdn.example.com/vod/a/b/main.mp4", "http://other.example.com/seg.ts"])
    }

    @Test func liveMediaPlaylistIsLive() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:100\n#EXTINF:2,\n../seg100.ts\n"
        let (rewritten, isLive) = try hls(text, url: "http://live.example.com/ch/1/index.m3u8?s=9")
        #expect(isLive)
        #expect(rewritten.hasSuffix("#EXTINF:2,\n\(link("http://live.example.com/ch/seg100.ts"))\n"))
    }

    @Test func strayLinesBetweenSegmentsAreLeftOutNotLinked() throws {
        // Text no #EXTINF describes (here not even a URI): players and `get` ignore it, so serve does too.
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\nleft by the packager\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n"
        let document = try StreamRewrite.rewrite(
            Array(text.utf8), format: .hls, url: URL(string: "https://a.example/v/i.m3u8")!, link: link)
        let rewritten = String(decoding: document.bytes, as: UTF8.self)
        #expect(
            rewritten
                == "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(link("https://a.example/v/a.ts"))\n#EXTINF:2,\n"
                + "\(link("https://a.example/v/b.ts"))\n#EXT-X-ENDLIST\n")
        #expect(document.segments == ["https://a.example/v/a.ts", "https://a.example/v/b.ts"])
    }

    @Test func byteOrderMarkAndLeadingBlankLinesAreKept() throws {
        let text = "\u{FEFF}#EXTM3U\n\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8"
        let (rewritten, _) = try hls(text, url: "https://a.example/m.m3u8")
        #expect(rewritten == "\u{FEFF}#EXTM3U\n\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(link("https://a.example/v.m3u8"))")
    }

    @Test(arguments: [
        "<!DOCTYPE html><html><body>Sign in</body></html>",
        "",
        "not a playlist\n#EXTM3U\n",
    ])
    func notAPlaylistIsRefused(_ text: String) {
        #expect(throws: StreamParseError.self) { try hls(text, url: "https://a.example/m.m3u8") }
    }

    @Test func playlistListingItselfIsRefused() {
        let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nmaster.m3u8\n"
        #expect(throws: StreamParseError.self) { try hls(text, url: "https://a.example/x/master.m3u8") }
        let redirected = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nhttps://a.example/asked.m3u8\n"
        #expect(throws: StreamParseError.self) {
            try StreamRewrite.rewrite(
                Array(redirected.utf8), format: .hls, url: URL(string: "https://b.example/final.m3u8")!,
                requested: URL(string: "https://a.example/asked.m3u8")!, link: link)
        }
    }

    @Test func uriThatIsNoHTTPURLIsRefused() {
        #expect(throws: StreamParseError.self) {
            try hls("#EXTM3U\n#EXTINF:1,\nhttp://\n", url: "https://a.example/m.m3u8")
        }
    }

    @Test func hugeDocumentIsRefused() {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n"
        let line = "#EXTINF:1,\nsegment-with-a-long-name-0000000000000000000000000000000000000.ts\n"
        text += String(repeating: line, count: StreamRewrite.maximumSize / line.utf8.count + 1)
        #expect(throws: StreamParseError.self) { try hls(text, url: "https://a.example/m.m3u8") }
    }

    /// (No time limit: a timed test fails on a busy machine; speed belongs in a benchmark.)
    @Test func largeMediaPlaylistIsRewrittenWhole() throws {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
        for index in 0..<50_000 { text += "#EXTINF:2,\nseg\(index).ts\n" }
        text += "#EXT-X-ENDLIST\n"
        let (rewritten, _) = try hls(text, url: "https://a.example/v/m.m3u8")
        #expect(rewritten.contains(link("https://a.example/v/seg0.ts")))
        #expect(rewritten.contains(link("https://a.example/v/seg49999.ts")))
        #expect(rewritten.components(separatedBy: "#EXTINF:2,").count == 50_001)
    }
}

@Suite struct StreamRewriteDASHTests {
    @Test func baseURLsAtSeveralLevelsAndSegmentTemplates() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- made by hand -->
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT8S">
              <BaseURL>https://cdn.example.com/content/</BaseURL>
              <Period>
                <BaseURL>p1/</BaseURL>
                <AdaptationSet contentType="video" mimeType="video/mp4">
                  <SegmentTemplate timescale="1000" duration="4000" startNumber="1"
                    initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/seg-$Number%05d$.m4s?t=a&amp;b=c"/>
                  <Representation id="v1" bandwidth="1000000" width="640" height="360"/>
                  <Representation id="v2" bandwidth="2000000" width="1280" height="720"/>
                </AdaptationSet>
                <AdaptationSet contentType="audio" mimeType="audio/mp4">
                  <Representation id="a1" bandwidth="128000">
                    <SegmentTemplate timescale="48000" initialization="../audio/init-$Bandwidth$.mp4" media='../audio/$Time$.m4s'>
                      <SegmentTimeline><S t="0" d="192000" r="1"/></SegmentTimeline>
                    </SegmentTemplate>
                  </Representation>
                </AdaptationSet>
              </Period>
            </MPD>
            """
        let (rewritten, isLive) = try dash(text, url: "https://origin.example.com/manifests/movie.mpd")
        #expect(!isLive)
        let root = "https://cdn.example.com/content/"
        #expect(rewritten.contains("<BaseURL>\(link(root))</BaseURL>"))
        #expect(rewritten.contains("<BaseURL>\(link(root + "p1/"))</BaseURL>"))
        // `$…$` stays literal text in the link; `&` inside the value is escaped for XML.
        let video = link(root + "p1/vfetchfield0x/seg-vfetchfield1x.m4s?t=a&b=c")
            .replacingOccurrences(of: "vfetchfield0x", with: "$RepresentationID$")
            .replacingOccurrences(of: "vfetchfield1x", with: "$Number%05d$")
        #expect(rewritten.contains("media=\"\(StreamRewrite.xmlEscaped(video))\""))
        #expect(video.contains("seg-$Number%05d$.m4s%3Ft%3Da%26b%3Dc"))
        let initialization = link(root + "p1/X/init.mp4").replacingOccurrences(of: "X", with: "$RepresentationID$")
        #expect(rewritten.contains("initialization=\"\(initialization)\""))
        // `..` resolved against the Representation's base; single quotes kept.
        let audio = link(root + "audio/T.m4s").replacingOccurrences(of: "T.m4s", with: "$Time$.m4s")
        #expect(rewritten.contains("media='\(audio)'"))
        #expect(
            rewritten.contains(
                "initialization=\"\(link(root + "audio/init-X.mp4").replacingOccurrences(of: "X.mp4", with: "$Bandwidth$.mp4"))\""))
        // Everything else is as it was.
        #expect(rewritten.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- made by hand -->\n<MPD "))
        #expect(rewritten.contains("<SegmentTimeline><S t=\"0\" d=\"192000\" r=\"1\"/></SegmentTimeline>"))
        // The rewritten manifest still reads, and a player filling the template gets a serve link
        // whose url= names the origin's segment.
        let catalog = try DASHManifest.parse(Array(rewritten.utf8), url: URL(string: "http://127.0.0.1:9/media?url=x")!)
        let first = try #require(catalog.tracks.first)
        guard case .list(let list) = first.segments else { throw StreamParseError("no list") }
        let segment = try #require(list.segments.first)
        let query = URLComponents(url: segment.resource.url, resolvingAgainstBaseURL: false)?.queryItems
        #expect(query?.first?.value == root + "p1/v1/seg-00001.m4s?t=a&b=c")
    }

    @Test func segmentListAndSegmentBase() throws {
        let text = """
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" minimumUpdatePeriod="PT2S">
              <Location>https://origin.example.com/live/movie.mpd</Location>
              <Period id="1">
                <AdaptationSet mimeType="video/mp4" contentType="video">
                  <Representation id="list" bandwidth="1">
                    <BaseURL>list/</BaseURL>
                    <SegmentList duration="2">
                      <Initialization sourceURL="init.mp4"/>
                      <SegmentURL media="s1.m4s"/>
                      <SegmentURL media="/other/s2.m4s" mediaRange="0-99"/>
                    </SegmentList>
                  </Representation>
                  <Representation id="base" bandwidth="2">
                    <BaseURL><![CDATA[file one.mp4]]></BaseURL>
                    <SegmentBase indexRange="800-1000"><Initialization range="0-799"/></SegmentBase>
                  </Representation>
                </AdaptationSet>
              </Period>
            </MPD>
            """
        let (rewritten, isLive) = try dash(text, url: "https://origin.example.com/live/movie.mpd")
        #expect(isLive)
        #expect(rewritten.contains("<Location>\(link("https://origin.example.com/live/movie.mpd"))</Location>"))
        #expect(rewritten.contains("<BaseURL>\(link("https://origin.example.com/live/list/"))</BaseURL>"))
        #expect(rewritten.contains("<Initialization sourceURL=\"\(link("https://origin.example.com/live/list/init.mp4"))\"/>"))
        #expect(rewritten.contains("<SegmentURL media=\"\(link("https://origin.example.com/live/list/s1.m4s"))\"/>"))
        #expect(rewritten.contains("<SegmentURL media=\"\(link("https://origin.example.com/other/s2.m4s"))\" mediaRange=\"0-99\"/>"))
        #expect(rewritten.contains("<BaseURL>\(link("https://origin.example.com/live/file%20one.mp4"))</BaseURL>"))
        #expect(rewritten.contains("<SegmentBase indexRange=\"800-1000\"><Initialization range=\"0-799\"/></SegmentBase>"))
    }

    @Test func prefixedElementsAndAttributes() throws {
        let text = """
            <mpd:MPD xmlns:mpd="urn:mpeg:dash:schema:mpd:2011" type="static">
            <mpd:Period><mpd:AdaptationSet contentType="video"><mpd:Representation id="r" bandwidth="1">
            <mpd:BaseURL>v.mp4</mpd:BaseURL></mpd:Representation></mpd:AdaptationSet></mpd:Period></mpd:MPD>
            """
        let (rewritten, _) = try dash(text, url: "https://a.example/d/m.mpd")
        #expect(rewritten.contains("<mpd:BaseURL>\(link("https://a.example/d/v.mp4"))</mpd:BaseURL>"))
    }

    @Test func inheritedTemplateUnderOwnBaseURLIsLinkedAgainstIt() throws {
        let text = """
            <MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet contentType="video">
            <SegmentTemplate media="s$Number$.m4s" initialization="i.mp4" duration="2" timescale="1"/>
            <Representation id="a" bandwidth="1"><BaseURL>a/</BaseURL></Representation>
            <Representation id="b" bandwidth="1"><BaseURL>b/</BaseURL><SegmentTemplate initialization="own.mp4"/></Representation>
            <Representation id="c" bandwidth="1"/>
            <mpd:Representation xmlns:mpd="urn:mpeg:dash:schema:mpd:2011" id="d" bandwidth="1"><mpd:BaseURL>d/</mpd:BaseURL></mpd:Representation>
            </AdaptationSet></Period></MPD>
            """
        let (rewritten, _) = try dash(text, url: "https://o.example/m/x.mpd")
        func media(_ directory: String) -> String {
            link("https://o.example/m/\(directory)sN.m4s").replacingOccurrences(of: "sN.m4s", with: "s$Number$.m4s")
        }
        #expect(rewritten.contains("<SegmentTemplate media=\"\(media(""))\" initialization=\"\(link("https://o.example/m/i.mp4"))\""))
        #expect(
            rewritten.contains(
                "<Representation id=\"a\" bandwidth=\"1\"><SegmentTemplate media=\"\(media("a/"))\" initialization=\"\(link("https://o.example/m/a/i.mp4"))\"/><BaseURL>"
            ))
        #expect(
            rewritten.contains(
                "<SegmentTemplate initialization=\"\(link("https://o.example/m/b/own.mp4"))\" media=\"\(media("b/"))\"/>"))
        #expect(rewritten.contains("<Representation id=\"c\" bandwidth=\"1\"/>"))
        #expect(rewritten.contains("<mpd:SegmentTemplate media=\"\(media("d/"))\""))
        // Read back, each Representation's segments are serve links to its own directory.
        let catalog = try DASHManifest.parse(Array(rewritten.utf8), url: URL(string: "http://127.0.0.1:9/media?url=x")!)
        let firsts = catalog.tracks.map { track -> String? in
            guard case .list(let list) = track.segments, let first = list.segments.first else { return nil }
            return URLComponents(url: first.resource.url, resolvingAgainstBaseURL: false)?.queryItems?.first?.value
        }
        #expect(
            firsts == [
                "https://o.example/m/a/s1.m4s", "https://o.example/m/b/s1.m4s", "https://o.example/m/s1.m4s",
                "https://o.example/m/d/s1.m4s",
            ])
    }

    @Test func inheritedSegmentListUnderOwnBaseURLIsRefusedNotServedWrong() {
        let text = """
            <MPD type="static"><Period><AdaptationSet contentType="video">
            <SegmentList duration="1"><SegmentURL media="s1.m4s"/></SegmentList>
            <Representation id="a" bandwidth="1"><BaseURL>a/</BaseURL></Representation>
            </AdaptationSet></Period></MPD>
            """
        #expect(throws: StreamParseError.self) { try dash(text, url: "https://a.example/m.mpd") }
    }

    @Test(arguments: [
        "<html><body>Sign in</body></html>",
        "<?xml version=\"1.0\"?><!DOCTYPE MPD [<!ENTITY x \"y\">]><MPD><BaseURL>&x;</BaseURL></MPD>",
        "<MPD><BaseURL>a/</BaseURL>",
        "<Playlist/>",
        "<MPD><Period><BaseURL>m.mpd</BaseURL></Period></MPD>",
    ])
    func hostileManifestsAreRefused(_ text: String) {
        #expect(throws: StreamParseError.self) { try dash(text, url: "https://a.example/m.mpd") }
    }

    @Test func hugeManifestIsRefused() {
        let text = "<MPD>" + String(repeating: "<Period/>", count: StreamRewrite.maximumSize / 9 + 1) + "</MPD>"
        #expect(throws: StreamParseError.self) { try dash(text, url: "https://a.example/m.mpd") }
    }
}
