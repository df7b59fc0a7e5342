import Testing

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
