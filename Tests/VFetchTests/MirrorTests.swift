import Foundation
import TestOrigin
import Testing
import VFetchEngine

/// One file from several origins at once (`DownloadOptions.mirrors`), as aria2c does with several URIs.
@Suite struct MirrorTests {
    /// A primary and three mirrors: one slow, one serving another file of the same length, one whose
    /// every answer breaks off. The other file's bytes never reach the output, the broken mirror is
    /// dropped, and the fast primary serves more than the slow mirror.
    @Test func threeMirrorsOneSlowOneWrongOneDying() async throws {
        let origins = try await (0..<4).asyncMap { _ in try await TestOrigin.start() }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (primary, slow, wrong, dying) = (origins[0], origins[1], origins[2], origins[3])
        let bytes = randomBytes(16 << 20, seed: 32)
        var fast = OriginBehavior()
        fast.bytesPerSecond = 1 << 20  // several seconds over 8 connections: time for every mirror to be tried
        primary.publish("/film.mp4", bytes, behavior: fast)
        var throttled = OriginBehavior()
        throttled.bytesPerSecond = 128 << 10
        slow.publish("/film.mp4", bytes, behavior: throttled)
        wrong.publish("/film.mp4", randomBytes(bytes.count, seed: 33))
        var breaking = OriginBehavior()
        breaking.dropAfterBytes = 128 << 10  // past the 64 KiB sample, then every answer breaks off
        breaking.dropTimes = 1_000
        dying.publish("/film.mp4", bytes, behavior: breaking)

        var options = DownloadOptions()
        options.connections = 8
        options.mirrors = [slow, wrong, dying].map { $0.url("/film.mp4") }
        let output = directory + "/film.mp4"
        let fetched = await fetch(primary.url("/film.mp4"), to: .file(output), options: options)
        for origin in origins { try await origin.shutdown() }

        #expect(fetched.error == nil, "\(fetched.error.map(String.init(describing:)) ?? "")")
        #expect(try sha256(file: output) == sha256(bytes))
        let dropped = fetched.notices.filter { $0.hasPrefix("mirror ") }
        #expect(dropped.contains { $0.contains(String(wrong.port)) && $0.contains("other bytes") }, "\(dropped)")
        #expect(dropped.contains { $0.contains(String(dying.port)) }, "\(dropped)")
        #expect(!dropped.contains { $0.contains(String(slow.port)) }, "\(dropped)")
        // vfetch's own counts: every byte of the file from one source; the slow mirror gave segments, the
        // faster primary more; the other file gave none.
        let sources = try fetched.result.get().sources
        #expect(sources.map(\.url) == [primary, slow, wrong, dying].map { $0.url("/film.mp4") })
        #expect(sources.reduce(0) { $0 + $1.bytes } == Int64(bytes.count), "\(sources)")
        #expect(sources[1].bytes > 0 && sources[1].bytes < sources[0].bytes, "\(sources)")
        #expect(sources[2].bytes == 0, "\(sources)")
        // What the slow origin served (its sample too) covers what vfetch says it gave.
        #expect(slow.bytesServed("/film.mp4") >= Int(sources[1].bytes), "\(sources)")
    }

    /// An interrupted download with a mirror resumes from its manifest (the primary's identity): the
    /// mirror is sampled again and asked without the primary's validators.
    @Test func aMirroredDownloadResumes() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 38)
            // Slow enough (8 transfers of 32 KiB/s) that the cancel after 1 MiB comes long before the end,
            // however late a loaded machine delivers the progress event.
            var throttled = OriginBehavior()
            throttled.bytesPerSecond = 32 << 10
            origin.publish("/a.bin", bytes, behavior: throttled)
            origin.publish("/mirror/a.bin", bytes, behavior: throttled)
            var options = DownloadOptions()
            options.connections = 4
            options.mirrors = [origin.url("/mirror/a.bin")]
            let output = directory + "/a.bin"
            let first = FileDownload(url: origin.url("/a.bin"), to: .file(output), options: options)
            let running = Task { try await first.run() }
            for await event in first.events {
                if case .progress(let progress) = event, progress.bytesDone >= 1 << 20 { break }
            }
            first.cancel()
            await #expect(throws: DownloadError.interrupted) { try await running.value }
            let saved = try PartialDownload(outputPath: output).bytesDone
            throttled.bytesPerSecond = 256 << 10  // the rest at the usual pace
            for path in ["/a.bin", "/mirror/a.bin"] { origin.setBehavior(path, throttled) }
            let requestsBefore = origin.requests.count
            let second = await fetch(origin.url("/a.bin"), to: .file(output), options: options)
            #expect(try second.result.get().resumedBytes == saved)
            let digest = try sha256(file: output)
            #expect(digest == sha256(bytes))
            let mirrored = origin.requests.dropFirst(requestsBefore).filter { $0.path == "/mirror/a.bin" }
            #expect(!mirrored.isEmpty)
            #expect(mirrored.allSatisfy { $0.header("if-range") == nil })
        }
    }

    /// A mirror of another length is dropped at its first answer; the download goes on from the primary.
    @Test func aMirrorOfAnotherLengthIsDropped() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 << 20, seed: 34)
            // 4 connections of 64 KiB/s: 8 s, so the mirror's first answer comes before the end however
            // loaded the machine (at 1 MiB/s a busy run ended before the mirror was asked).
            var throttled = OriginBehavior()
            throttled.bytesPerSecond = 64 << 10
            origin.publish("/a.bin", bytes, behavior: throttled)
            origin.publish("/b.bin", Array(bytes.dropLast()))
            var options = DownloadOptions()
            options.connections = 4
            options.mirrors = [origin.url("/b.bin")]
            let fetched = await fetch(origin.url("/a.bin"), to: .file(directory + "/a.bin"), options: options)
            #expect(fetched.error == nil)
            let digest = try sha256(file: directory + "/a.bin")
            #expect(digest == sha256(bytes))
            #expect(fetched.notices.contains { $0.contains("/b.bin dropped") && $0.contains("length") }, "\(fetched.notices)")
        }
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
