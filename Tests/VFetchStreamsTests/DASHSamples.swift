/// Hand-written MPDs shaped like those real services send, for the DASH tests and the fuzz seeds.
enum DASHSample {
    /// YouTube's shape: on-demand profile, one file per Representation at a signed URL, SegmentBase
    /// with the `sidx` at `indexRange`.
    static let youtube = """
        <?xml version="1.0" encoding="UTF-8"?>
        <MPD xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="urn:mpeg:DASH:schema:MPD:2011" \
        xmlns:yt="http://youtube.com/yt/2012/10/10" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" \
        type="static" mediaPresentationDuration="PT212.534S" minBufferTime="PT1.500S">
          <Period duration="PT212.534S">
            <AdaptationSet id="0" mimeType="audio/mp4" subsegmentAlignment="true">
              <Role schemeIdUri="urn:mpeg:DASH:role:2011" value="main"/>
              <Representation id="140" codecs="mp4a.40.2" audioSamplingRate="44100" startWithSAP="1" bandwidth="130530">
                <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2"/>
                <BaseURL yt:contentLength="3441235">https://rr3---sn-4g5e6nsz.googlevideo.com/videoplayback?expire=1700000000&amp;itag=140&amp;source=youtube&amp;sig=AJfQdSswRQIhAK</BaseURL>
                <SegmentBase indexRange="632-1055" indexRangeExact="true">
                  <Initialization range="0-631"/>
                </SegmentBase>
              </Representation>
            </AdaptationSet>
            <AdaptationSet id="1" mimeType="video/mp4" subsegmentAlignment="true">
              <Role schemeIdUri="urn:mpeg:DASH:role:2011" value="main"/>
              <Representation id="137" codecs="avc1.640028" width="1920" height="1080" startWithSAP="1" maxPlayoutRate="1" bandwidth="4397000" frameRate="30">
                <BaseURL yt:contentLength="71834213">https://rr3---sn-4g5e6nsz.googlevideo.com/videoplayback?expire=1700000000&amp;itag=137&amp;source=youtube</BaseURL>
                <SegmentBase indexRange="710-1241" indexRangeExact="true">
                  <Initialization range="0-709"/>
                </SegmentBase>
              </Representation>
              <Representation id="136" codecs="avc1.4d401f" width="1280" height="720" startWithSAP="1" maxPlayoutRate="1" bandwidth="2320000" frameRate="30">
                <BaseURL>https://rr3---sn-4g5e6nsz.googlevideo.com/videoplayback?expire=1700000000&amp;itag=136&amp;source=youtube</BaseURL>
                <SegmentBase indexRange="709-1240"><Initialization range="0-708"/></SegmentBase>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// An Akamai or Bitmovin packager's shape: BaseURL at the MPD, Period, AdaptationSet and
    /// Representation levels (absolute, relative, `../` and rooted), SegmentTemplate@duration at the
    /// set level, `$Number%05d$`, `$Bandwidth$` and `$Time$`, a Label and a thumbnail set.
    static let akamai = """
        <?xml version="1.0" encoding="utf-8"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" \
        mediaPresentationDuration="PT0H0M10.000S" minBufferTime="PT2S">
          <BaseURL>https://akamai.example.com/vod/</BaseURL>
          <Period id="1" start="PT0S">
            <BaseURL>movie/</BaseURL>
            <AdaptationSet mimeType="video/mp4" codecs="avc1.4d401f" frameRate="30000/1001" segmentAlignment="true" lang="und">
              <BaseURL>video/</BaseURL>
              <SegmentTemplate timescale="90000" media="$RepresentationID$/seg-$Number%05d$.m4s" initialization="$RepresentationID$/init.mp4" duration="360000" startNumber="0"/>
              <Representation id="1080p" bandwidth="5000000" width="1920" height="1080">
                <BaseURL>../hd/</BaseURL>
              </Representation>
              <Representation id="480p" bandwidth="1200000" width="854" height="480"/>
            </AdaptationSet>
            <AdaptationSet mimeType="audio/mp4" lang="en">
              <Label>English stereo</Label>
              <BaseURL>/audio/</BaseURL>
              <SegmentTemplate timescale="48000" media="a-$Bandwidth$-$Time$.m4s" initialization="a-$Bandwidth$-init.mp4" duration="192000"/>
              <Representation id="aud" bandwidth="128000" codecs="mp4a.40.2" audioSamplingRate="48000"/>
            </AdaptationSet>
            <AdaptationSet contentType="image" mimeType="image/jpeg">
              <SegmentTemplate media="thumbs/$Number$.jpg" duration="10"/>
              <Representation id="thumbs" bandwidth="10000" width="1280" height="720"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// A live channel: `dynamic`, SegmentTimeline with `$Time$`, an `S@r` of -1 running to the live
    /// edge, a 30 s time shift buffer.
    static let liveTimeline = """
        <?xml version="1.0" encoding="utf-8"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" availabilityStartTime="2024-01-01T00:00:00Z" \
        publishTime="2024-01-01T00:00:30Z" minimumUpdatePeriod="PT2S" timeShiftBufferDepth="PT30S" \
        profiles="urn:mpeg:dash:profile:isoff-live:2011" minBufferTime="PT4S">
          <Period id="p0" start="PT0S">
            <AdaptationSet contentType="video" mimeType="video/mp4" segmentAlignment="true">
              <SegmentTemplate timescale="90000" media="v/$RepresentationID$/$Time$.m4s" initialization="v/$RepresentationID$/init.mp4">
                <SegmentTimeline>
                  <S t="1000000" d="180000" r="2"/>
                  <S d="179910"/>
                  <S d="180000" r="-1"/>
                </SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v1" bandwidth="2000000" codecs="avc1.64001f" width="1280" height="720" frameRate="50"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// A live channel counted by number: SegmentTemplate@duration against `availabilityStartTime`.
    static let liveNumbered = """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" availabilityStartTime="2024-01-01T00:00:00Z" \
        timeShiftBufferDepth="PT10S" minimumUpdatePeriod="PT10S">
          <Period id="0" start="PT0S">
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="de">
              <SegmentTemplate timescale="1000" duration="2000" startNumber="1" media="a/$Number$.m4s" initialization="a/init.mp4"/>
              <Representation id="a" bandwidth="64000" codecs="mp4a.40.5"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// Three Periods: content, an inserted ad with Representations of its own, content again.
    static let multiPeriod = """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT26S">
          <Period id="main-1" start="PT0S">
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1" duration="4" media="main/$RepresentationID$/$Number$.m4s" initialization="main/$RepresentationID$/init.mp4"/>
              <Representation id="v-hi" bandwidth="3000000" codecs="avc1.640028" width="1920" height="1080"/>
              <Representation id="v-lo" bandwidth="800000" codecs="avc1.4d401e" width="640" height="360"/>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="4" media="main/$RepresentationID$/$Number$.m4s" initialization="main/$RepresentationID$/init.mp4"/>
              <Representation id="a-en" bandwidth="128000" codecs="mp4a.40.2"/>
            </AdaptationSet>
          </Period>
          <Period id="ad" start="PT10S">
            <BaseURL>https://ads.example.net/creative/</BaseURL>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1000" duration="3000" media="$RepresentationID$-$Number$.mp4" initialization="$RepresentationID$-init.mp4"/>
              <Representation id="ad-1080" bandwidth="4000000" codecs="avc1.640028" width="1920" height="1080"/>
              <Representation id="ad-360" bandwidth="500000" codecs="avc1.4d401e" width="640" height="360"/>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1000" duration="3000" media="$RepresentationID$-$Number$.mp4" initialization="$RepresentationID$-init.mp4"/>
              <Representation id="ad-audio" bandwidth="96000" codecs="mp4a.40.2"/>
            </AdaptationSet>
          </Period>
          <Period id="main-2" start="PT16S">
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <SegmentTemplate timescale="1" duration="4" startNumber="4" presentationTimeOffset="10" media="main/$RepresentationID$/$Number$.m4s" initialization="main/$RepresentationID$/init.mp4"/>
              <Representation id="v-hi" bandwidth="3000000" codecs="avc1.640028" width="1920" height="1080"/>
              <Representation id="v-lo" bandwidth="800000" codecs="avc1.4d401e" width="640" height="360"/>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
              <SegmentTemplate timescale="1" duration="4" startNumber="4" presentationTimeOffset="10" media="main/$RepresentationID$/$Number$.m4s" initialization="main/$RepresentationID$/init.mp4"/>
              <Representation id="a-en" bandwidth="128000" codecs="mp4a.40.2"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// Common Encryption under Widevine and PlayReady (video), `cbcs` alone (audio), and an on-demand
    /// SegmentBase track under a DRM system vfetch has no name for.
    static let protected = """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" xmlns:mspr="urn:microsoft:playready" \
        type="static" mediaPresentationDuration="PT8S">
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4" codecs="avc1.64001f">
              <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="10000000-1000-1000-1000-100000000001"/>
              <ContentProtection schemeIdUri="urn:uuid:EDEF8BA9-79D6-4ACE-A3C8-27DCD51D21ED">
                <cenc:pssh>AAAAQXBzc2gAAAAA7e+LqXnWSs6jyCfc1R0h7QAAACEiGVlUX01FRElBX1NUUkVBTV9JRD09</cenc:pssh>
              </ContentProtection>
              <ContentProtection schemeIdUri="urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95" value="MSPR 2.0">
                <mspr:pro>AAAA</mspr:pro>
              </ContentProtection>
              <SegmentTemplate timescale="1000" duration="4000" media="v/$Number$.m4s" initialization="v/init.mp4"/>
              <Representation id="v" bandwidth="1000000" width="1280" height="720"/>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" codecs="mp4a.40.2">
              <SegmentTemplate timescale="1000" duration="4000" media="a/$Number$.m4s" initialization="a/init.mp4"/>
              <Representation id="a" bandwidth="128000">
                <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cbcs"/>
              </Representation>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" codecs="mp4a.40.2" lang="fr">
              <ContentProtection schemeIdUri="urn:uuid:11111111-2222-3333-4444-555555555555"/>
              <Representation id="a-fr" bandwidth="96000">
                <BaseURL>audio-fr.mp4</BaseURL>
                <SegmentBase indexRange="800-899"><Initialization range="0-799"/></SegmentBase>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """

    /// SegmentList with its own files (`SegmentURL@media`, `Initialization@sourceURL`), subtitles in
    /// a whole WebVTT file, TTML in MP4, and a muxed video+audio Representation; all under a
    /// namespace prefix.
    static let listsAndText = """
        <?xml version="1.0"?>
        <mpd:MPD xmlns:mpd="urn:mpeg:dash:schema:mpd:2011" mpd:type="static" type="static" mediaPresentationDuration="PT9S">
          <mpd:Period>
            <mpd:AdaptationSet mimeType="video/mp4">
              <mpd:Representation id="sl" bandwidth="900000" codecs="avc1.4d401e" width="640" height="360">
                <mpd:SegmentList timescale="1000" duration="3000" startNumber="7">
                  <mpd:Initialization sourceURL="sl/init.mp4"/>
                  <mpd:SegmentURL media="sl/7.m4s"/>
                  <mpd:SegmentURL media="sl/8.m4s"/>
                  <mpd:SegmentURL media="sl/9.m4s" mediaRange="100-199"/>
                </mpd:SegmentList>
              </mpd:Representation>
            </mpd:AdaptationSet>
            <mpd:AdaptationSet mimeType="text/vtt" lang="es">
              <mpd:Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>
              <mpd:Representation id="vtt-es" bandwidth="256"><mpd:BaseURL>subs/es.vtt</mpd:BaseURL></mpd:Representation>
            </mpd:AdaptationSet>
            <mpd:AdaptationSet mimeType="application/mp4" codecs="stpp" lang="en">
              <mpd:SegmentTemplate timescale="1" duration="3" media="ttml/$Number$.mp4"/>
              <mpd:Representation id="ttml-en" bandwidth="1000"/>
            </mpd:AdaptationSet>
            <mpd:AdaptationSet mimeType="video/mp4">
              <mpd:Representation id="muxed" bandwidth="1100000" codecs="avc1.42c01e, mp4a.40.2">
                <mpd:BaseURL>progressive.mp4</mpd:BaseURL>
              </mpd:Representation>
            </mpd:AdaptationSet>
          </mpd:Period>
        </mpd:MPD>
        """

    static let all = [youtube, akamai, liveTimeline, liveNumbered, multiPeriod, protected, listsAndText]
}
