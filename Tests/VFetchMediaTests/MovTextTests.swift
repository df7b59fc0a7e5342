import Testing

@testable import VFetchMedia

/// WebVTT cues as MP4 timed text samples.
@Suite struct MovTextTests {
    @Test func aCueBecomesItsPlainTextAfterATwoByteLength() {
        let sample = MovText.sample(fromWebVTT: Array("<v Bob>Hi &amp; <i>bye</i> &lt;3</v>".utf8))
        #expect(sample == [0, 11] + Array("Hi & bye <3".utf8))
        #expect(MovText.plainText("a &unknown; b & c &#38; <c.red>d") == "a &unknown; b & c &#38; d")
        #expect(MovText.sample(fromWebVTT: []) == [0, 0])
    }

    @Test func aTextLongerThanASampleHoldsIsCutAtACharactersStart() {
        let sample = MovText.sample(fromWebVTT: Array(String(repeating: "é", count: 40_000).utf8))
        let length = Int(sample[0]) << 8 | Int(sample[1])
        #expect(length == 65_534 && sample.count == length + 2)
        #expect(String(validating: sample[2...], as: UTF8.self) == String(repeating: "é", count: 32_767))
    }

    @Test func theSampleDescriptionIsLibavcodecs() {
        // ffmpeg -i a.vtt -c:s mov_text a.mp4 writes these 48 bytes (then the muxer's own `btrt`).
        #expect(MovText.sampleDescription.count == 48)
        #expect(
            Array(MovText.sampleDescription.suffix(18)) == [0, 0, 0, 0x12] + Array("ftab".utf8) + [0, 1, 0, 1, 5] + Array("Arial".utf8))
    }
}
