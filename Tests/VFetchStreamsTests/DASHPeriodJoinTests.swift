import Foundation
import Testing

@testable import VFetchStreams

/// Several Periods joined into one track each: continued by AdaptationSet, with gaps where a Period
/// lacks the track.
@Suite struct DASHPeriodJoinTests {
    /// A 10 s programme, a 6 s ad with video only, and 8 s more programme whose audio Representation is
    /// renamed (its AdaptationSet keeps its id), beside a commentary in the same language and a French
    /// dub that the first Period did not have.
    static let mpd = """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT24S">
          <Period id="main-1" start="PT0S">
            <AdaptationSet id="1" contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1" duration="5" media="main/$RepresentationID$/$Number$.m4s"/>
              <Representation id="v" bandwidth="3000000" width="1920" height="1080"/>
            </AdaptationSet>
            <AdaptationSet id="2" contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="5" media="main/$RepresentationID$/$Number$.m4s"/>
              <Representation id="a-en" bandwidth="128000"/>
            </AdaptationSet>
            <AdaptationSet id="3" contentType="text" mimeType="application/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="5" media="main/$RepresentationID$/$Number$.m4s"/>
              <Representation id="sub-en" bandwidth="1000"/>
            </AdaptationSet>
          </Period>
          <Period id="ad" start="PT10S">
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1" duration="3" media="ad/$RepresentationID$/$Number$.m4s"/>
              <Representation id="ad-v" bandwidth="2000000" width="1920" height="1080"/>
            </AdaptationSet>
          </Period>
          <Period id="main-2" start="PT16S">
            <AdaptationSet id="1" contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1" duration="4" media="main2/$RepresentationID$/$Number$.m4s"/>
              <Representation id="v" bandwidth="3000000" width="1920" height="1080"/>
            </AdaptationSet>
            <AdaptationSet id="9" contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="4" media="main2/$RepresentationID$/$Number$.m4s"/>
              <Representation id="commentary" bandwidth="128000"/>
            </AdaptationSet>
            <AdaptationSet id="2" contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="4" media="main2/$RepresentationID$/$Number$.m4s"/>
              <Representation id="audio-en-2" bandwidth="64000"/>
            </AdaptationSet>
            <AdaptationSet id="4" contentType="audio" mimeType="audio/mp4" lang="fr">
              <SegmentTemplate timescale="1" duration="4" media="main2/$RepresentationID$/$Number$.m4s"/>
              <Representation id="a-fr" bandwidth="128000"/>
            </AdaptationSet>
            <AdaptationSet id="3" contentType="text" mimeType="application/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="4" media="main2/$RepresentationID$/$Number$.m4s"/>
              <Representation id="sub-en" bandwidth="1000"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    static func paths(_ track: StreamTrack) -> [String] { track.urls.map { URL(string: $0)!.path } }

    @Test func aTrackContinuesInItsAdaptationSetAndKeepsAGapWhereAPeriodLacksIt() throws {
        let catalog = try parseMPD(Self.mpd)
        try #require(catalog.tracks.map(\.id) == ["v", "a-en", "sub-en", "commentary", "a-fr"])
        let video = catalog.tracks[0]
        #expect(
            Self.paths(video) == [
                "/v/main/v/1.m4s", "/v/main/v/2.m4s", "/v/ad/ad-v/1.m4s", "/v/ad/ad-v/2.m4s", "/v/main2/v/1.m4s", "/v/main2/v/2.m4s",
            ])
        #expect(video.list?.duration == 24)

        // The audio goes on in AdaptationSet 2, though another English audio is nearer in bandwidth.
        let audio = catalog.tracks[1]
        #expect(
            Self.paths(audio) == ["/v/main/a-en/1.m4s", "/v/main/a-en/2.m4s", "/v/main2/audio-en-2/1.m4s", "/v/main2/audio-en-2/2.m4s"])
        // The ad had no audio: a gap of its 6 s, not a track dropped.
        #expect(audio.list?.gapSeconds == 6)
        #expect(audio.list?.duration == 24)
        #expect(audio.list?.segments.map(\.discontinuity) == [false, false, true, false])
        #expect(catalog.tracks[2].list?.gapSeconds == 6)

        // Tracks that start in a later Period start with a gap of the Periods before.
        for late in catalog.tracks[3...] {
            #expect(late.list?.gapSeconds == 16)
            #expect(late.list?.segments.count == 2)
            #expect(late.list?.duration == 24)
        }
    }
}
