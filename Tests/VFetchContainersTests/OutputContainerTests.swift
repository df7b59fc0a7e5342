import Testing

@testable import VFetchContainers
@testable import VFetchCore

struct OutputContainerTests {
    @Test func theExtensionNamesTheContainerAndAnUnknownOneNone() {
        #expect(OutputContainer(path: "/a/b.MKV") == .matroska)
        #expect(OutputContainer(path: "clip.m4v") == .mp4)
        #expect(OutputContainer(path: "dir.webm/clip") == .mp4)
        #expect(OutputContainer(path: "clip.avi") == nil)
        #expect(OutputContainer(path: "song.m4a")?.muxer == "ipod")
    }

    @Test func onlyWebMRefusesCodecs() {
        #expect(OutputContainer.webm.problem(codecs: ["vp09.00.10.08", "opus"]) == nil)
        #expect(OutputContainer.webm.problem(codecs: ["avc1.64001f", "mp4a.40.2"])?.contains("avc1.64001f") == true)
        #expect(OutputContainer.webm.problem(codecs: ["MPEG-TS"]) != nil)
        #expect(OutputContainer.mp4.problem(codecs: ["avc1.64001f", "vp09.00.10.08"]) == nil)
    }
}

@Suite struct LanguageCodeTests {
    @Test func playlistTagsBecomeTheThreeLetterCodesContainersHold() {
        #expect(LanguageCode.iso639_2("en", bibliographic: false) == "eng")
        #expect(LanguageCode.iso639_2("de-DE", bibliographic: false) == "deu")
        #expect(LanguageCode.iso639_2("de", bibliographic: true) == "ger")
        #expect(LanguageCode.iso639_2("ZH-Hant", bibliographic: true) == "chi")
        // Three letters stay, in the form asked for where the two differ.
        #expect(LanguageCode.iso639_2("fre", bibliographic: false) == "fra")
        #expect(LanguageCode.iso639_2("fra", bibliographic: true) == "fre")
        #expect(LanguageCode.iso639_2("yue", bibliographic: false) == "yue")
        // Unknown two-letter tags and anything not a language are left out, never written half-right.
        #expect(LanguageCode.iso639_2("xx", bibliographic: false) == nil)
        #expect(LanguageCode.iso639_2("e1", bibliographic: false) == nil)
        #expect(LanguageCode.iso639_2("", bibliographic: true) == nil)
        #expect(OutputContainer(path: "a.ts")?.holdsSubtitles == false)
        #expect(OutputContainer(path: "a.mkv")?.holdsSubtitles == true)
    }
}
