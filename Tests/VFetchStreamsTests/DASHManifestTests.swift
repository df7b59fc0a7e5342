import Foundation
import Testing

@testable import VFetchStreams

/// Reads `text` as an MPD fetched from `url`.
func parseMPD(
    _ text: String, url: String = "https://cdn.example.com/v/manifest.mpd", now: Date = Date()
) throws(StreamParseError) -> StreamCatalog {
    try DASHManifest.parse(Array(text.utf8), url: URL(string: url)!, now: now)
}

extension StreamTrack {
    /// The segments, when the document lists them.
    var list: SegmentList? {
        if case .list(let list) = segments { list } else { nil }
    }

    var urls: [String] { list?.segments.map(\.resource.url.absoluteString) ?? [] }
}

/// DASH MPDs from ffmpeg's own muxer and shaped like real services', read into a catalog.
@Suite struct DASHManifestTests {
    static let noFFmpeg: Comment = "ffmpeg makes the fixtures, and it is not installed"

    @Test(.enabled(if: ffmpegIsInstalled, noFFmpeg))
    func ffmpegSegmentTimelineNamesEveryFileItWrote() async throws {
        let directory = try await DASHFixture.timeline.directory
        let mpd = try Data(contentsOf: directory.appendingPathComponent("out.mpd"))
        let catalog = try DASHManifest.parse(mpd, url: URL(string: "https://cdn.example.com/vod/out.mpd")!)
        #expect(catalog.format == .dash && !catalog.isLive && catalog.duration == 6)
        #expect(catalog.tracks.map(\.id) == ["0", "1"])
        #expect(catalog.tracks.map(\.kind) == [.video, .audio])

        let video = catalog.tracks[0]
        #expect(video.width == 320 && video.height == 240 && video.frameRate == 25)
        #expect(video.codecs.count == 1 && video.codecs[0].hasPrefix("avc1."))
        #expect((video.bandwidth ?? 0) > 0)
        let videoList = try #require(video.list)
        #expect(videoList.isComplete)
        #expect(video.urls == (1...3).map { "https://cdn.example.com/vod/chunk-stream0-0000\($0).m4s" })
        #expect(videoList.segments.map(\.duration) == [2, 2, 2])
        #expect(videoList.segments.map(\.sequence) == [1, 2, 3])
        let videoInit = MediaResource(url: URL(string: "https://cdn.example.com/vod/init-stream0.m4s")!)
        #expect(videoList.segments.allSatisfy { $0.initialization == videoInit && $0.encryption == .none })

        let audio = catalog.tracks[1]
        #expect(audio.codecs == ["mp4a.40.2"] && audio.width == nil)
        let audioList = try #require(audio.list)
        // AAC frames do not fall on 2 s: the timeline's durations are the frames' and add up to the clip.
        #expect(abs((audioList.duration ?? 0) - 6) < 0.1)
        #expect(audioList.segments.map(\.sequence) == Array(1...audioList.segments.count))

        // Every URL names a file ffmpeg wrote, and every file it wrote is named.
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path)).subtracting(["out.mpd"])
        var named = Set<String>()
        for track in catalog.tracks {
            for segment in track.list?.segments ?? [] {
                named.insert(segment.resource.url.lastPathComponent)
                if let initialization = segment.initialization { named.insert(initialization.url.lastPathComponent) }
            }
        }
        #expect(named == written)
    }

    @Test(.enabled(if: ffmpegIsInstalled, noFFmpeg))
    func ffmpegNumberedTemplateCountsSegmentsFromThePresentationDuration() async throws {
        let directory = try await DASHFixture.numbered.directory
        let mpd = try Data(contentsOf: directory.appendingPathComponent("out.mpd"))
        let catalog = try DASHManifest.parse(mpd, url: URL(string: "https://cdn.example.com/vod/out.mpd")!)
        #expect(catalog.tracks.map(\.id) == ["0", "1"])
        // PT6.0S in segments of 2000000/1000000 s: 3 each, $Number%05d$ from startNumber 1.
        for track in catalog.tracks {
            let list = try #require(track.list)
            #expect(list.segments.map(\.duration) == [2, 2, 2])
            #expect(track.urls == (1...3).map { "https://cdn.example.com/vod/chunk-stream\(track.id)-0000\($0).m4s" })
            for segment in list.segments {
                let file = directory.appendingPathComponent(segment.resource.url.lastPathComponent)
                #expect(FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent)")
            }
        }
    }

    @Test(.enabled(if: ffmpegIsInstalled, noFFmpeg))
    func ffmpegSingleFileSegmentListCoversEachFileWithByteRanges() async throws {
        let directory = try await DASHFixture.singleFile.directory
        let mpd = try Data(contentsOf: directory.appendingPathComponent("out.mpd"))
        let catalog = try DASHManifest.parse(mpd, url: URL(string: "https://cdn.example.com/vod/out.mpd")!)
        #expect(catalog.tracks.count == 2)
        for track in catalog.tracks {
            let list = try #require(track.list)
            let name = "out-stream\(track.id).mp4"
            let file = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            #expect(Set(track.urls) == ["https://cdn.example.com/vod/\(name)"])
            let initialization = try #require(list.segments.first?.initialization?.byteRange)
            let ranges = list.segments.compactMap(\.resource.byteRange)
            #expect(ranges.count == list.segments.count && ranges.count >= 3)
            // Init, then the segments end to end, to the last byte of the file.
            #expect(initialization.lowerBound == 0 && initialization.upperBound == ranges.first?.lowerBound)
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
            #expect(ranges.last?.upperBound == Int64(file.count))
            // Each segment starts with a box ffmpeg starts fragments with (its own sidx).
            for range in ranges {
                let type = String(decoding: file[Int(range.lowerBound) + 4..<Int(range.lowerBound) + 8], as: UTF8.self)
                #expect(["sidx", "styp", "moof"].contains(type), "\(range): \(type)")
            }
            #expect(list.segments.map(\.sequence) == Array(1...list.segments.count))
        }
    }

    @Test func youtubeSegmentBaseIsIndexedBySidx() throws {
        let catalog = try parseMPD(DASHSample.youtube, url: "https://www.youtube.com/api/manifest/dash/id/abc")
        #expect(catalog.duration == 212.534 && !catalog.isLive)
        #expect(catalog.tracks.map(\.id) == ["140", "137", "136"])
        let audio = catalog.tracks[0]
        #expect(audio.kind == .audio && audio.bandwidth == 130530 && audio.codecs == ["mp4a.40.2"] && audio.isDefault)
        let audioURL = URL(
            string:
                "https://rr3---sn-4g5e6nsz.googlevideo.com/videoplayback?expire=1700000000&itag=140&source=youtube&sig=AJfQdSswRQIhAK"
        )!
        #expect(
            audio.segments
                == .indexed(
                    url: audioURL, initialization: MediaResource(url: audioURL, byteRange: 0..<632),
                    indexRange: 632..<1056))
        let video = catalog.tracks[1]
        #expect(video.kind == .video && video.width == 1920 && video.height == 1080 && video.frameRate == 30)
        guard case .indexed(let url, let initialization, let indexRange) = video.segments else {
            Issue.record("\(video.segments)")
            return
        }
        #expect(url.absoluteString.hasSuffix("itag=137&source=youtube"))
        #expect(initialization?.byteRange == 0..<710 && indexRange == 710..<1242)
    }

    @Test func baseURLsResolveLevelByLevel() throws {
        let catalog = try parseMPD(DASHSample.akamai, url: "https://origin.example.com/manifests/x.mpd")
        #expect(catalog.duration == 10)
        // The thumbnail set is not a track.
        #expect(catalog.tracks.map(\.id) == ["1080p", "480p", "aud"])

        let hd = catalog.tracks[0]
        #expect(hd.kind == .video && hd.codecs == ["avc1.4d401f"] && hd.language == "und" && hd.width == 1920)
        #expect(abs((hd.frameRate ?? 0) - 29.97) < 0.001)
        // MPD: https://akamai.example.com/vod/, Period: movie/, set: video/, Representation: ../hd/.
        #expect(
            hd.urls
                == (0...2).map { "https://akamai.example.com/vod/movie/hd/1080p/seg-0000\($0).m4s" })
        let hdList = try #require(hd.list)
        #expect(
            hdList.segments.first?.initialization?.url.absoluteString
                == "https://akamai.example.com/vod/movie/hd/1080p/init.mp4")
        // 10 s in 4 s segments: the last holds what is left.
        #expect(hdList.segments.map(\.duration) == [4, 4, 2] && hdList.segments.map(\.sequence) == [0, 1, 2])
        #expect(hdList.targetDuration == 4)

        #expect(catalog.tracks[1].urls.first == "https://akamai.example.com/vod/movie/video/480p/seg-00000.m4s")

        let audio = catalog.tracks[2]
        #expect(audio.kind == .audio && audio.name == "English stereo" && audio.language == "en" && !audio.isDefault)
        // A rooted BaseURL (/audio/) keeps only the host; $Time$ counts the timescale's ticks.
        #expect(
            audio.urls == [0, 192000, 384000].map { "https://akamai.example.com/audio/a-128000-\($0).m4s" })
        #expect(
            audio.list?.segments.first?.initialization?.url.absoluteString
                == "https://akamai.example.com/audio/a-128000-init.mp4")
        #expect(audio.list?.segments.map(\.sequence) == [1, 2, 3])
    }

    @Test func liveSegmentTimelineRunsToTheLiveEdge() throws {
        let start = try #require(MPDTime.date("2024-01-01T00:00:00Z"))
        let catalog = try parseMPD(
            DASHSample.liveTimeline, url: "https://live.example.com/channel/manifest.mpd",
            now: start.addingTimeInterval(30))
        #expect(catalog.isLive && catalog.duration == nil)
        let track = try #require(catalog.tracks.first)
        let list = try #require(track.list)
        #expect(!list.isComplete)
        // t=1000000, three of 180000, one of 179910, then r=-1: those that end by 30 s (2700000).
        let times: [Int64] = [1_000_000, 1_180_000, 1_360_000, 1_540_000] + (0..<5).map { 1_719_910 + $0 * 180_000 }
        #expect(track.urls == times.map { "https://live.example.com/channel/v/v1/\($0).m4s" })
        #expect(list.segments.map(\.sequence) == Array(1...9))
        #expect(list.segments[3].duration == 1.999)
        #expect(
            list.segments.first?.initialization?.url.absoluteString == "https://live.example.com/channel/v/v1/init.mp4")

        // A minute later the same document lists more.
        let later = try parseMPD(DASHSample.liveTimeline, now: start.addingTimeInterval(90))
        #expect(later.tracks.first?.list?.segments.count == 4 + 35)
    }

    @Test func liveNumberedTemplateListsTheTimeShiftWindow() throws {
        let start = try #require(MPDTime.date("2024-01-01T00:00:00Z"))
        let catalog = try parseMPD(
            DASHSample.liveNumbered, url: "https://live.example.com/radio/a.mpd", now: start.addingTimeInterval(61))
        let track = try #require(catalog.tracks.first)
        #expect(track.kind == .audio && track.language == "de")
        // 30 segments of 2 s have ended by 61 s; the 10 s buffer keeps the last 5 (numbers from 1).
        #expect(track.urls == (26...30).map { "https://live.example.com/radio/a/\($0).m4s" })
        #expect(track.list?.segments.map(\.duration) == [2, 2, 2, 2, 2])
        #expect(track.list?.isComplete == false)

        let early = try parseMPD(DASHSample.liveNumbered, now: start.addingTimeInterval(-5))
        #expect(early.tracks.first?.list?.segments.isEmpty == true)
    }

    @Test func periodsJoinByRepresentationIDAndAdsByKindAndBandwidth() throws {
        let catalog = try parseMPD(DASHSample.multiPeriod, url: "https://cdn.example.com/show/ep1.mpd")
        #expect(catalog.duration == 26)
        #expect(catalog.tracks.map(\.id) == ["v-hi", "v-lo", "a-en"])
        let hi = try #require(catalog.tracks[0].list)
        #expect(
            catalog.tracks[0].urls == [
                "https://cdn.example.com/show/main/v-hi/1.m4s", "https://cdn.example.com/show/main/v-hi/2.m4s",
                "https://cdn.example.com/show/main/v-hi/3.m4s",
                "https://ads.example.net/creative/ad-1080-1.mp4", "https://ads.example.net/creative/ad-1080-2.mp4",
                "https://cdn.example.com/show/main/v-hi/4.m4s", "https://cdn.example.com/show/main/v-hi/5.m4s",
                "https://cdn.example.com/show/main/v-hi/6.m4s",
            ])
        #expect(hi.segments.map(\.duration) == [4, 4, 2, 3, 3, 4, 4, 2])
        #expect(hi.duration == 26)
        #expect(hi.segments.map(\.discontinuity) == [false, false, false, true, false, true, false, false])
        #expect(
            hi.segments[3].initialization?.url.absoluteString == "https://ads.example.net/creative/ad-1080-init.mp4")
        #expect(catalog.tracks[1].urls[3] == "https://ads.example.net/creative/ad-360-1.mp4")
        #expect(catalog.tracks[2].urls[3] == "https://ads.example.net/creative/ad-audio-1.mp4")
    }

    @Test func contentProtectionMakesEverySegmentUnsupported() throws {
        let catalog = try parseMPD(DASHSample.protected)
        #expect(catalog.tracks.map(\.id) == ["v", "a", "a-fr"])
        let video = catalog.tracks[0]
        #expect(video.encryption == .unsupported("cenc (Widevine, PlayReady)"))
        #expect(video.list?.segments.count == 2)
        #expect(video.list?.segments.allSatisfy { $0.encryption == .unsupported("cenc (Widevine, PlayReady)") } == true)
        #expect(catalog.tracks[1].list?.segments.allSatisfy { $0.encryption == .unsupported("cbcs") } == true)
        // SegmentBase: the segments are not listed yet, the track says what they will be.
        let french = catalog.tracks[2]
        #expect(french.encryption == .unsupported("11111111-2222-3333-4444-555555555555"))
        guard case .indexed = french.segments else {
            Issue.record("\(french.segments)")
            return
        }
        #expect(try sampleIndex(in: french).segments.allSatisfy { $0.encryption == french.encryption })
    }

    /// `track`'s segments from a made-up index of two subsegments, as a download would read them.
    private func sampleIndex(in track: StreamTrack) throws -> SegmentList {
        try track.segments.segmentList(index: SegmentIndexBoxTests.versionZeroIndex, encryption: track.encryption)
    }

    @Test func segmentListsWholeFilesTextAndMuxedTracksUnderANamespacePrefix() throws {
        let catalog = try parseMPD(DASHSample.listsAndText, url: "https://cdn.example.com/film/index.mpd")
        #expect(catalog.tracks.map(\.id) == ["sl", "vtt-es", "ttml-en", "muxed"])
        #expect(catalog.tracks.map(\.kind) == [.video, .subtitles, .subtitles, .muxed])

        let list = try #require(catalog.tracks[0].list)
        #expect(catalog.tracks[0].urls == (7...9).map { "https://cdn.example.com/film/sl/\($0).m4s" })
        #expect(list.segments.map(\.resource.byteRange) == [nil, nil, 100..<200])
        #expect(list.segments.map(\.sequence) == [7, 8, 9] && list.segments.map(\.duration) == [3, 3, 3])
        #expect(
            list.segments[0].initialization
                == MediaResource(url: URL(string: "https://cdn.example.com/film/sl/init.mp4")!))

        let vtt = catalog.tracks[1]
        #expect(vtt.language == "es" && !vtt.isDefault)
        #expect(vtt.urls == ["https://cdn.example.com/film/subs/es.vtt"] && vtt.list?.segments.first?.duration == 9)
        #expect(catalog.tracks[2].urls == (1...3).map { "https://cdn.example.com/film/ttml/\($0).mp4" })
        #expect(catalog.tracks[3].codecs == ["avc1.42c01e", "mp4a.40.2"])
        #expect(catalog.tracks[3].urls == ["https://cdn.example.com/film/progressive.mp4"])
    }

    @Test func aTemplateAtTheRepresentationOverridesTheSetsAttributeByAttribute() throws {
        let catalog = try parseMPD(
            """
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" mediaPresentationDuration="PT6S">
              <Period>
                <AdaptationSet contentType="video">
                  <SegmentTemplate timescale="1000" duration="2000" startNumber="10" media="$RepresentationID$/$Number$.m4s"/>
                  <Representation id="a" bandwidth="1"><SegmentTemplate duration="3000"/></Representation>
                  <Representation id="b" bandwidth="2"><SegmentTemplate media="other/$Number%03d$.m4s"/></Representation>
                  <Representation id="c" bandwidth="3"/>
                </AdaptationSet>
              </Period>
            </MPD>
            """)
        #expect(catalog.tracks[0].urls == ["https://cdn.example.com/v/a/10.m4s", "https://cdn.example.com/v/a/11.m4s"])
        #expect(catalog.tracks[1].urls == (10...12).map { "https://cdn.example.com/v/other/0\($0).m4s" })
        #expect(catalog.tracks[2].urls == (10...12).map { "https://cdn.example.com/v/c/\($0).m4s" })
    }

    @Test func timelineRepeatsToTheNextStartOrThePeriodEnd() throws {
        let catalog = try parseMPD(
            """
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" mediaPresentationDuration="PT20S">
              <Period>
                <AdaptationSet contentType="audio">
                  <SegmentTemplate timescale="10" presentationTimeOffset="50" media="$Time$.m4s">
                    <SegmentTimeline><S t="50" d="30" r="-1"/><S t="140" d="25" r="-1"/></SegmentTimeline>
                  </SegmentTemplate>
                  <Representation id="a" bandwidth="1"/>
                </AdaptationSet>
              </Period>
            </MPD>
            """)
        // 50, 80, 110 until the next S at 140; then 25 ticks each until the Period ends at 50 + 200.
        #expect(
            catalog.tracks[0].urls
                == [50, 80, 110, 140, 165, 190, 215, 240].map { "https://cdn.example.com/v/\($0).m4s" })
    }

    @Test func manifestsThatAreNotReadAreErrorsThatSayWhy() throws {
        func failure(_ text: String) -> String {
            do {
                _ = try parseMPD(text)
                return "parsed"
            } catch {
                return error.description
            }
        }
        let period = "<Period><AdaptationSet contentType=\"video\"><Representation id=\"v\" bandwidth=\"1\">"
        let end = "</Representation></AdaptationSet></Period>"
        func mpd(_ inner: String, _ attributes: String = "mediaPresentationDuration=\"PT10S\"") -> String {
            "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" \(attributes)>\(period)\(inner)\(end)</MPD>"
        }
        #expect(failure("just some text").contains("not well-formed XML"))
        #expect(failure("<html><head><title>Login</title></head><body><p>Sign in</body></html>").contains("HTML"))
        #expect(failure("<!DOCTYPE html>\n<html><body>Not found</body></html>").contains("HTML page"))
        #expect(failure("<rss version=\"2.0\"><channel/></rss>").contains("not a DASH manifest"))
        #expect(failure("<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\"/>").contains("no Period"))
        #expect(
            failure(mpd("<SegmentTemplate duration=\"2\" media=\"$Foo$.m4s\"/>")).contains("unknown identifier $Foo$"))
        #expect(failure(mpd("<SegmentTemplate duration=\"2\" media=\"$Number.m4s\"/>")).contains("unpaired $"))
        #expect(failure(mpd("<SegmentTemplate duration=\"2\" media=\"$Number%5d$\"/>")).contains("%0<width>d"))
        #expect(
            failure(mpd("<SegmentTemplate media=\"$Number$\"/>")).contains("neither a SegmentTimeline nor a duration"))
        #expect(
            failure(mpd("<SegmentTemplate media=\"$Number$\" duration=\"2\" timescale=\"0\"/>")).contains(
                "timescale is 0"))
        #expect(
            failure(mpd("<SegmentTemplate media=\"$Number$\" duration=\"2\" startNumber=\"-3\"/>")).contains("below 0"))
        #expect(
            failure(
                mpd(
                    "<SegmentTemplate media=\"$Number$\"><SegmentTimeline><S d=\"1\" r=\"5000000\"/></SegmentTimeline></SegmentTemplate>"
                )
            )
            .contains("1000000 segments"))
        #expect(
            failure(
                mpd(
                    "<SegmentTemplate media=\"$Number$\"><SegmentTimeline><S d=\"1\" r=\"-2\"/></SegmentTimeline></SegmentTemplate>"
                )
            )
            .contains("S@r is -2"))
        #expect(
            failure(
                mpd(
                    "<SegmentTemplate media=\"$Number$\"><SegmentTimeline><S t=\"1\"/></SegmentTimeline></SegmentTemplate>"
                )
            )
            .contains("no d"))
        #expect(failure(mpd("<SegmentTemplate media=\"$Number$\" duration=\"2\"/>", "")).contains("no Period length"))
        #expect(
            failure(mpd("<SegmentTemplate media=\"$Number$\" duration=\"2\"/>", "type=\"dynamic\"")).contains(
                "availabilityStartTime"))
        #expect(failure(mpd("", "mediaPresentationDuration=\"10 minutes\"")).contains("not a duration"))
        #expect(failure(mpd("", "type=\"live\"")).contains("neither static nor dynamic"))
        #expect(
            failure(mpd("<SegmentBase indexRange=\"900-100\"/><BaseURL>x.mp4</BaseURL>")).contains("not a byte range"))
        #expect(failure(mpd("<BaseURL>file:///etc/passwd</BaseURL>")).contains("not an http or https URL"))
        #expect(
            failure(mpd("<SegmentTemplate media=\"gopher://h/$Number$\" duration=\"2\"/>")).contains(
                "not an http or https URL"))
        #expect(failure(mpd("")).contains("has no SegmentTemplate, SegmentList, SegmentBase or BaseURL"))
        #expect(
            failure(
                mpd("<SegmentTemplate media=\"$Bandwidth$\" duration=\"2\"/>").replacingOccurrences(
                    of: " bandwidth=\"1\"", with: "")
            ).contains("no bandwidth"))
        #expect(
            failure(
                "<MPD><Period xmlns:xlink=\"http://www.w3.org/1999/xlink\" xlink:href=\"https://ads.example/p.xml\"/></MPD>"
            )
            .contains("remote"))
    }

    @Test func hostileTimesAndCountsEndInErrorsQuickly() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let hostile = [
            // A nanosecond segment over ten thousand hours.
            "<SegmentTemplate media=\"$Number$\" duration=\"1\" timescale=\"1000000000\"/>",
            // Times that run past Int64.
            "<SegmentTemplate media=\"$Time$\"><SegmentTimeline><S t=\"9223372036854775800\" d=\"5\" r=\"3\"/></SegmentTimeline></SegmentTemplate>",
            // r=-1 from 0 to the end of ten thousand hours in 1-tick steps.
            "<SegmentTemplate media=\"$Time$\" timescale=\"1000000\"><SegmentTimeline><S d=\"1\" r=\"-1\"/></SegmentTimeline></SegmentTemplate>",
            // Numbers that run past Int.
            "<SegmentTemplate media=\"$Number$\" startNumber=\"9223372036854775806\"><SegmentTimeline><S d=\"1\" r=\"3\"/></SegmentTimeline></SegmentTemplate>",
            "<SegmentTemplate media=\"$Number$\" duration=\"99999999999999999999\"/>",
        ]
        for inner in hostile {
            let text = """
                <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" mediaPresentationDuration="PT10000H"><Period>\
                <AdaptationSet contentType="video"><Representation id="v" bandwidth="1">\(inner)</Representation>\
                </AdaptationSet></Period></MPD>
                """
            #expect(throws: StreamParseError.self, "\(inner)") { try parseMPD(text) }
        }
        // Timed here, around the parses alone: the awaits below wait for threads the pure pass's long tests
        // hold (63 s once beside them, for 0.07 s of work).
        #expect(clock.now - started < .seconds(60))
        // Many Representations each under the bound still share one bound (a small one: at the
        // production million this took seconds, making 600,000 URLs).
        let many = (0..<2).map { "<Representation id=\"r\($0)\" bandwidth=\"1\"/>" }.joined()
        let shared = """
            <MPD mediaPresentationDuration="PT600S"><Period><AdaptationSet contentType="video">\
            <SegmentTemplate media="$RepresentationID$/$Number$" duration="1"/>\(many)</AdaptationSet></Period></MPD>
            """
        let result = await onOwnThread {
            Result { () throws(StreamParseError) in
                try DASHManifest.parse(
                    Array(shared.utf8), url: URL(string: "https://cdn.example.com/v/manifest.mpd")!,
                    budget: SegmentBudget(maxSegments: 1_000))
            }
        }
        #expect(throws: StreamParseError("the manifest lists more than 1000 segments")) { try result.get() }
        #expect(try await parseMPDOnOwnThread(shared).get().tracks.count == 2)
    }
}
