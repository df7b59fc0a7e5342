import Foundation
import Testing

@testable import VFetchStreams

/// A parse gave the other kind of playlist.
private struct UnexpectedDocument: Error, CustomStringConvertible {
    var description: String
}

private func master(_ text: String, url: String) throws -> StreamCatalog {
    let document = try HLSPlaylist.parse(text, url: try #require(URL(string: url)))
    guard case .master(let catalog) = document else { throw UnexpectedDocument(description: "\(document)") }
    return catalog
}

private func media(_ text: String, url: String = "https://cdn.example.com/vod/movie/index.m3u8") throws -> SegmentList {
    let document = try HLSPlaylist.parse(text, url: try #require(URL(string: url)))
    guard case .media(let list) = document else { throw UnexpectedDocument(description: "\(document)") }
    return list
}

private func url(_ string: String) -> URL { URL(string: string)! }

@Suite struct HLSPlaylistTests {
    // MARK: Master playlists

    /// Apple's advanced example (img_bipbop_adv_example_ts), cut to five of its variants: separate
    /// audio in three groups, a subtitle group, closed captions and I-frame variants, with the
    /// renditions listed after the variants that use them, and v5 listed once per audio group.
    static let bipbop = """
        #EXTM3U
        #EXT-X-VERSION:6
        #EXT-X-INDEPENDENT-SEGMENTS


        #EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=2168183,BANDWIDTH=2177116,CODECS="avc1.640020,mp4a.40.2",RESOLUTION=960x540,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud1",SUBTITLES="sub1"
        v5/prog_index.m3u8
        #EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=7968416,BANDWIDTH=8001098,CODECS="avc1.64002a,mp4a.40.2",RESOLUTION=1920x1080,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud1",SUBTITLES="sub1"
        v9/prog_index.m3u8
        #EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=2390686,BANDWIDTH=2399619,CODECS="avc1.640020,ac-3",RESOLUTION=960x540,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud2",SUBTITLES="sub1"
        v5/prog_index.m3u8
        #EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=561224,BANDWIDTH=571555,CODECS="avc1.640015,ec-3",RESOLUTION=480x270,FRAME-RATE=30.000,CLOSED-CAPTIONS="cc1",AUDIO="aud3",SUBTITLES="sub1"
        v2/prog_index.m3u8

        #EXT-X-I-FRAME-STREAM-INF:AVERAGE-BANDWIDTH=183689,BANDWIDTH=187492,CODECS="avc1.64002a",RESOLUTION=1920x1080,URI="v7/iframe_index.m3u8"
        #EXT-X-I-FRAME-STREAM-INF:AVERAGE-BANDWIDTH=97767,BANDWIDTH=101378,CODECS="avc1.640020",RESOLUTION=960x540,URI="v5/iframe_index.m3u8"


        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,CHANNELS="2",URI="a1/prog_index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud2",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,CHANNELS="6",URI="a2/prog_index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud3",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,CHANNELS="6",URI="a3/prog_index.m3u8"


        #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,INSTREAM-ID="CC1"


        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="sub1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,FORCED=NO,URI="s1/en/prog_index.m3u8"

        """

    @Test func appleAdvancedExampleHasVideoVariantsWithSeparateAudioAndSubtitles() throws {
        let base = "https://devstreaming-cdn.apple.com/videos/streaming/examples/img_bipbop_adv_example_ts/"
        let catalog = try master(Self.bipbop, url: base + "master.m3u8")
        #expect(catalog.format == .hls)
        #expect(catalog.isLive == false)
        #expect(catalog.duration == nil)
        #expect(
            catalog.tracks.map(\.id) == [
                "v0", "v1", "v2", "v3", "AUDIO/aud1/English", "AUDIO/aud2/English", "AUDIO/aud3/English", "SUBTITLES/sub1/English",
            ])
        #expect(
            catalog.tracks[0]
                == StreamTrack(
                    id: "v0", kind: .video, bandwidth: 2_177_116, averageBandwidth: 2_168_183, width: 960, height: 540,
                    frameRate: 60, codecs: ["avc1.640020", "mp4a.40.2"], audioGroup: "aud1", subtitleGroup: "sub1",
                    segments: .playlist(url(base + "v5/prog_index.m3u8"))
                )
        )
        #expect(
            catalog.tracks[1]
                == StreamTrack(
                    id: "v1", kind: .video, bandwidth: 8_001_098, averageBandwidth: 7_968_416, width: 1920, height: 1080,
                    frameRate: 60, codecs: ["avc1.64002a", "mp4a.40.2"], audioGroup: "aud1", subtitleGroup: "sub1",
                    segments: .playlist(url(base + "v9/prog_index.m3u8"))
                )
        )
        // The same media playlist again, paired with the 5.1 AC-3 group: a choice of its own.
        #expect(
            catalog.tracks[2]
                == StreamTrack(
                    id: "v2", kind: .video, bandwidth: 2_399_619, averageBandwidth: 2_390_686, width: 960, height: 540,
                    frameRate: 60, codecs: ["avc1.640020", "ac-3"], audioGroup: "aud2", subtitleGroup: "sub1",
                    segments: .playlist(url(base + "v5/prog_index.m3u8"))
                )
        )
        #expect(
            catalog.tracks[3]
                == StreamTrack(
                    id: "v3", kind: .video, bandwidth: 571_555, averageBandwidth: 561_224, width: 480, height: 270,
                    frameRate: 30, codecs: ["avc1.640015", "ec-3"], audioGroup: "aud3", subtitleGroup: "sub1",
                    segments: .playlist(url(base + "v2/prog_index.m3u8"))
                )
        )
        for (index, group) in ["aud1", "aud2", "aud3"].enumerated() {
            #expect(
                catalog.tracks[4 + index]
                    == StreamTrack(
                        id: "AUDIO/\(group)/English", kind: .audio, language: "en", name: "English", audioGroup: group,
                        isDefault: true, segments: .playlist(url(base + "a\(index + 1)/prog_index.m3u8"))
                    )
            )
        }
        #expect(
            catalog.tracks[7]
                == StreamTrack(
                    id: "SUBTITLES/sub1/English", kind: .subtitles, language: "en", name: "English",
                    subtitleGroup: "sub1", isDefault: true, segments: .playlist(url(base + "s1/en/prog_index.m3u8"))
                )
        )
    }

    @Test func muxStyleMasterWithSignedAbsoluteURLsIsMuxed() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:5
            #EXT-X-INDEPENDENT-SEGMENTS

            #EXT-X-STREAM-INF:BANDWIDTH=2340800,AVERAGE-BANDWIDTH=2340800,CODECS="mp4a.40.2,avc1.640020",RESOLUTION=1280x720,FRAME-RATE=29.970,CLOSED-CAPTIONS=NONE
            https://manifest-gcp-us-east1-vop1.fastly.mux.com/Ea4Wq/rendition.m3u8?cdn=fastly&expires=1700000000&rid=Ea4Wq&skid=default&signature=NjU1Z
            #EXT-X-STREAM-INF:BANDWIDTH=961200,AVERAGE-BANDWIDTH=961200,CODECS="mp4a.40.2,avc1.64001f",RESOLUTION=640x360,FRAME-RATE=29.970,CLOSED-CAPTIONS=NONE
            https://manifest-gcp-us-east1-vop1.fastly.mux.com/Xb2Qr/rendition.m3u8?cdn=fastly&expires=1700000000&rid=Xb2Qr&skid=default&signature=OTk4M
            """
        let catalog = try master(text, url: "https://stream.mux.com/a3Vf9.m3u8?token=abc")
        #expect(catalog.tracks.count == 2)
        #expect(
            catalog.tracks[0]
                == StreamTrack(
                    id: "v0", kind: .muxed, bandwidth: 2_340_800, averageBandwidth: 2_340_800, width: 1280, height: 720,
                    frameRate: 29.97, codecs: ["mp4a.40.2", "avc1.640020"],
                    segments: .playlist(
                        url(
                            "https://manifest-gcp-us-east1-vop1.fastly.mux.com/Ea4Wq/rendition.m3u8?cdn=fastly&expires=1700000000&rid=Ea4Wq&skid=default&signature=NjU1Z"
                        )
                    )
                )
        )
        #expect(catalog.tracks[1].id == "v1")
        #expect(catalog.tracks[1].height == 360)
        #expect(catalog.tracks[1].bandwidth == 961_200)
    }

    @Test func cloudflareStyleMasterPlaysVideoWithItsAudioGroup() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:6
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_audio",NAME="original",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="stream_t1a2b3.m3u8?clientBandwidthHint=10"
            #EXT-X-STREAM-INF:RESOLUTION=1920x1080,CODECS="avc1.4d4028,mp4a.40.2",BANDWIDTH=4837000,AVERAGE-BANDWIDTH=2800000,FRAME-RATE=30.000,AUDIO="group_audio"
            stream_t9f8e7.m3u8?clientBandwidthHint=10
            #EXT-X-STREAM-INF:RESOLUTION=426x240,CODECS="avc1.42c015,mp4a.40.2",BANDWIDTH=302000,AVERAGE-BANDWIDTH=250000,FRAME-RATE=30.000,AUDIO="group_audio"
            /abc123/manifest/stream_t0.m3u8
            """
        let base = "https://customer-x1y2.cloudflarestream.com/abc123/manifest/"
        let catalog = try master(text, url: base + "video.m3u8")
        #expect(
            catalog.tracks
                == [
                    StreamTrack(
                        id: "v0", kind: .video, bandwidth: 4_837_000, averageBandwidth: 2_800_000, width: 1920, height: 1080,
                        frameRate: 30, codecs: ["avc1.4d4028", "mp4a.40.2"], audioGroup: "group_audio",
                        segments: .playlist(url(base + "stream_t9f8e7.m3u8?clientBandwidthHint=10"))
                    ),
                    StreamTrack(
                        id: "v1", kind: .video, bandwidth: 302_000, averageBandwidth: 250_000, width: 426, height: 240,
                        frameRate: 30, codecs: ["avc1.42c015", "mp4a.40.2"], audioGroup: "group_audio",
                        segments: .playlist(url(base + "stream_t0.m3u8"))
                    ),
                    StreamTrack(
                        id: "AUDIO/group_audio/original", kind: .audio, language: "en", name: "original",
                        audioGroup: "group_audio", isDefault: true,
                        segments: .playlist(url(base + "stream_t1a2b3.m3u8?clientBandwidthHint=10"))
                    ),
                ]
        )
    }

    @Test func renditionsWithoutURIsLeaveTheVariantMuxedAndAudioOnlyVariantsAreAudio() throws {
        let text = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="stereo",NAME="Main",LANGUAGE="de",DEFAULT=NO
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="stereo",NAME="Main",LANGUAGE="fr"
            #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="angles",NAME="Left",URI="left.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="stereo"
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
            audio-only.m3u8
            """
        let catalog = try master(text, url: "http://example.com/live/master.m3u8")
        #expect(catalog.tracks.map(\.id) == ["v0", "v1", "AUDIO/stereo/Main"])
        #expect(catalog.tracks.map(\.kind) == [.muxed, .audio, .audio])
        #expect(catalog.tracks[0].segments == .playlist(url("http://example.com/live/low.m3u8")))
        #expect(catalog.tracks[0].width == nil)
        #expect(catalog.tracks[1].codecs == ["mp4a.40.5"])
        // The first of two renditions with one name is kept.
        #expect(catalog.tracks[2].language == "de")
        #expect(catalog.tracks[2].isDefault == false)
        #expect(catalog.tracks[2].segments == .none)
    }

    // MARK: Media playlists

    @Test func fragmentedMP4PlaylistCarriesItsInitializationSections() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:1
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MAP:URI="init-v1.mp4"
            #EXTINF:6.006,
            seg-1.m4s
            #EXTINF:6.006,
            seg-2.m4s
            #EXT-X-DISCONTINUITY
            #EXT-X-MAP:URI="/ads/init.mp4",BYTERANGE="720@0"
            #EXTINF:4.5,ad break
            /ads/ad-1.m4s
            #EXT-X-ENDLIST
            """
        let list = try media(text)
        let initV1 = MediaResource(url: url("https://cdn.example.com/vod/movie/init-v1.mp4"))
        let adInit = MediaResource(url: url("https://cdn.example.com/ads/init.mp4"), byteRange: 0..<720)
        #expect(
            list
                == SegmentList(
                    segments: [
                        MediaSegment(
                            resource: MediaResource(url: url("https://cdn.example.com/vod/movie/seg-1.m4s")), duration: 6.006,
                            sequence: 1, initialization: initV1
                        ),
                        MediaSegment(
                            resource: MediaResource(url: url("https://cdn.example.com/vod/movie/seg-2.m4s")), duration: 6.006,
                            sequence: 2, initialization: initV1
                        ),
                        MediaSegment(
                            resource: MediaResource(url: url("https://cdn.example.com/ads/ad-1.m4s")), duration: 4.5,
                            sequence: 3, initialization: adInit, discontinuity: true
                        ),
                    ],
                    isComplete: true, targetDuration: 6
                )
        )
        #expect(abs((list.duration ?? 0) - 16.512) < 1e-9)
    }

    @Test func singleFilePlaylistContinuesEachRangeAfterThePreviousOne() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXT-X-VERSION:4
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-MAP:URI="main.mp4",BYTERANGE="1210@0"
            #EXTINF:10.0,
            #EXT-X-BYTERANGE:75232@1210
            main.mp4
            #EXTINF:10.0,
            #EXT-X-BYTERANGE:82112
            main.mp4
            #EXTINF:10.0,
            #EXT-X-BYTERANGE:1000@0
            other.ts
            #EXTINF:9.5,
            #EXT-X-BYTERANGE:69864
            main.mp4
            #EXT-X-ENDLIST
            """
        let list = try media(text, url: "https://cdn.example.com/vod/movie/index.m3u8?sig=xyz")
        let main = url("https://cdn.example.com/vod/movie/main.mp4")
        #expect(
            list.segments.map(\.resource) == [
                MediaResource(url: main, byteRange: 1210..<76442),
                MediaResource(url: main, byteRange: 76442..<158_554),
                MediaResource(url: url("https://cdn.example.com/vod/movie/other.ts"), byteRange: 0..<1000),
                MediaResource(url: main, byteRange: 158_554..<228_418),
            ])
        #expect(list.segments.map(\.initialization) == Array(repeating: MediaResource(url: main, byteRange: 0..<1210), count: 4))
        #expect(list.segments.map(\.sequence) == [0, 1, 2, 3])
        #expect(list.segments.map(\.duration) == [10, 10, 10, 9.5])
        #expect(list.isComplete)
        #expect(list.targetDuration == 10)
    }

    @Test func aes128KeysHoldUntilTheNextKeyWithAndWithoutIV() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:10
            #EXT-X-MEDIA-SEQUENCE:7
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.net/k1?token=a,b",IV=0x000102030405060708090A0B0C0D0E0F
            #EXTINF:9.009,
            seg7.ts
            #EXTINF:9.009,
            seg8.ts
            #EXT-X-KEY:METHOD=AES-128,URI="key2.bin",KEYFORMAT="identity",KEYFORMATVERSIONS="1"
            #EXTINF:9.009,
            seg9.ts
            #EXT-X-KEY:METHOD=AES-128,URI="/keys/k3",IV=0x1234
            #EXTINF:9.009,
            seg10.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:3.003,
            seg11.ts
            #EXT-X-ENDLIST
            """
        let list = try media(text)
        let iv: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
        #expect(
            list.segments.map(\.encryption) == [
                .aes128(key: url("https://keys.example.net/k1?token=a,b"), iv: iv),
                .aes128(key: url("https://keys.example.net/k1?token=a,b"), iv: iv),
                .aes128(key: url("https://cdn.example.com/vod/movie/key2.bin"), iv: nil),
                .aes128(key: url("https://cdn.example.com/keys/k3"), iv: Array(repeating: 0, count: 14) + [0x12, 0x34]),
                .none,
            ])
        #expect(list.segments.map(\.sequence) == [7, 8, 9, 10, 11])
    }

    @Test func drmKeysAreUnsupportedUnlessAClearKeyIsListedBesideThem() throws {
        let widevine = """
            #EXT-X-KEY:METHOD=SAMPLE-AES-CTR,KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",KEYFORMATVERSIONS="1",URI="data:text/plain;base64,AAAAW3Bzc2gAAAAA7e+LqXnWSs6jyCfc1R0h7QAAADsIARIQ"
            #EXT-X-KEY:METHOD=SAMPLE-AES-CTR,KEYFORMAT="com.microsoft.playready",KEYFORMATVERSIONS="1",URI="data:text/plain;charset=UTF-16;base64,xAEAAAEAAQC6AT"
            """
        let fairPlay =
            #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://twelve-key-id",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1""#
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="init.mp4"
            \(widevine)
            #EXTINF:4,
            a.m4s
            \(fairPlay)
            #EXTINF:4,
            b.m4s
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="sample.key"
            #EXTINF:4,
            c.m4s
            \(fairPlay)
            #EXT-X-KEY:METHOD=AES-128,URI="clear.key"
            #EXTINF:4,
            d.ts
            """
        let list = try media(text)
        #expect(
            list.segments.map(\.encryption) == [
                .unsupported("urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"),
                .unsupported("com.apple.streamingkeydelivery"),
                .unsupported("SAMPLE-AES"),
                .aes128(key: url("https://cdn.example.com/vod/movie/clear.key"), iv: nil),
            ])
    }

    @Test func liveSlidingWindowIsIncompleteAndCountsFromItsMediaSequence() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:2680137
            #EXT-X-DISCONTINUITY-SEQUENCE:12
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
            #EXTINF:2.000,
            https://edge-01.example.tv/live/ch5/2680137.ts
            #EXTINF:2.000,
            https://edge-01.example.tv/live/ch5/2680138.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:04.000Z
            #EXTINF:1.968,
            https://edge-02.example.tv/live/ch5/2680139.ts
            """
        let list = try media(text, url: "https://live.example.tv/ch5/index.m3u8")
        #expect(list.isComplete == false)
        #expect(list.targetDuration == 2)
        #expect(list.segments.map(\.sequence) == [2_680_137, 2_680_138, 2_680_139])
        #expect(list.segments.map(\.discontinuity) == [false, false, true])
        #expect(list.segments[2].resource == MediaResource(url: url("https://edge-02.example.tv/live/ch5/2680139.ts")))

        let event = try media("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n")
        #expect(event.isComplete == false)
        let vodWithoutEndList = try media("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n")
        #expect(vodWithoutEndList.isComplete)
    }

    @Test func gapSegmentsAreLeftOutAndTheNextOneIsADiscontinuity() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:100
            #EXTINF:4,
            s100.ts
            #EXT-X-GAP
            #EXTINF:4,
            s101.ts
            #EXTINF:4,
            s102.ts
            """
        let list = try media(text)
        #expect(list.segments.map(\.resource.url.lastPathComponent) == ["s100.ts", "s102.ts"])
        #expect(list.segments.map(\.sequence) == [100, 102])
        #expect(list.segments.map(\.discontinuity) == [false, true])
    }

    @Test func crlfLineEndingsAndAByteOrderMarkReadLikePlainLines() throws {
        let plain = """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXT-X-KEY:METHOD=AES-128,URI="k.key",IV=0x00000000000000000000000000000001
            #EXTINF:10,
            #EXT-X-BYTERANGE:100@0
            a.ts
            #EXTINF:10,\ttitle with spaces  
            #EXT-X-BYTERANGE:100
            a.ts
            #EXT-X-ENDLIST
            """
        let expected = try media(plain)
        #expect(expected.segments.count == 2)
        #expect(expected.segments[1].resource.byteRange == 100..<200)
        let windows = "\u{FEFF}" + plain.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n"
        #expect(try media(windows) == expected)
        let masterText = "\u{FEFF}#EXTM3U\r\n#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=2x2\r\nlow.m3u8\r\n"
        #expect(try master(masterText, url: "https://a.example/m.m3u8").tracks[0].segments == .playlist(url("https://a.example/low.m3u8")))
    }

    @Test(arguments: [
        ("seg.ts", "https://cdn.example.com/vod/movie/seg.ts"),
        ("seg.ts?range=1&t=2", "https://cdn.example.com/vod/movie/seg.ts?range=1&t=2"),
        ("../shared/seg.ts", "https://cdn.example.com/vod/shared/seg.ts"),
        ("/root/seg.ts", "https://cdn.example.com/root/seg.ts"),
        ("//other.example.org/seg.ts", "https://other.example.org/seg.ts"),
        ("http://plain.example.org:8080/a/seg.ts", "http://plain.example.org:8080/a/seg.ts"),
        ("HTTPS://UPPER.example.org/seg.ts", "HTTPS://UPPER.example.org/seg.ts"),
    ])
    func segmentURIsResolveAgainstThePlaylistURL(uri: String, expected: String) throws {
        let list = try media(
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n\(uri)\n", url: "https://cdn.example.com/vod/movie/index.m3u8?token=abc")
        #expect(list.segments[0].resource.url.absoluteString == expected)
        #expect(list.segments[0].resource.url.baseURL == nil)
    }

    @Test func attributeListsKeepCommasInsideQuotesAndReadEachType() throws {
        let attributes = HLSAttributes(
            #"CODECS="avc1.4d401f,mp4a.40.2",BANDWIDTH=1280000, RESOLUTION=1920x1080,FRAME-RATE=23.976,IV=0x1F,DEFAULT=YES,BANDWIDTH=1,NAME="no end, quote"#
        )
        #expect(attributes["CODECS"] == "avc1.4d401f,mp4a.40.2")
        #expect(attributes.integer("BANDWIDTH") == 1_280_000)
        let resolution = try #require(attributes.resolution("RESOLUTION"))
        #expect(resolution.width == 1920 && resolution.height == 1080)
        #expect(attributes.decimal("FRAME-RATE") == 23.976)
        #expect(attributes.hexadecimal("IV", byteCount: 2) == [0x00, 0x1F])
        #expect(attributes.hexadecimal("IV", byteCount: 0) == nil)
        #expect(attributes.flag("DEFAULT"))
        #expect(attributes.flag("AUTOSELECT") == false)
        #expect(attributes["NAME"] == "no end, quote")

        let junk = HLSAttributes(#"A="x"junk,B=2,=3,N=-5,L=99999999999999999999,R=19x,F=inf,C"#)
        #expect(junk["A"] == "x")
        #expect(junk.integer("B") == 2)
        #expect(junk.integer("N") == nil)
        #expect(junk.integer("L") == nil)
        #expect(junk.resolution("R") == nil)
        #expect(junk.decimal("F") == nil)
        #expect(junk["C"] == nil)
    }

    // MARK: Errors

    @Test(arguments: [
        (
            "<!DOCTYPE html>\n<html><body>Access denied</body></html>",
            "line 1: not an HLS playlist: it does not start with #EXTM3U (it looks like an HTML or XML page)"
        ),
        ("", "line 1: not an HLS playlist: it does not start with #EXTM3U"),
        ("\n\n#EXTINF:1,\na.ts\n", "line 3: not an HLS playlist: it does not start with #EXTM3U"),
        ("#EXTM3U\n#EXT-X-VERSION:3\n", "line 2: the playlist has no segments and no variants"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-ENDLIST", "line 3: the media playlist has no segments"),
        ("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x\",URI=\"a.m3u8\"", "line 2: the master playlist has no variants"),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:4,\ns.ts",
            "line 4: #EXTINF in a playlist that has #EXT-X-STREAM-INF on line 2: a playlist is either master or media"
        ),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8",
            "line 3: #EXT-X-STREAM-INF in a playlist that has #EXT-X-TARGETDURATION on line 2: a playlist is either master or media"
        ),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv.m3u8", "line 2: #EXT-X-STREAM-INF has no URI after it"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n", "line 2: #EXT-X-STREAM-INF has no URI after it"),
        ("#EXTM3U\nstray.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8", "line 2: a URI with no #EXT-X-STREAM-INF before it"),
        (
            "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,NAME=\"x\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8",
            "line 2: #EXT-X-MEDIA TYPE=AUDIO needs a GROUP-ID and a NAME"
        ),
        ("#EXTM3U\n#EXTINF:4,\n#EXTINF:4,\na.ts", "line 2: #EXTINF has no URI after it"),
        ("#EXTM3U\n#EXTINF:4,\na.ts\n#EXTINF:4,\n#EXT-X-ENDLIST", "line 4: #EXTINF has no URI after it"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\na.ts", "line 3: a URI with no #EXTINF before it"),
        ("#EXTM3U\n#EXTINF:-2,live\na.ts", "line 2: #EXTINF duration \"-2\" is not a non-negative number"),
        ("#EXTM3U\n#EXTINF:nan,\na.ts", "line 2: #EXTINF duration \"nan\" is not a non-negative number"),
        ("#EXTM3U\n#EXTINF:1e999,\na.ts", "line 2: #EXTINF duration \"1e999\" is not a non-negative number"),
        ("#EXTM3U\n#EXTINF:,\na.ts", "line 2: #EXTINF duration \"\" is not a non-negative number"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:ten\n#EXTINF:1,\na.ts", "line 2: #EXT-X-TARGETDURATION \"ten\" is not a number"),
        (
            "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n#EXTINF:1,\na.ts",
            "line 2: #EXT-X-MEDIA-SEQUENCE \"18446744073709551615\" is not a sequence number"
        ),
        (
            "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:9223372036854775807\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts",
            "line 2: #EXT-X-MEDIA-SEQUENCE 9223372036854775807 is too large"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:abc\na.ts",
            "line 3: bad byte range \"abc\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:0@0\na.ts",
            "line 3: bad byte range \"0@0\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:10@-1\na.ts",
            "line 3: bad byte range \"10@-1\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:10@\na.ts",
            "line 3: bad byte range \"10@\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:99999999999999999999@0\na.ts",
            "line 3: bad byte range \"99999999999999999999@0\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:9223372036854775807@1\na.ts",
            "line 3: bad byte range \"9223372036854775807@1\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        (
            "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:9223372036854775800@0\na.ts\n#EXTINF:1,\n#EXT-X-BYTERANGE:100\na.ts",
            "line 6: bad byte range \"100@9223372036854775800\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        ("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:100\na.ts", "line 3: #EXT-X-BYTERANGE has no offset and follows no range of a.ts"),
        (
            "#EXTM3U\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"x@0\"\n#EXTINF:1,\na.ts",
            "line 2: bad byte range \"x@0\": expected <length>[@<offset>] within 2^63 bytes"
        ),
        ("#EXTM3U\n#EXT-X-MAP:BYTERANGE=\"1@0\"\n#EXTINF:1,\na.ts", "line 2: #EXT-X-MAP has no URI"),
        (
            "#EXTM3U\n#EXTINF:1,\nftp://files.example.com/a.ts",
            "line 3: the URI \"ftp://files.example.com/a.ts\" does not resolve to an http(s) URL"
        ),
        ("#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd", "line 3: the URI \"file:///etc/passwd\" does not resolve to an http(s) URL"),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\njavascript:alert(1)",
            "line 3: the URI \"javascript:alert(1)\" does not resolve to an http(s) URL"
        ),
        (
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAAA\"\n#EXTINF:1,\na.ts",
            "line 2: the URI \"data:text/plain;base64,AAAA\" does not resolve to an http(s) URL"
        ),
        ("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128\n#EXTINF:1,\na.ts", "line 2: #EXT-X-KEY METHOD=AES-128 has no URI"),
        ("#EXTM3U\n#EXT-X-KEY:URI=\"k\"\n#EXTINF:1,\na.ts", "line 2: #EXT-X-KEY has no METHOD"),
        (
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x0102030405060708090a0b0c0d0e0f1011\n#EXTINF:1,\na.ts",
            "line 2: #EXT-X-KEY IV \"0x0102030405060708090a0b0c0d0e0f1011\" is not a 128-bit hexadecimal number"
        ),
        (
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0xZZ\n#EXTINF:1,\na.ts",
            "line 2: #EXT-X-KEY IV \"0xZZ\" is not a 128-bit hexadecimal number"
        ),
    ])
    func malformedPlaylistsAreRefusedNamingTheLine(text: String, message: String) {
        #expect(throws: StreamParseError(message)) {
            try HLSPlaylist.parse(text, url: url("https://cdn.example.com/vod/movie/index.m3u8"))
        }
    }

    @Test func aRelativeURIAgainstANonHTTPPlaylistIsRefused() {
        #expect(throws: StreamParseError("line 3: the URI \"a.ts\" does not resolve to an http(s) URL")) {
            try HLSPlaylist.parse("#EXTM3U\n#EXTINF:1,\na.ts", url: URL(fileURLWithPath: "/srv/index.m3u8"))
        }
    }

    @Test func oversizedPlaylistsAreRefused() {
        let padding = String(repeating: "#", count: HLSPlaylist.maximumSize)
        #expect(throws: StreamParseError("line 1: the playlist is larger than 16 MiB")) {
            try HLSPlaylist.parse("#EXTM3U\n" + padding, url: url("https://a.example/i.m3u8"))
        }
        // Too many segments: HLSHostileInputTests.theSegmentsOfAPlaylistHaveABudget, with a small
        // budget (a million took 10-20 s of CPU here).
    }
}

@Suite struct HLSSessionKeyTests {
    @Test func aSessionKeyEncryptsEveryTrackWithAPlaylistAClearKeyWinning() throws {
        let text = """
            #EXTM3U
            #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://k",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="keys/k.key"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="in",DEFAULT=YES
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="b",NAME="own",URI="audio.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO="a"
            v0.m3u8
            """
        let catalog = try master(text, url: "https://cdn.example.com/vod/master.m3u8")
        let key = SegmentEncryption.aes128(key: url("https://cdn.example.com/vod/keys/k.key"), iv: nil)
        #expect(catalog.tracks.map(\.id) == ["v0", "AUDIO/a/in", "AUDIO/b/own"])
        // A rendition inside the variants has no playlist of its own to encrypt.
        #expect(catalog.tracks.map(\.encryption) == [key, .none, key])
        let drm = try master(
            text.replacingOccurrences(of: "#EXT-X-SESSION-KEY:METHOD=AES-128", with: "#X"), url: "https://cdn.example.com/m.m3u8")
        #expect(drm.tracks[0].encryption == .unsupported("com.apple.streamingkeydelivery"))
        #expect(throws: StreamParseError.self) {
            try master("#EXTM3U\n#EXT-X-SESSION-KEY:URI=\"k\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8", url: "https://c/m.m3u8")
        }
    }
}
