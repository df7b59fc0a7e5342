import Foundation
import TestOrigin
import Testing
import VFetch

/// `import VFetch` alone, as an app would use it: one `Download` for a plain file and for a stream.
struct LibraryDownloadTests {
    @Test(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the stream"))
    func anHLSMasterIsSavedAsOneMP4WithTheSourcesFrames() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            var options = DownloadOptions()
            options.format = "worst"
            let download = Download(url: origin.url("/s/" + fixture.entry), to: .directory(directory), options: options)
            let events = Task {
                var seen: [DownloadEvent] = []
                for await event in download.events { seen.append(event) }
                return seen
            }
            let summary = try await download.run()
            let seen = await events.value
            // `master` says nothing: the name comes from the folder above it.
            #expect(summary.path == directory + "/s.mp4")
            #expect(summary.stream?.segments ?? 0 > 0)
            #expect(!exists(summary.path + ".parts"))
            #expect(
                try await StreamFixture.videoFrames(of: summary.path)
                    == (try await StreamFixture.videoFrames(of: fixture.path(fixture.sources[2]))))
            guard case .started(let info) = seen.first else {
                Issue.record("first event: \(String(describing: seen.first))")
                return
            }
            #expect(info.outputPath == summary.path)
            guard case .finished(let finished) = seen.last else {
                Issue.record("last event: \(String(describing: seen.last))")
                return
            }
            #expect(finished == summary)

            let again = Download(url: origin.url("/s/" + fixture.entry), to: .file(summary.path), options: options)
            await #expect(throws: DownloadError.alreadyComplete(summary.path)) { try await again.run() }
        }
    }

    @Test func aPlainFileIsByteExactThroughTheSameDownload() async throws {
        let bytes = randomBytes(3 << 20, seed: 91)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            let summary = try await Download(url: origin.url("/f.bin"), to: .file(directory + "/f.bin")).run()
            #expect(summary.stream == nil && summary.bytes == Int64(bytes.count))
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
        }
    }
}
