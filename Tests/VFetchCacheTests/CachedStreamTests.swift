import Foundation
import Testing

@testable import VFetchCache
@testable import VFetchCore

@Suite struct CachedStreamTests {
    static let master = "http://o/m/master.m3u8"
    static let low = "http://o/m/low/index.m3u8"
    static let high = "http://o/m/high/index.m3u8"
    static let audio = "http://o/m/audio/index.m3u8"

    /// A complete file (or one with `cached` of 100 bytes) at `url`.
    static func file(_ url: String, cached: Int64 = 100, at time: Double = 1) -> CachedStream.File {
        CachedStream.File(
            id: CacheIndex.id(forKey: url), url: url, bytesCached: cached, bytesOnDisk: 4096, isComplete: cached == 100,
            lastAccess: time)
    }

    static func media(_ url: String, _ files: [String], time: Double = 1) -> CachedStream.Document {
        CachedStream.Document(
            id: CacheIndex.id(forKey: CacheIndex.playlistKey(url: url)), url: url, variants: [url], files: [url: files], bytesOnDisk: 10,
            lastAccess: time)
    }

    static let masterDocument = CachedStream.Document(
        id: CacheIndex.id(forKey: CacheIndex.playlistKey(url: master)), url: master, variants: [low, high], renditions: [audio],
        bytesOnDisk: 10, lastAccess: 1)

    /// The files of a variant: an init section, three segments and the key every variant shares.
    static func parts(_ variant: String) -> [String] {
        let base = variant.replacingOccurrences(of: "index.m3u8", with: "")
        return [base + "init.mp4", base + "0.m4s", base + "1.m4s", base + "2.m4s", "http://o/m/key"]
    }

    @Test func aMasterAndTheFilesOfItsVariantsAreOneStream() throws {
        let documents = [
            Self.masterDocument, Self.media(Self.low, Self.parts(Self.low)), Self.media(Self.high, Self.parts(Self.high), time: 9),
        ]
        // A player read the low variant: its init, two segments whole, one begun, and the shared key.
        let files =
            Self.parts(Self.low).prefix(3).map { Self.file($0) } + [
                Self.file(Self.parts(Self.low)[3], cached: 40), Self.file("http://o/m/key"),
            ]
            + [Self.file("http://o/film.mp4", at: 50)]
        let streams = CachedStream.group(documents: documents, files: files)
        let stream = try #require(streams.first)
        #expect(streams.count == 1)
        #expect(stream.id == Self.masterDocument.id)
        #expect(stream.url == Self.master)
        #expect(stream.variants == [Self.low, Self.high])
        #expect(stream.variantsRead == [Self.low], "the shared key says nothing of the high variant")
        #expect((stream.segmentsCached, stream.segments) == (4, 5))
        #expect(stream.state == "partial" && !stream.isComplete)
        #expect(stream.bytesCached == 440)
        #expect(stream.bytesOnDisk == 5 * 4096 + 3 * 10, "its files and the three kept playlists")
        #expect(stream.lastAccess == 9)
        #expect(Set(stream.parts) == Set(files.prefix(5).map(\.id)), "not the film")
        #expect(Set(stream.playlists) == Set(documents.map(\.id)))
    }

    @Test func aSwitchOfVariantCountsTheFilesOfBoth() throws {
        let documents = [Self.masterDocument, Self.media(Self.low, Self.parts(Self.low)), Self.media(Self.high, Self.parts(Self.high))]
        let files = (Self.parts(Self.low).prefix(2) + Self.parts(Self.high)).map { Self.file($0) }
        let stream = try #require(CachedStream.group(documents: documents, files: files).first)
        #expect(stream.variantsRead == [Self.low, Self.high])
        #expect((stream.segmentsCached, stream.segments) == (7, 9), "the key counts once")
    }

    @Test func aMediaPlaylistPlayedAloneIsAStreamOfOneVariant() throws {
        let url = "http://o/s/index.m3u8"
        let parts = ["http://o/s/init.mp4", "http://o/s/segment0.m4s", "http://o/s/segment1.m4s"]
        // Before any file is cached: its one variant is what a player reads.
        let empty = try #require(CachedStream.group(documents: [Self.media(url, parts)], files: []).first)
        #expect((empty.segmentsCached, empty.segments, empty.state) == (0, 3, "empty"))
        #expect(empty.variantsRead == [url] && empty.parts.isEmpty)
        let stream = try #require(CachedStream.group(documents: [Self.media(url, parts)], files: parts.map { Self.file($0) }).first)
        #expect((stream.segmentsCached, stream.segments, stream.state) == (3, 3, "complete"))
        #expect(stream.isComplete && stream.bytesCached == 300)
        #expect(stream.playlists == [Self.media(url, parts).id])
    }

    @Test func aDASHManifestsRepresentationsAreItsVariantsAndItsAudioIsReadBeside() throws {
        let mpd = "http://o/d/manifest.mpd"
        let video = ["http://o/d/v-init.mp4", "http://o/d/v1.m4s", "http://o/d/v2.m4s"]
        let small = ["http://o/d/s-init.mp4", "http://o/d/s1.m4s", "http://o/d/s2.m4s"]
        let audio = ["http://o/d/a-init.mp4", "http://o/d/a1.m4s", "http://o/d/a2.m4s"]
        let document = CachedStream.Document(
            id: CacheIndex.id(forKey: CacheIndex.playlistKey(url: mpd)), url: mpd, variants: [mpd + "#v", mpd + "#s"],
            renditions: [mpd + "#a"], files: [mpd + "#v": video, mpd + "#s": small, mpd + "#a": audio])
        let stream = try #require(CachedStream.group(documents: [document], files: (video + audio).map { Self.file($0) }).first)
        #expect(stream.variants == [mpd + "#v", mpd + "#s"])
        #expect(stream.variantsRead == [mpd + "#v"])
        #expect((stream.segmentsCached, stream.segments) == (6, 6))
        #expect(stream.parts.count == 6)
    }

    @Test func filesOfNoKeptPlaylistAndListsNeverKeptStayOut() {
        // A live playlist keeps no copy: its segments are plain files. A master whose variant playlist
        // was never kept counts none of that variant's files.
        let files = ["http://o/live/1.ts", "http://o/m/low/0.m4s"].map { Self.file($0) }
        let streams = CachedStream.group(documents: [Self.masterDocument], files: files)
        #expect(streams.count == 1)
        #expect(streams.first?.parts == [])
        #expect(streams.first?.segments == 0 && streams.first?.state == "empty")
    }

    @Test func aFileOfTwoStreamsIsCountedOnce() {
        let shared = "http://o/shared/0.ts"
        let documents = [Self.media("http://o/a.m3u8", [shared]), Self.media("http://o/b.m3u8", [shared])]
        let streams = CachedStream.group(documents: documents, files: [Self.file(shared)])
        #expect(streams.count == 2)
        #expect(streams.map(\.parts.count).reduce(0, +) == 1)
        #expect(streams.map(\.bytesCached).reduce(0, +) == 100)
    }
}
