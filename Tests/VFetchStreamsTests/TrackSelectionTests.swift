import Foundation
import Testing

@testable import VFetchStreams

@Suite struct TrackSelectionTests {
    static func playlist(_ name: String) -> SegmentSource { .playlist(URL(string: "https://cdn.example/\(name).m3u8")!) }

    /// A master like Apple's examples: three variants sharing an audio group with two languages, one audio-only group.
    static let catalog = StreamCatalog(
        format: .hls,
        tracks: [
            StreamTrack(
                id: "v0", kind: .video, bandwidth: 800_000, width: 640, height: 360, codecs: ["avc1.4d401e", "mp4a.40.2"],
                audioGroup: "aac", segments: playlist("360")),
            StreamTrack(
                id: "v1", kind: .video, bandwidth: 5_000_000, width: 1920, height: 1080, codecs: ["hvc1.2.4.L123", "mp4a.40.2"],
                audioGroup: "aac", segments: playlist("1080")),
            StreamTrack(
                id: "v2", kind: .video, bandwidth: 2_500_000, width: 1280, height: 720, codecs: ["avc1.64001f", "mp4a.40.2"],
                audioGroup: "aac", segments: playlist("720")),
            StreamTrack(
                id: "AUDIO/aac/English", kind: .audio, bandwidth: 128_000, language: "en", audioGroup: "aac", isDefault: true,
                segments: playlist("en")),
            StreamTrack(
                id: "AUDIO/aac/Deutsch", kind: .audio, bandwidth: 192_000, language: "de-DE", audioGroup: "aac", segments: playlist("de")),
            StreamTrack(
                id: "AUDIO/other/English", kind: .audio, language: "en", audioGroup: "other", isDefault: true, segments: playlist("other")),
            StreamTrack(id: "SUBTITLES/subs/English", kind: .subtitles, language: "en", segments: playlist("subs")),
        ])

    func ids(_ selector: String?) throws -> [String] { try TrackSelection(selector).tracks(of: Self.catalog).map(\.id) }

    @Test func theDefaultIsTheHighestBandwidthWithTheDefaultAudioOfItsGroup() throws {
        #expect(try ids(nil) == ["v1", "AUDIO/aac/English"])
        #expect(try ids("best") == ["v1", "AUDIO/aac/English"])
        #expect(try ids("worst") == ["v0", "AUDIO/aac/English"])
    }

    @Test func selectorsNarrowTheVariantAndTheAudio() throws {
        #expect(try ids("720p") == ["v2", "AUDIO/aac/English"])
        #expect(try ids("height<=719") == ["v0", "AUDIO/aac/English"])
        #expect(try ids("bandwidth<=3M, codec=avc1") == ["v2", "AUDIO/aac/English"])
        #expect(try ids("bw>1m,worst") == ["v2", "AUDIO/aac/English"])
        #expect(try ids("codec=hvc1") == ["v1", "AUDIO/aac/English"])
        #expect(try ids("lang=de") == ["v1", "AUDIO/aac/Deutsch"])
        #expect(try ids("id=v0,id=SUBTITLES/subs/English") == ["v0", "SUBTITLES/subs/English"])
        // A bare id, as yt-dlp's `-f 137`.
        #expect(try ids("V0,SUBTITLES/subs/English") == ["v0", "SUBTITLES/subs/English"])
    }

    @Test func severalAudioLanguagesAndSubtitlesAreChosenByLanguage() throws {
        #expect(try ids("lang=de,lang=en") == ["v1", "AUDIO/aac/Deutsch", "AUDIO/aac/English"])
        // Every audio track of the variant's group, never another group's.
        #expect(try ids("lang=all") == ["v1", "AUDIO/aac/English", "AUDIO/aac/Deutsch"])
        #expect(try ids("720p,sub=en") == ["v2", "AUDIO/aac/English", "SUBTITLES/subs/English"])
        #expect(try ids("sub=all,lang=de") == ["v1", "AUDIO/aac/Deutsch", "SUBTITLES/subs/English"])
        // Two terms naming one track keep it once.
        #expect(try ids("lang=en,lang=e") == ["v1", "AUDIO/aac/English"])
        #expect(throws: StreamParseError.self) { try ids("lang=en,lang=fr") }
        #expect(throws: StreamParseError.self) { try ids("sub=de") }
    }

    @Test func anHLSVariantTakesSubtitlesOfItsOwnGroupOnly() throws {
        let catalog = StreamCatalog(
            format: .hls,
            tracks: [
                StreamTrack(id: "v0", kind: .video, bandwidth: 1, subtitleGroup: "a", segments: Self.playlist("v0")),
                StreamTrack(id: "SUBTITLES/b/en", kind: .subtitles, language: "en", subtitleGroup: "b", segments: Self.playlist("b")),
                StreamTrack(id: "SUBTITLES/a/en", kind: .subtitles, language: "en", subtitleGroup: "a", segments: Self.playlist("a")),
            ])
        #expect(try TrackSelection("sub=en").tracks(of: catalog).map(\.id) == ["v0", "SUBTITLES/a/en"])
    }

    @Test func aSelectorNothingMatchesNamesTheTracks() {
        #expect(throws: StreamParseError.self) { try ids("height>2000") }
        #expect(throws: StreamParseError.self) { try ids("lang=fr") }
        #expect(throws: StreamParseError.self) { try ids("id=v9") }
        #expect(throws: StreamParseError.self) { try ids("fastest") }
        do {
            _ = try ids("codec=av01")
            Issue.record("av01 matched")
        } catch {
            #expect("\(error)".contains("tracks: v0, v1, v2, AUDIO/aac/English"))
        }
    }

    @Test func aBadSelectorIsRefusedSayingWhatWorks() {
        for bad in ["height<=big", "size<3", "codec=", "height=>5", "v0;rm"] {
            #expect(throws: StreamParseError.self, "\(bad)") { try TrackSelection(bad) }
        }
    }

    @Test func aDASHCatalogGetsTheBestVideoAndTheBestAudio() throws {
        let dash = StreamCatalog(
            format: .dash,
            tracks: [
                StreamTrack(id: "video-1", kind: .video, bandwidth: 1_000_000, height: 480, segments: .none),
                StreamTrack(
                    id: "video-2", kind: .video, bandwidth: 3_000_000, height: 720,
                    segments: .list(SegmentList(segments: [], isComplete: true))),
                StreamTrack(id: "audio-1", kind: .audio, bandwidth: 64_000, segments: .list(SegmentList(segments: [], isComplete: true))),
                StreamTrack(id: "audio-2", kind: .audio, bandwidth: 128_000, segments: .list(SegmentList(segments: [], isComplete: true))),
            ])
        #expect(try TrackSelection(nil).tracks(of: dash).map(\.id) == ["video-2", "audio-2"])
    }
}
