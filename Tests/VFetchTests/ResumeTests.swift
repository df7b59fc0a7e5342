import Foundation
import TestOrigin
import Testing
import VFetch

/// Resuming from the manifest: reuse exactly the saved bytes of the same file, never splice another.
@Suite struct ResumeTests {
    static let mib = 1 << 20

    /// Starts a download over two connections and cancels it once `bytes` are saved; returns the saved byte count.
    func interrupt(_ url: String, output: String, after bytes: Int64) async throws -> Int64 {
        var options = DownloadOptions()
        options.connections = 2
        let download = Download(url: url, to: .file(output), options: options)
        let running = Task { try await download.run() }
        var seen: Int64 = 0
        for await event in download.events {
            if case .progress(let progress) = event {
                seen = progress.bytesDone
                if seen >= bytes { break }
            }
        }
        download.cancel()
        await #expect(throws: DownloadError.interrupted) { try await running.value }
        #expect(exists(output + ".vfetch"), "a cancelled download leaves its manifest")
        return try PartialDownload(outputPath: output).bytesDone
    }

    /// Slow enough that the interrupted run is still going when a busy test machine gets round to cancelling it.
    func throttled(_ rate: Int = 128 << 10) -> OriginBehavior {
        var behavior = OriginBehavior()
        behavior.bytesPerSecond = rate
        return behavior
    }

    @Test func continuesWhereItStoppedAndFetchesOnlyWhatIsMissing() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 31)
            origin.publish("/a.mp4", bytes, behavior: throttled())
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            #expect(saved > 0)
            let servedBefore = origin.bytesServed("/a.mp4")
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.resumedBytes == saved)
            #expect(second.notices.contains { $0.hasPrefix("resuming") })
            let servedAfter = origin.bytesServed("/a.mp4") - servedBefore
            // Only the missing bytes, plus at most a little in flight when a probe or split is cut short.
            #expect(servedAfter <= bytes.count - Int(saved) + Self.mib, "served \(servedAfter) after resuming \(saved)")
            #expect(!exists(output + ".vfetch") && !exists(output + ".part"))
            let resumedRequests = origin.requests.filter { $0.header("if-range") != nil }
            #expect(!resumedRequests.isEmpty, "segments of a resumed download send If-Range")
        }
    }

    @Test func aRemoteChangeBetweenRunsGivesTheNewFile() async throws {
        try await withOrigin { origin, directory in
            let old = randomBytes(4 * Self.mib, seed: 32)
            let new = randomBytes(4 * Self.mib, seed: 33)
            origin.publish("/a.mp4", old, behavior: throttled())
            let output = directory + "/a.mp4"
            _ = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            origin.replace("/a.mp4", with: new)
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(summary.resumedBytes == 0)
            #expect(second.notices.contains { $0.contains("remote file changed") && $0.contains("starting over") })
            #expect(try sha256(file: output) == sha256(new))
        }
    }

    /// The probe still matches the saved bytes, then the file changes under the resumed download:
    /// it starts over once and ends with the new file, never a splice of both.
    @Test func aRemoteChangeDuringTheResumeStartsOverWithTheNewFile() async throws {
        try await withOrigin { origin, directory in
            let old = randomBytes(4 * Self.mib, seed: 36)
            let new = randomBytes(4 * Self.mib, seed: 37)
            var behavior = throttled()
            behavior.changeAfterBytes = .max
            behavior.changedBytes = new
            origin.publish("/a.mp4", old, behavior: behavior)
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            #expect(saved > 0)
            // The change comes 64 KiB into the resumed run; dropped connections make it ask again after it.
            behavior.bytesPerSecond = 1 << 20
            behavior.changeAfterBytes = origin.bytesServed("/a.mp4") + (64 << 10)
            behavior.dropAfterBytes = 256 << 10
            behavior.dropTimes = 1000
            origin.setBehavior("/a.mp4", behavior)
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            #expect(second.notices.contains { $0.hasPrefix("resuming") })
            #expect(second.notices.contains { $0.contains("changed during the resume") && $0.contains("starting over") })
            _ = try second.result.get()
            #expect(try sha256(file: output) == sha256(new))
        }
    }

    enum Damage: String, CaseIterable {
        case flippedByte, truncated, otherDownloadsManifest, emptyFile
    }

    @Test(arguments: Damage.allCases)
    func aDamagedManifestIsDetectedAndTheDownloadStartsOver(damage: Damage) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 34)
            origin.publish("/a.mp4", bytes, behavior: throttled())
            origin.publish("/b.mp4", randomBytes(4 * Self.mib, seed: 35), behavior: throttled())
            let output = directory + "/a.mp4"
            _ = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            let manifestURL = URL(fileURLWithPath: output + ".vfetch")
            var manifest = try Data(contentsOf: manifestURL)
            switch damage {
            case .flippedByte: manifest[manifest.count / 3] ^= 0x20
            case .truncated: manifest = manifest.prefix(manifest.count - 10)
            case .emptyFile: manifest = Data()
            case .otherDownloadsManifest:
                _ = try await interrupt(origin.url("/b.mp4"), output: directory + "/b.mp4", after: Int64(Self.mib) / 2)
                manifest = try Data(contentsOf: URL(fileURLWithPath: directory + "/b.mp4.vfetch"))
            }
            try manifest.write(to: manifestURL)
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(summary.resumedBytes == 0)
            #expect(second.notices.contains { $0.hasSuffix("starting over") }, "notices: \(second.notices)")
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test func withoutValidatorsItRestartsUnlessTheLengthIsTrusted() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 36)
            var behavior = throttled()
            behavior.sendsValidators = false
            origin.publish("/a.mp4", bytes, behavior: behavior)
            let output = directory + "/a.mp4"
            _ = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            let cautious = await fetch(origin.url("/a.mp4"), to: .file(output))
            #expect(try cautious.result.get().resumedBytes == 0)
            #expect(cautious.notices.contains { $0.contains("no ETag or Last-Modified") })
            try FileManager.default.removeItem(atPath: output)

            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            var trusting = DownloadOptions()
            trusting.trustLength = true
            let resumed = try await fetch(origin.url("/a.mp4"), to: .file(output), options: trusting).result.get()
            #expect(resumed.resumedBytes == saved)
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test func restartIgnoresTheManifest() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 37)
            origin.publish("/a.mp4", bytes, behavior: throttled())
            let output = directory + "/a.mp4"
            _ = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            var options = DownloadOptions()
            options.restart = true
            let summary = try await fetch(origin.url("/a.mp4"), to: .file(output), options: options).result.get()
            #expect(summary.resumedBytes == 0)
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    @Test func aSecondDownloadToTheSameFileIsRefused() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/a.mp4", randomBytes(4 * Self.mib, seed: 38), behavior: throttled())
            let output = directory + "/a.mp4"
            // Two connections at 128 KiB/s: the first is still running when the second starts.
            var slow = DownloadOptions()
            slow.connections = 2
            let first = Download(url: origin.url("/a.mp4"), to: .file(output), options: slow)
            let running = Task { try await first.run() }
            for await event in first.events {
                if case .progress = event { break }
            }
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            #expect(second.error == .busy(output + ".part"))
            first.cancel()
            _ = await running.result
        }
    }
}
