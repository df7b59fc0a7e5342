import Foundation
import TestOrigin
import Testing
import VFetch

#if canImport(Glibc)
    import Glibc
#endif

/// `probe`, as an app calls it with `import VFetch` alone: what `vfetch info` shows, as values.
struct ProbeTests {
    @Test(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the stream"))
    func aPlaylistURLIsAStreamWithItsTracks() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, _ in
            try origin.publishDirectory(fixture.directory, at: "/s")
            guard case .stream(let catalog) = try await probe(origin.url("/s/" + fixture.entry)) else {
                Issue.record("not a stream")
                return
            }
            #expect(catalog.format == "hls" && !catalog.isLive)
            #expect(catalog.tracks.filter { ["video", "muxed"].contains($0.kind) }.count == fixture.sources.count, "\(catalog.tracks)")
        }
    }

    @Test(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the stream"))
    func aRemoteFileIsMediaReadFromItsHeadAndIndexOnly() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let source = fixture.path(fixture.sources[0])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        try await withOrigin { origin, _ in
            origin.publish("/v.mp4", bytes)
            guard case .media(let report) = try await probe(origin.url("/v.mp4")) else {
                Issue.record("not media")
                return
            }
            #expect(report.length == Int64(bytes.count))
            #expect(report.info?.streams.contains { $0.kind == "video" } == true, "\(report)")
        }
    }

    @Test func whatCannotBeProbedSaysWhy() async throws {
        try await withOrigin { origin, directory in
            await #expect(throws: ProbeError.notFound(directory + "/none.mp4")) { try await probe(directory + "/none.mp4") }
            #expect(mkfifo(directory + "/pipe", 0o600) == 0)
            await #expect(throws: ProbeError.notARegularFile(directory + "/pipe", kind: "a FIFO")) {
                try await probe(directory + "/pipe")
            }
            try Data(randomBytes(100_000, seed: 7)).write(to: URL(fileURLWithPath: directory + "/noise.mp4"))
            do throws(ProbeError) {
                _ = try await probe(directory + "/noise.mp4")
                Issue.record("noise probed as media")
            } catch {
                guard case .notMedia = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            await #expect(throws: ProbeError.download(.httpStatus(404, url: origin.url("/gone.mp4")))) {
                try await probe(origin.url("/gone.mp4"))
            }
        }
    }
}
