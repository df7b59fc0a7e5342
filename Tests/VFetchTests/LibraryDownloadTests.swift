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

    /// As URLSession's suspend and resume: a paused download keeps its bytes and asks for nothing, and
    /// resumed, the same `run()` goes on from what was saved and ends with the whole file.
    @Test func aPausedDownloadAsksForNothingAndGoesOnWhenResumed() async throws {
        let bytes = randomBytes(4 << 20, seed: 92)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            // 16 KiB/s for all connections together: the file cannot end before the pause, however late a busy
            // machine lets the test see its first progress (in a CI run: over a minute).
            var link = OriginConfiguration()
            link.linkBytesPerSecond = 16 << 10
            origin.configuration = link
            let download = Download(url: origin.url("/f.bin"), to: .file(directory + "/f.bin"))
            let running = Task { try await download.run() }
            var starts = 0
            for await event in download.events {
                if case .started = event { starts += 1 }
                if case .progress(let progress) = event, progress.bytesDone > 0 { break }
            }
            download.pause()
            var paused = false
            for await event in download.events where event == .notice("paused") {
                paused = true
                break
            }
            #expect(paused, "no notice that it paused")
            let asked = origin.requests.count
            try await Task.sleep(for: .milliseconds(500))
            #expect(origin.requests.count == asked, "paused, yet it asked for more")
            origin.configuration = OriginConfiguration()
            download.resume()
            let summary = try await running.value
            for await event in download.events { if case .started = event { starts += 1 } }
            #expect(try sha256(file: directory + "/f.bin") == sha256(bytes))
            #expect(summary.resumedBytes > 0, "went on from the saved bytes")
            #expect(starts == 2, "one start per go")
        }
    }

    @Test func aCancelWhilePausedEndsTheRun() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", randomBytes(1 << 20, seed: 93))
            var link = OriginConfiguration()
            link.linkBytesPerSecond = 64 << 10
            origin.configuration = link
            let download = Download(url: origin.url("/f.bin"), to: .file(directory + "/f.bin"))
            download.pause()  // before it starts: it waits
            let running = Task { try await download.run() }
            try await Task.sleep(for: .milliseconds(200))
            download.cancel()
            await #expect(throws: DownloadError.interrupted) { try await running.value }
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

    /// A directory that is not there yet is made, with those above it, as aria2c and wget do: the queue
    /// (`vfetch add -d`) gets what `get -d` gets.
    @Test func aMissingDirectoryIsMade() async throws {
        let bytes = randomBytes(256 << 10, seed: 92)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", bytes)
            _ = try await Download(url: origin.url("/f.bin"), to: .directory(directory + "/new/sub")).run()
            #expect(try sha256(file: directory + "/new/sub/f.bin") == sha256(bytes))
        }
    }

    /// Every kind of event, in the shapes `vfetch get --json` prints, is read into the same event and written
    /// back to the same text: an app can store, send and read what a download reports.
    @Test func everyEventIsTheSameAfterJSON() throws {
        let lines = [
            #"{"accepts_ranges":true,"content_type":"video/mp4","etag":"\"e\"","event":"started","final_url":"http://h/b","last_modified":null,"length":null,"path":"out/a b.mp4","resumed_bytes":5,"url":"http://h/a?x=1"}"#,
            #"{"bytes":100,"bytes_per_second":2048,"connections":4,"done_ranges":[[0,50],[70,120]],"event":"progress","playable_to":12.5,"seconds":0.125,"total":8589934592}"#,
            #"{"bytes":0,"bytes_per_second":0,"connections":0,"done_ranges":[],"event":"progress","playable_to":null,"seconds":0,"total":null}"#,
            #"{"bytes":4096,"bytes_per_second":1000000,"connections":6,"event":"progress","media_seconds":12,"media_seconds_total":40.5,"segment":null,"segments":10,"segments_done":3}"#,
            #"{"event":"notice","message":"fell back to one connection"}"#,
            #"{"bytes":8589934592,"connections":9,"duplicate_bytes":3,"event":"done","path":"out/a b.mp4","peak_connections":8,"resumed_bytes":7,"retries":2,"seconds":1.25,"sha256":"ab12"}"#,
            #"{"bytes":300,"connections":3,"duplicate_bytes":0,"event":"done","path":"f.bin","peak_connections":3,"resumed_bytes":100,"retries":0,"seconds":2,"sha256":null,"sources":[{"bytes":150,"url":"http://a/f.bin"},{"bytes":50,"url":"http://b/f.bin"}]}"#,
            #"{"bytes":9,"connections":0,"duplicate_bytes":0,"event":"done","media_seconds":47.5,"path":"s.mp4","peak_connections":0,"resumed_bytes":0,"resumed_segments":2,"retries":0,"seconds":3,"segments":12,"sha256":null,"skipped":["segment 3: 404"]}"#,
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var kinds: [String] = []
        for line in lines {
            let event = try JSONDecoder().decode(DownloadEvent.self, from: Data(line.utf8))
            #expect(String(decoding: try encoder.encode(event), as: UTF8.self) == line)
            kinds.append(String(describing: event).prefix { $0 != "(" }.description)
        }
        #expect(kinds == ["started", "progress", "progress", "streamProgress", "notice", "finished", "finished", "finished"])
        for bad in [
            #"{"event":"exploded"}"#,
            #"{"event":"progress","bytes":1,"bytes_per_second":0,"connections":0,"seconds":0,"done_ranges":[[5,1]]}"#,
        ] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(DownloadEvent.self, from: Data(bad.utf8)) }
        }
    }
}

/// `DownloadList`: several URLs into one directory, a few at once, as `aria2c -j N -i LIST`.
struct DownloadListTests {
    @Test func everyURLEndsInItsOwnResultAndAFailureStopsNoOther() async throws {
        let files = (0..<5).map { randomBytes(256 << 10, seed: UInt64(200 + $0)) }
        try await withOrigin { origin, directory in
            for (index, bytes) in files.enumerated() { origin.publish("/f\(index).bin", bytes) }
            let urls = files.indices.map { origin.url("/f\($0).bin") } + [origin.url("/missing.bin")]
            let list = DownloadList(urls: urls, into: directory + "/new", maxConcurrent: 2)
            let watching = Task {
                var (running, most, ended) = (0, 0, [Int]())
                for await update in list.updates {
                    switch update {
                    case .event(_, .started):
                        running += 1
                        most = max(most, running)
                    case .event: break
                    case .ended(let index, _):
                        running -= 1
                        ended.append(index)
                    }
                }
                return (most, ended)
            }
            let results = await list.run()
            let (most, ended) = await watching.value
            #expect(most <= 2, "at most 2 at once")
            #expect(ended.sorted() == Array(urls.indices))
            for (index, bytes) in files.enumerated() {
                let summary = try #require(try results[index]?.get())
                #expect(summary.path == directory + "/new/f\(index).bin")
                #expect(try sha256(file: summary.path) == sha256(bytes))
            }
            guard case .failure(.httpStatus(404, _))? = results.last else {
                Issue.record("the missing URL: \(String(describing: results.last))")
                return
            }
        }
    }

    @Test func aCancelledListStartsNothing() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", randomBytes(1 << 20, seed: 210))
            let list = DownloadList(urls: [origin.url("/f.bin")], into: directory)
            list.cancel()
            let results = await list.run()
            #expect(results.count == 1 && results[0] == nil)
            #expect(origin.requests.isEmpty)
        }
    }
}

/// `Destination.descriptor`: the file in order into a pipe as it arrives, as `curl -o -` writes it.
struct DescriptorDestinationTests {
    /// Slow enough to be split over the connections.
    static let throttled = {
        var behavior = OriginBehavior()
        behavior.bytesPerSecond = 1 << 20
        return behavior
    }()

    @Test func aPipeGetsTheFileInOrder() async throws {
        let bytes = randomBytes(3 << 20, seed: 220)
        try await withOrigin { origin, _ in
            origin.publish("/clip.mp4", bytes, behavior: Self.throttled)
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let (reading, writing) = (ends[0], ends[1])
            let reader = Task.detached {
                var read: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let count = chunk.withUnsafeMutableBytes { Glibc.read(reading, $0.baseAddress, $0.count) }
                    if count <= 0 { break }
                    read += chunk[0..<count]
                }
                close(reading)
                return read
            }
            var options = DownloadOptions()
            options.connections = 4
            let download = Download(url: origin.url("/clip.mp4"), to: .descriptor(writing), options: options)
            let summary = try await download.run()
            close(writing)
            let read = await reader.value
            #expect(sha256(read) == sha256(bytes))
            #expect(summary.path == "/dev/fd/\(writing)")
            #expect(origin.requests.filter { $0.path == "/clip.mp4" }.count > 2, "the file came over several connections")
        }
    }

    @Test func aReaderThatLeavesFailsTheDownload() async throws {
        try await withOrigin { origin, _ in
            origin.publish("/clip.mp4", randomBytes(4 << 20, seed: 221), behavior: Self.throttled)
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            close(ends[0])  // nobody reads: the first write fails (EPIPE, SIGPIPE ignored)
            defer { close(ends[1]) }
            signal(SIGPIPE, SIG_IGN)
            let download = Download(url: origin.url("/clip.mp4"), to: .descriptor(ends[1]))
            do throws(DownloadError) {
                _ = try await download.run()
                Issue.record("the download went to a pipe nobody reads")
            } catch {
                guard case .outputNotWritable(let reason) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(reason.hasPrefix("/dev/fd/\(ends[1]): "), "\(reason)")
            }
        }
    }
}
