import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// Resuming from the manifest: reuse exactly the saved bytes of the same file, never splice another.
@Suite struct ResumeTests {
    static let mib = 1 << 20

    /// Starts a download over two connections and cancels it once `bytes` are saved; returns the saved byte count.
    func interrupt(_ url: String, output: String, after bytes: Int64) async throws -> Int64 {
        var options = DownloadOptions()
        options.connections = 2
        let download = FileDownload(url: url, to: .file(output), options: options)
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
            let prefix = try #require(try PartialDownload(outputPath: output).presentRanges.first)
            #expect(prefix.lowerBound == 0)
            let servedBefore = origin.bytesServed("/a.mp4")
            let requestsBefore = origin.requests.count
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
            // Its probe asks from the first byte not saved, not for the start it would drop.
            let probe = origin.requests.dropFirst(requestsBefore).first
            #expect(probe?.header("range") == "bytes=\(prefix.upperBound)-", "\(String(describing: probe))")
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

    /// The file became shorter than the bytes saved from its start: the probe asked from past its end
    /// gets a 416, asks again from the start, and the download starts over with the new file.
    @Test func aRemoteFileNowShorterThanTheSavedStartIsFetchedAnew() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/a.mp4", randomBytes(4 * Self.mib, seed: 58), behavior: throttled())
            let output = directory + "/a.mp4"
            _ = try await interrupt(origin.url("/a.mp4"), output: output, after: Int64(Self.mib) / 2)
            let prefix = try #require(try PartialDownload(outputPath: output).presentRanges.first)
            let new = randomBytes(Int(prefix.upperBound) / 2, seed: 59)
            origin.replace("/a.mp4", with: new)
            let requestsBefore = origin.requests.count
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(summary.resumedBytes == 0)
            #expect(second.notices.contains { $0.contains("remote file changed") && $0.contains("starting over") }, "\(second.notices)")
            #expect(try sha256(file: output) == sha256(new))
            let asked = origin.requests.dropFirst(requestsBefore).prefix(2).map { "\($0.header("range") ?? "") \($0.status)" }
            #expect(asked == ["bytes=\(prefix.upperBound)- 416", "bytes=0- 206"])
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

    // MARK: - A manifest that no longer describes its part

    // These run at 32 KiB/s a connection: a test process so busy that it hears of progress seconds
    // late still interrupts the download long before it ends.

    enum Forgery: String, CaseIterable {
        /// The bitmap and blocks_done claim every block; the trailer is recomputed, as docs/MANIFEST.md tells how.
        case bitmapOnly
        /// The same, and a tag (0) made up for each block the bitmap now claims.
        case bitmapAndTags
    }

    /// `manifest` edited to claim every block done, sealed again with a correct trailer.
    static func forged(_ manifest: Data, _ forgery: Forgery) throws -> Data {
        let line = try #require(manifest.split(separator: 0x0A).first)
        var object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        let length = try #require(object["length"] as? Int)
        let blockSize = try #require(object["block_size"] as? Int)
        let blockCount = (length + blockSize - 1) / blockSize
        let oldBits = try #require(object["blocks"] as? String)
        let old = try #require(Data(base64Encoded: oldBits))
        var bits = [UInt8](repeating: 0xFF, count: (blockCount + 7) / 8)
        if blockCount % 8 != 0 { bits[bits.count - 1] = UInt8((1 << (blockCount % 8)) - 1) }
        object["blocks"] = Data(bits).base64EncodedString()
        object["blocks_done"] = blockCount
        object["partial_blocks"] = []  // partial blocks within complete ones would be refused as malformed
        if forgery == .bitmapAndTags, let tags = object["block_tags"] as? String {
            // Each block recorded keeps its tag; each one claimed gets 0.
            var oldTags = Array(try #require(Data(base64Encoded: tags)))[...]
            var newTags: [UInt8] = []
            for block in 0..<blockCount {
                if old[block / 8] & (1 << (block % 8)) != 0 {
                    newTags += oldTags.prefix(4)
                    oldTags = oldTags.dropFirst(4)
                } else {
                    newTags += [0, 0, 0, 0]
                }
            }
            object["block_tags"] = Data(newTags).base64EncodedString()
        }
        let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return json + Data("\nsha256 \(sha256([UInt8](json)))\n".utf8)
    }

    /// Before manifests carried block tags, a manifest edited to claim every block, its trailer
    /// recomputed, was believed: the blocks never fetched stayed zeros in the result.
    @Test(arguments: Forgery.allCases)
    func aManifestForgedToClaimEveryBlockIsNotBelieved(forgery: Forgery) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 51)
            origin.publish("/a.mp4", bytes, behavior: throttled(32 << 10))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            let manifestURL = URL(fileURLWithPath: output + ".vfetch")
            try Self.forged(try Data(contentsOf: manifestURL), forgery).write(to: manifestURL)
            origin.setBehavior("/a.mp4", OriginBehavior())
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.resumedBytes <= saved, "notices: \(second.notices)")
        }
    }

    /// A manifest from before block tags (version 1) is trusted once, so an upgrade mid-download
    /// costs nothing, and rewritten bound to its part at once.
    @Test func aVersion1ManifestIsTrustedOnceAndRewrittenWithTags() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 55)
            origin.publish("/a.mp4", bytes, behavior: throttled(32 << 10))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            let manifestURL = URL(fileURLWithPath: output + ".vfetch")
            let line = try #require(try Data(contentsOf: manifestURL).split(separator: 0x0A).first)
            var object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            for key in ["part_device", "part_inode", "block_tags", "partial_blocks"] { object[key] = nil }
            object["version"] = 1
            let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            try (json + Data("\nsha256 \(sha256([UInt8](json)))\n".utf8)).write(to: manifestURL)

            let again = try await interrupt(origin.url("/a.mp4"), output: output, after: saved + 256 << 10)
            #expect(again > saved, "the version 1 blocks were kept")
            let rewritten = try #require(try Data(contentsOf: manifestURL).split(separator: 0x0A).first)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(rewritten)) as? [String: Any])
            #expect(fields["version"] as? Int == 3)
            #expect(fields["block_tags"] is String)
            origin.setBehavior("/a.mp4", OriginBehavior())
            let last = await fetch(origin.url("/a.mp4"), to: .file(output))
            #expect(try last.result.get().resumedBytes == again)
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    /// The part's bytes zeroed in place after the checkpoint (same file, same size), as a sparse
    /// copy, a punched hole or storage that lost its writes would leave it.
    @Test func aPartZeroedInPlaceIsFetchedAgain() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 52)
            origin.publish("/a.mp4", bytes, behavior: throttled(32 << 10))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            #expect(saved > 0)
            let part = try #require(FileHandle(forUpdatingAtPath: output + ".part"))
            try part.write(contentsOf: Data(count: bytes.count))
            try part.synchronize()
            try part.close()
            origin.setBehavior("/a.mp4", OriginBehavior())
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.resumedBytes == 0, "notices: \(second.notices)")
            #expect(second.notices.contains { $0.contains("differ") }, "notices: \(second.notices)")
        }
    }

    /// The part replaced by a copy made at the first interruption, after a second run got further:
    /// the manifest claims blocks the copy never held. A copy is checked block by block, not trusted.
    /// (What the first run saved of a partial block may be lost: the second run completed the block,
    /// which the copy holds only in part.)
    @Test func aPartReplacedByAnOlderCopyIsCheckedBlockByBlock() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 53)
            origin.publish("/a.mp4", bytes, behavior: throttled(32 << 10))
            let output = directory + "/a.mp4"
            let first = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            let firstBlocks = Int64(try Self.manifestLine(output)["blocks_done"] as? Int ?? -1)
            #expect(firstBlocks > 0)
            try FileManager.default.copyItem(atPath: output + ".part", toPath: directory + "/copy")
            let second = try await interrupt(origin.url("/a.mp4"), output: output, after: first + 256 << 10)
            #expect(second > first)
            #expect(rename(directory + "/copy", output + ".part") == 0)
            origin.setBehavior("/a.mp4", OriginBehavior())
            let third = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try third.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.resumedBytes >= firstBlocks * 65536 && summary.resumedBytes < second, "notices: \(third.notices)")
            #expect(third.notices.contains { $0.contains("not the file") }, "notices: \(third.notices)")
        }
    }

    /// A faithful copy (the pair moved to another disk, say) passes the check and keeps every block.
    @Test func aFaithfulCopyOfThePartKeepsItsBlocks() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 54)
            origin.publish("/a.mp4", bytes, behavior: throttled(32 << 10))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            try FileManager.default.copyItem(atPath: output + ".part", toPath: directory + "/copy")
            #expect(rename(directory + "/copy", output + ".part") == 0)
            origin.setBehavior("/a.mp4", OriginBehavior())
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(summary.resumedBytes == saved, "notices: \(second.notices)")
        }
    }

    /// The first line of the manifest at `output`: its snapshot, all of it after a run that stopped cleanly.
    static func manifestLine(_ output: String) throws -> [String: Any] {
        let line = try #require(try Data(contentsOf: URL(fileURLWithPath: output + ".vfetch")).split(separator: 0x0A).first)
        return try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
    }

    /// `[start, end, tag]` of each partial block the manifest at `output` records.
    static func partialBlocks(_ output: String) throws -> [[Int]] {
        try #require(try manifestLine(output)["partial_blocks"] as? [[Int]])
    }

    /// An interrupted download keeps the bytes of the blocks its connections were in the middle of,
    /// and the next run reuses them. (At 48000 B/s the origin writes 3000 bytes at a time, so the
    /// connections stop mid-block.)
    @Test func partialBlocksAreKeptAcrossRuns() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 56)
            origin.publish("/a.mp4", bytes, behavior: throttled(48_000))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            let partial = try Self.partialBlocks(output)
            #expect(!partial.isEmpty)
            #expect(saved % 65536 != 0, "saved \(saved)")
            origin.setBehavior("/a.mp4", OriginBehavior())
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(summary.resumedBytes == saved, "notices: \(second.notices)")
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }

    /// A partial block whose bytes changed on disk is fetched again; the rest is kept.
    @Test func aPartialBlockThatChangedIsFetchedAgain() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 * Self.mib, seed: 57)
            origin.publish("/a.mp4", bytes, behavior: throttled(48_000))
            let output = directory + "/a.mp4"
            let saved = try await interrupt(origin.url("/a.mp4"), output: output, after: 256 << 10)
            let partial = try #require(try Self.partialBlocks(output).first)
            // Its last byte, which its tag covers.
            let part = try #require(FileHandle(forUpdatingAtPath: output + ".part"))
            try part.seek(toOffset: UInt64(partial[1] - 1))
            try part.write(contentsOf: Data([bytes[partial[1] - 1] ^ 0xFF]))
            try part.close()
            origin.setBehavior("/a.mp4", OriginBehavior())
            let second = await fetch(origin.url("/a.mp4"), to: .file(output))
            let summary = try second.result.get()
            #expect(summary.resumedBytes == saved - Int64(partial[1] - partial[0]), "notices: \(second.notices)")
            #expect(second.notices.contains { $0.contains("partial blocks") && $0.contains("differ") }, "notices: \(second.notices)")
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
            let first = FileDownload(url: origin.url("/a.mp4"), to: .file(output), options: slow)
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
