import Testing

@testable import VFetchStreams

@Suite struct WebVTTTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func segmentsAreJoinedOnTheMediaClockWithRepeatedCuesOnce() throws {
        // As Apple's segmenter writes them: each segment maps its local zero to the video's 10 s
        // (MPEG-TS 900000); a cue spanning two segments is in both.
        let first =
            "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n1\n00:00.500 --> 00:01.500 align:start\nfirst <i>cue</i>\n\n"
            + "00:01.800 --> 00:02.400\nacross\n"
        let second =
            "\u{FEFF}WEBVTT\r\nX-TIMESTAMP-MAP=LOCAL:00:00:00.000,MPEGTS:900000\r\n\r\nNOTE a comment\r\n\r\n"
            + "00:00:01.800 --> 00:00:02.400\r\nacross\r\n\r\n00:00:02.500 --> 00:00:03.000\r\ntwo\r\nlines\r\n"
        let joined = try WebVTT.join([bytes(first), bytes(second)])
        #expect(
            String(decoding: joined, as: UTF8.self) == """
                WEBVTT

                00:00:10.500 --> 00:00:11.500 align:start
                first <i>cue</i>

                00:00:11.800 --> 00:00:12.400
                across

                00:00:12.500 --> 00:00:13.000
                two
                lines

                """)
    }

    @Test func withoutATimestampMapCuesKeepTheirTimes() throws {
        let cues = try WebVTT.cues(of: bytes("WEBVTT - a title\n\n01:02:03.004 --> 01:02:04.000\nx\n"))
        #expect(cues == [WebVTT.Cue(start: 3723.004, end: 3724, text: "x")])
        #expect(WebVTT.timestamp(3723.004) == "01:02:03.004")
    }

    @Test func blocksThatAreNotCuesAreSkippedAndNonWebVTTIsRefused() throws {
        let odd =
            "WEBVTT\n\nSTYLE\n::cue { color: red }\n\n00:01.000 --> 00:00.500\nbackwards\n\n00:61.000 --> 00:62.000\nbad\n\n"
            + "00:02.000 --> 00:03.000\n\n00:04.000 --> 00:05.000\nkept\n00:06.000 --> 00:07.000\nnot a cue\n"
        #expect(try WebVTT.cues(of: bytes(odd)).map(\.text) == ["kept"])
        #expect(throws: StreamParseError.self) { try WebVTT.join([bytes("WEBVTT\n"), bytes("<html>404</html>")]) }
        #expect(!WebVTT.isWebVTT(bytes("WEBVTTX")))
        #expect(WebVTT.isWebVTT(bytes("WEBVTT")))
    }
}
