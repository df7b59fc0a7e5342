import Foundation
import TestOrigin
import Testing

@testable import VFetchMedia

/// Bytes that would make libavformat reach beyond them (issue 27): playlists whose demuxers open
/// the URLs they list, and a compressed file a demuxer would inflate whole. Probing and remuxing
/// read only the bytes they are given, through the demuxers vfetch means to use.
@Suite struct HostileMediaTests {
    /// An HLS media playlist or a DASH manifest whose one segment is `url`.
    enum Playlist: String, CaseIterable, Sendable {
        case hls
        case dash

        func text(naming url: String) -> String {
            switch self {
            case .hls:
                "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\n\(url)\n#EXT-X-ENDLIST\n"
            case .dash:
                """
                <?xml version="1.0" encoding="utf-8"?>
                <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" minBufferTime="PT1S" \
                mediaPresentationDuration="PT10S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
                  <Period>
                    <AdaptationSet mimeType="video/mp4" contentType="video">
                      <Representation id="1" bandwidth="100000" codecs="avc1.42c01e" width="320" height="240">
                        <BaseURL>\(url)</BaseURL>
                      </Representation>
                    </AdaptationSet>
                  </Period>
                </MPD>

                """
            }
        }
    }

    @Test(arguments: Playlist.allCases)
    func probingAPlaylistOpensNothing(_ playlist: Playlist) async throws {
        let origin = try await TestOrigin.start()
        let fixture = try await Fixture.fragmentedMP4.path
        origin.publish("/private.mp4", try bytes(of: fixture))
        let path = try temporaryFile(Array(playlist.text(naming: origin.url("/private.mp4")).utf8), name: "video.mp4")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = await #expect(throws: MediaError.self) { try await withProbe(path: path) { $0.info } }
        try await origin.shutdown()
        #expect(origin.requests.isEmpty, "\(origin.requests.map(\.path))")
        guard case .invalidData(let message)? = error else {
            Issue.record("\(String(describing: error)), expected .invalidData")
            return
        }
        #expect(message.contains("as \(playlist.rawValue), a format vfetch does not open"), "\(message)")
    }

    /// A segment that is itself an HLS playlist, naming a private address, then a local file: the
    /// remuxer reads neither, and says why.
    @Test func remuxingAPlaylistSegmentOpensNothing() async throws {
        let origin = try await TestOrigin.start()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let marker = "vfetch-local-secret-\(UUID().uuidString)"
        let secret = directory + "/secret.ts"
        try "WEBVTT\n\n00:00.000 --> 00:05.000\n\(marker)\n".write(toFile: secret, atomically: true, encoding: .utf8)
        origin.publish("/private.ts", Array("WEBVTT\n\n00:00.000 --> 00:05.000\n\(marker)\n".utf8))

        for (index, target) in [origin.url("/private.ts"), "file://" + secret].enumerated() {
            let segment = directory + "/segment\(index).ts"
            try Playlist.hls.text(naming: target).write(toFile: segment, atomically: true, encoding: .utf8)
            let output = directory + "/out\(index).mkv"
            let error = await #expect(throws: MediaError.self) {
                try await onThread { () throws(MediaError) in
                    try StreamRemuxer.remux(tracks: [RemuxTrack(files: [segment])], to: output)
                }
            }
            if case .invalidData(let message)? = error {
                #expect(message.contains("as hls, a format vfetch does not open"), "\(message)")
            } else {
                Issue.record("\(target): \(String(describing: error)), expected .invalidData")
            }
            for path in [output, output + ".tmp"] {
                guard let written = FileManager.default.contents(atPath: path) else { continue }
                #expect(written.range(of: Data(marker.utf8)) == nil, "\(target): the output holds the marker")
            }
        }
        try await origin.shutdown()
        #expect(origin.requests.isEmpty, "\(origin.requests.map(\.path))")
    }

    /// 64 MiB of zeros gzipped (some 64 KiB), which libavformat's libgme demuxer would read as a
    /// game music file and inflate whole: refused before any demuxer reads it.
    @Test func gzippedZerosAreNotInflated() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/video.mp4"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 64 << 20)
        try handle.close()
        let gzip = try await runTool("gzip", ["-9", "-f", path])
        #expect(gzip.status == 0, "\(gzip.standardError)")
        let bomb = path + ".gz"
        #expect(try fileLength(bomb) < 1 << 20)

        let probed = await #expect(throws: MediaError.self) { try await withProbe(path: bomb) { $0.info } }
        let remuxed = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in
                try StreamRemuxer.remux(tracks: [RemuxTrack(files: [bomb])], to: directory + "/out.mp4")
            }
        }
        for error in [probed, remuxed] {
            guard case .invalidData(let message)? = error else {
                Issue.record("\(String(describing: error)), expected .invalidData")
                continue
            }
            #expect(message.contains("as libgme, a format vfetch does not open"), "\(message)")
        }
    }

    /// An MP4 whose `moov` is the fixture's, zlib-compressed into a QuickTime `cmov` box, which
    /// libavformat inflates to whatever size `cmvd` declares (a 255 KiB file: 256 MiB). Probing
    /// and remuxing refuse it before the mov demuxer reads it.
    @Test func compressedMovieHeaderIsRefused() async throws {
        let original = try bytes(of: try await Fixture.moovAtEndMP4.path)
        let moov = try #require(topLevelBoxes(original).last { $0.type == "moov" }).range
        let header = Array(original[Int(moov.lowerBound)..<Int(moov.upperBound)])
        let cmov = box("cmov", box("dcom", Array("zlib".utf8)) + box("cmvd", bigEndian(header.count) + zlib(header)))
        let path = try temporaryFile(Array(original[..<Int(moov.lowerBound)]) + box("moov", cmov), name: "video.mp4")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await expectRefusal(of: path, saying: "a compressed movie header (cmov), which vfetch does not open")
    }

    /// An ID3v2.4 tag with a zlib-compressed title frame before a Matroska file: libavformat reads
    /// an ID3v2 tag at the start of any input and inflates the frame to the size the frame
    /// declares (a 255 KiB frame: 256 MiB, held twice). The same tag uncompressed opens.
    @Test func compressedID3FrameIsRefused() async throws {
        let movie = try bytes(of: try await Fixture.matroska.path)
        let title = [3] + Array("A title".utf8)
        for compressed in [true, false] {
            let frame =
                compressed
                ? id3Frame("TIT2", flags: 0x0009, payload: bigEndian(title.count) + zlib(title))
                : id3Frame("TIT2", flags: 0, payload: title)
            let tag = Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame
            let path = try temporaryFile(tag + movie, name: "video.mkv")
            defer { try? FileManager.default.removeItem(atPath: path) }
            if compressed {
                try await expectRefusal(of: path, saying: "a compressed ID3v2 frame (TIT2), which vfetch does not open")
            } else {
                let info = try await withProbe(path: path) { $0.info }
                #expect(info.container == "matroska", "\(info)")
            }
        }
    }

    /// libavformat reads in pieces of its choosing, so a compressed header may be cut between two
    /// reads: it is found at every cut, and the same bytes with no header at all pass.
    @Test func aHeaderCutBetweenTwoReadsIsFound() {
        let title = [3] + Array("A title".utf8)
        let frame = id3Frame("TIT2", flags: 0x0009, payload: bigEndian(title.count) + zlib(title))
        let files: [(bytes: [UInt8], refusal: String?)] = [
            (Array(repeating: 0x49, count: 40) + box("dcom", Array("zlib".utf8)) + box("cmvd", bigEndian(4)) + [1, 2], "cmov"),
            (Array("dI".utf8) + Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame, "ID3v2"),
            (Array(repeating: 0x49, count: 40) + box("dcom", Array("zlia".utf8)) + box("cmvd", bigEndian(4)) + [1, 2], nil),
        ]
        for (bytes, refusal) in files {
            let source = BytesInMemory(bytes)
            for cut in 0...bytes.count {
                var headers = CompressedHeaders()
                let verdicts = [0..<cut, cut..<bytes.count].map { range in
                    bytes[range].withUnsafeBytes { headers.verdict(on: $0, at: Int64(range.lowerBound), in: source) }
                }
                let found = verdicts.compactMap { $0 }
                if let refusal {
                    #expect(found.count == 1, "cut at \(cut): \(verdicts)")
                    guard case .refused(let reason)? = found.first else { continue }
                    #expect(reason.contains(refusal), "cut at \(cut): \(reason)")
                } else {
                    #expect(found.isEmpty, "cut at \(cut): \(verdicts)")
                }
            }
        }
    }

    /// The backstop for buffers libavformat sizes by what the bytes declare (a box's stated length,
    /// a decoded frame of the dimensions a stream claims): libavutil allocates no block above 512 MiB.
    @Test func noAllocationAboveTheCap() {
        _ = LibAV.silenced
        let within = LibAV.allocate(64 << 20)
        #expect(within != nil)
        LibAV.free(within)
        let above = LibAV.allocate(LibAV.maxAllocation + 1)
        #expect(above == nil)
        LibAV.free(above)
    }

    /// Probing and remuxing `path` both fail with `.invalidData` saying `reason`.
    private func expectRefusal(of path: String, saying reason: String) async throws {
        let probed = await #expect(throws: MediaError.self) { try await withProbe(path: path) { $0.info } }
        let output = path + ".out.mkv"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let remuxed = await #expect(throws: MediaError.self) {
            try await onThread { () throws(MediaError) in
                try StreamRemuxer.remux(tracks: [RemuxTrack(files: [path])], to: output)
            }
        }
        for error in [probed, remuxed] {
            guard case .invalidData(let message)? = error else {
                Issue.record("\(String(describing: error)), expected .invalidData")
                continue
            }
            #expect(message.contains(reason), "\(message)")
        }
    }

    private func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        bigEndian(8 + payload.count) + Array(type.utf8) + payload
    }

    private func id3Frame(_ name: String, flags: UInt16, payload: [UInt8]) -> [UInt8] {
        Array(name.utf8) + syncsafe(payload.count) + [UInt8(flags >> 8), UInt8(flags & 0xff)] + payload
    }

    private func bigEndian(_ value: Int) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    }

    private func syncsafe(_ value: Int) -> [UInt8] {
        [21, 14, 7, 0].map { UInt8(value >> $0 & 0x7f) }
    }

    /// `bytes` as a zlib stream of stored (uncompressed) deflate blocks: what matters here is that
    /// libavformat inflates it, not how much.
    private func zlib(_ bytes: [UInt8]) -> [UInt8] {
        var stream: [UInt8] = [0x78, 0x01]
        var blocks = stride(from: 0, to: bytes.count, by: 0xffff).map { bytes[$0..<min($0 + 0xffff, bytes.count)] }
        if blocks.isEmpty { blocks = [[]] }
        for (index, block) in blocks.enumerated() {
            let length = UInt16(block.count)
            stream += [index == blocks.count - 1 ? 1 : 0, UInt8(length & 0xff), UInt8(length >> 8)]
            stream += [UInt8(~length & 0xff), UInt8(~length >> 8)] + block
        }
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return stream + bigEndian(Int(b << 16 | a))
    }
}

/// A whole file in memory.
private final class BytesInMemory: MediaByteSource {
    let bytes: [UInt8]
    var length: Int64 { Int64(bytes.count) }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        guard offset < length else { return .endOfFile }
        let count = min(buffer.count, bytes.count - Int(offset))
        bytes[Int(offset)..<Int(offset) + count].withUnsafeBytes { buffer.copyMemory(from: $0) }
        return .bytes(count)
    }
}
