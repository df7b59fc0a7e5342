import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// Everything one process fetches from a host shares that host's budget, whatever fetches it: a
/// stream's playlists and segments and a file's ranges, together, on an origin that allows four
/// responses per client (503 beyond, as nginx's `limit_conn`), never go past the four.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the stream"))
struct SharedHostTests {
    @Test func aStreamAndAFileFromAHostThatAllowsFourShareItWithoutARefusal() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, directory in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 4
            origin.configuration = configuration
            // Every response paced, so that the two downloads run beside each other for a while.
            var paced = OriginBehavior()
            paced.bytesPerSecond = 256 << 10
            try origin.publishDirectory(fixture.directory, at: "/s", behavior: paced)
            let bytes = randomBytes(4 << 20, seed: 28)
            origin.publish("/file.bin", bytes, behavior: paced)

            var options = DownloadOptions()
            options.connections = 4
            let file = FileDownload(url: origin.url("/file.bin"), to: .file(directory + "/file.bin"), options: options)
            let stream = StreamDownload(url: origin.url("/s/" + fixture.entry), output: directory + "/stream.mp4", options: options)
            let fileEvents = Task { await file.events.reduce(into: [DownloadEvent]()) { $0.append($1) } }
            let streamEvents = Task { await stream.events.reduce(into: [DownloadEvent]()) { $0.append($1) } }
            async let fileRun = file.run()
            async let streamRun = stream.run()
            let (fileSummary, streamSummary) = try await (fileRun, streamRun)
            let events = await fileEvents.value + streamEvents.value

            // Neither saw a refusal, nor asked anything twice.
            let requests = origin.requests
            #expect(requests.filter { $0.status == 503 }.isEmpty, "\(requests.map { "\($0.status) \($0.path)" })")
            #expect(requests.allSatisfy { $0.status == 200 || $0.status == 206 })
            #expect(fileSummary.retries == 0)
            let notices = events.compactMap { if case .notice(let text) = $0 { text } else { nil } }
            #expect(notices.filter { $0.contains("Retry-After") }.isEmpty, "\(notices)")
            let segments = requests.map(\.path).filter { $0.hasPrefix("/s/") }
            #expect(Set(segments).count == segments.count, "every playlist and segment asked for once: \(segments)")
            // They did run side by side.
            let streamRequests = requests.indices.filter { requests[$0].path.hasPrefix("/s/") }
            let fileRequests = requests.indices.filter { requests[$0].path == "/file.bin" }
            #expect(fileRequests.contains { $0 > streamRequests.first! } && fileRequests.contains { $0 < streamRequests.last! })

            // Both are exact: the file's bytes, and the stream's frames as the source's.
            #expect(try sha256(file: directory + "/file.bin") == sha256(bytes))
            let track = try #require(streamSummary.tracks.first)
            let joined = directory + "/joined.ts"
            // MPEG-TS segments one after the other are one stream.
            let segmentBytes = try track.files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            try segmentBytes.reduce(Data(), +).write(to: URL(fileURLWithPath: joined))
            let frames = try await StreamFixture.videoFrames(of: joined)
            #expect(frames.count == StreamFixture.duration * StreamFixture.frameRate)
            #expect(frames == (try await StreamFixture.videoFrames(of: fixture.path(fixture.source))))
        }
    }
}
