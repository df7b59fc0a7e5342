import Testing

@testable import VFetchStreams

/// TTML (IMSC, EBU-TT-D) read into cues, as DASH serves subtitles.
@Suite struct TTMLTests {
    static let imsc = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- made by hand -->
        <tt xmlns="http://www.w3.org/ns/ttml" xmlns:ttp="http://www.w3.org/ns/ttml#parameter" ttp:frameRate="25"
            ttp:tickRate="10000000" xml:lang="en">
          <head><styling><style xml:id="s1"/></styling></head>
          <body>
            <div>
              <p begin="00:00:00.500" end="00:00:01.500">first <span tts:fontStyle="italic">cue</span></p>
              <p begin="22500000t" dur="7500000t">second &amp;
                 more</p>
              <p begin="00:00:03:12" end="00:00:04:12">two<br/>lines</p>
            </div>
            <div begin="4s"><p begin="750ms" end="1.5s">in a timed div &lt;3</p><p begin="9s">no end</p></div>
          </body>
        </tt>
        """

    @Test func paragraphsBecomeCuesOnTheMediaClock() throws {
        let cues = try TTML.cues(of: Array(Self.imsc.utf8))
        #expect(cues.map(\.text) == ["first cue", "second &amp; more", "two\nlines", "in a timed div &lt;3"])
        #expect(cues.map(\.start) == [0.5, 2.25, 3.48, 4.75])
        #expect(cues.map(\.end) == [1.5, 3, 4.48, 5.5])
        #expect(TTML.isTTML(Array(Self.imsc.utf8)))
        #expect(TTML.isTTML(Array("\u{FEFF}<tt:tt xmlns:tt='http://www.w3.org/ns/ttml'/>".utf8)))
        #expect(!TTML.isTTML(Array("<MPD/>".utf8)) && !TTML.isTTML(Array("WEBVTT\n".utf8)))
    }

    @Test func aBadTimeOrNotTTMLIsRefused() {
        #expect(throws: StreamParseError.self) { try TTML.cues(of: Array("<tt><body><p begin='soon' end='1s'>x</p></body></tt>".utf8)) }
        #expect(throws: StreamParseError.self) { try TTML.cues(of: Array("<MPD/>".utf8)) }
        #expect(throws: StreamParseError.self) { try TTML.cues(of: Array("<!DOCTYPE tt [<!ENTITY a 'b'>]><tt/>".utf8)) }
    }
}
