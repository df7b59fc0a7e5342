import Foundation
import Testing
import VFetchCache
import VFetchCore

@testable import VFetchServe

/// `CacheStatus` (`GET /status`) and `CacheListing` (`vfetch cache ls --json`) in JSON: what each leaves out and
/// what it writes as `null`, and that a decoded object encodes to the same text. (The real server's and the real
/// command's objects are pinned in the CLI's `JSONOutputTests`.)
struct CacheJSONTests {
    /// Keys sorted, slashes as they are: how serve and `vfetch` print.
    static func text(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A media playlist of two segments, one of them cached whole and the other in part.
    static let stream = CachedStream.group(
        documents: [
            CachedStream.Document(
                id: "s1", url: "http://o/s.m3u8", variants: ["http://o/s.m3u8"],
                files: ["http://o/s.m3u8": ["http://o/0.ts", "http://o/1.ts"]],
                bytesOnDisk: 10, lastAccess: 7.5)
        ],
        files: [
            CachedStream.File(id: "f1", url: "http://o/0.ts", bytesCached: 100, bytesOnDisk: 4096, isComplete: true, lastAccess: 1),
            CachedStream.File(id: "f2", url: "http://o/1.ts", bytesCached: 50, bytesOnDisk: 4096, isComplete: false, lastAccess: 2),
        ])[0]

    @Test func aStatusFileLeavesOutItsLengthAndPlayableUntilTheLengthIsKnown() throws {
        let unknown = CacheStatus.File(
            id: "f0", url: "http://o/a.mp4", key: "http://o/a.mp4", length: nil, bytesCached: 0, bytesOnDisk: 0, isComplete: false,
            state: "empty", lastAccess: 1, readers: 1, isDownloading: true, playable: nil)
        var known = unknown
        (known.id, known.length, known.bytesCached, known.playable) = ("f1", 100, 100, [0...2.5])
        (known.isComplete, known.state, known.readers, known.isDownloading) = (true, "complete", 0, false)
        let status = CacheStatus(
            entries: [.file(unknown), .stream(CacheStatus.Stream(Self.stream, parts: [known]))], bytesCached: 100, readers: 1)
        let text = try Self.text(status)
        #expect(
            text == #"{"bytes_cached":100,"entries":["#
                + #"{"bytes_cached":0,"bytes_on_disk":0,"complete":false,"downloading":true,"id":"f0","key":"http://o/a.mp4","kind":"file","#
                + #""last_access":1,"readers":1,"state":"empty","url":"http://o/a.mp4"},"#
                + #"{"bytes_cached":150,"bytes_on_disk":8202,"complete":false,"downloading":false,"id":"s1","kind":"stream","#
                + #""last_access":7.5,"parts":[{"bytes_cached":100,"bytes_on_disk":0,"complete":true,"downloading":false,"id":"f1","#
                + #""key":"http://o/a.mp4","kind":"file","last_access":1,"length":100,"playable":[[0,2.5]],"readers":0,"#
                + #""state":"complete","url":"http://o/a.mp4"}],"readers":0,"segments":2,"segments_cached":1,"state":"partial","#
                + #""url":"http://o/s.m3u8","variants":["http://o/s.m3u8"],"variants_read":["http://o/s.m3u8"]}],"readers":1}"#)
        let decoded = try JSONDecoder().decode(CacheStatus.self, from: Data(text.utf8))
        #expect(decoded == status)
    }

    @Test func aListedFileWritesNullForWhatItLacks() throws {
        let file = CacheListing.File(
            id: "f1", url: "http://o/a.mp4", key: "k", length: nil, bytesCached: 0, bytesOnDisk: 0, isComplete: false, state: "failed",
            error: "manifest damaged", lastAccess: 2)
        var fine = file
        (fine.error, fine.state) = (nil, "empty")
        let entries: [CacheListing.Entry] = [.file(file), .file(fine), .stream(CacheListing.Stream(Self.stream.redacted, parts: [fine]))]
        let lines = try entries.map(Self.text)
        #expect(
            lines[0] == #"{"bytes_cached":0,"bytes_on_disk":0,"complete":false,"error":"manifest damaged","id":"f1","key":"k","#
                + #""kind":"file","last_access":2,"length":null,"state":"failed","url":"http://o/a.mp4"}"#)
        #expect(lines[1].contains(#""error":null"#) && lines[1].contains(#""length":null"#), "\(lines[1])")
        #expect(
            lines[2] == #"{"bytes_cached":150,"bytes_on_disk":8202,"complete":false,"id":"s1","kind":"stream","last_access":7.5,"#
                + #""parts":[\#(lines[1])],"segments":2,"segments_cached":1,"state":"partial","url":"http://o/s.m3u8","#
                + #""variants":["http://o/s.m3u8"],"variants_read":["http://o/s.m3u8"]}"#)
        let decoded = try lines.map { try JSONDecoder().decode(CacheListing.Entry.self, from: Data($0.utf8)) }
        #expect(decoded == entries)
    }

    @Test func anEntryOfAnotherKindOrARangeOutOfOrderIsRefused() {
        let file =
            #"{"bytes_cached":0,"bytes_on_disk":0,"complete":false,"downloading":false,"id":"f","key":"k","last_access":1,"#
            + #""readers":0,"state":"empty","url":"u","length":9,"playable":[[2,1]],"kind":"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CacheStatus.Entry.self, from: Data((file + #""file"}"#).utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CacheStatus.Entry.self, from: Data((file + #""dir"}"#).utf8)) }
        let fixed = file.replacingOccurrences(of: "[[2,1]]", with: "[[1,2]]") + #""file"}"#
        #expect(throws: Never.self) { try JSONDecoder().decode(CacheStatus.Entry.self, from: Data(fixed.utf8)) }
    }
}
