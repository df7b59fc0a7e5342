import Foundation
import TestOrigin
import Testing
import VFetchCore
import VFetchEngine

/// A stream's segments go to `NAME.parts/` as they arrive, at high `-c`: every byte exactly where it belongs,
/// whether the origin sends pieces (206) or a whole segment per connection (it ignores ranges).
@Suite struct StreamSegmentTests {
    static let segmentSize = 3 << 20  // three pieces or more each, at -c 32
    static let segments = 4

    @Test(arguments: [true, false])
    func largeSegmentsOverManyConnectionsArriveExactly(rangesSupported: Bool) async throws {
        try await withOrigin { origin, directory in
            var playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
            var sources: [[UInt8]] = []
            var behavior = OriginBehavior()
            behavior.supportsRanges = rangesSupported
            behavior.contentType = "video/mp2t"
            for index in 0..<Self.segments {
                let bytes = randomBytes(Self.segmentSize, seed: UInt64(index + 1))
                sources.append(bytes)
                origin.publish("/s/seg\(index).ts", bytes, behavior: behavior)
                playlist += "#EXTINF:2,\nseg\(index).ts\n"
            }
            // The last segment a byte range of the first, answered whole when ranges are ignored.
            playlist += "#EXTINF:2,\n#EXT-X-BYTERANGE:1500000@1000000\nseg0.ts\n#EXT-X-ENDLIST\n"
            var type = OriginBehavior()
            type.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/s/index.m3u8", Array(playlist.utf8), behavior: type)

            var options = DownloadOptions()
            options.connections = 32
            let download = StreamDownload(url: origin.url("/s/index.m3u8"), output: directory + "/out.ts", options: options)
            let drain = Task { for await _ in download.events {} }
            let summary = try await download.run()
            await drain.value
            let files = try #require(summary.tracks.first?.files)
            #expect(files.count == Self.segments + 1)
            for (index, file) in files.enumerated() {
                let expected = index < Self.segments ? sources[index] : Array(sources[0][1_000_000..<2_500_000])
                #expect(try sha256(file: file) == sha256(expected), "segment \(index)")
            }
        }
    }
}
