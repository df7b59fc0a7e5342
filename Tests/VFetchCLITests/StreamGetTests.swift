import Foundation
import Synchronization
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `vfetch get` of HLS and DASH streams made by ffmpeg at test time, served by the test origin: the saved
/// file must decode to exactly the frames of the source the stream was cut from.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct StreamGetTests {
    /// The decoded video frames' checksums, in order (`framemd5`'s last column: timestamps differ by container).
    static func videoFrames(_ path: String) async throws -> [String] {
        let result = try await run(
            "/usr/bin/env", ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-map", "0:v", "-f", "framemd5", "-"])
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// `codec_type` of each stream, and the duration, as ffprobe reads them.
    static func probe(_ path: String) async throws -> (kinds: [String], duration: Double) {
        let result = try await run(
            "/usr/bin/env",
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type:format=duration", "-of", "default=nw=1:nk=1", path])
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        return (lines.filter { !$0.contains(".") && Double($0) == nil }, lines.compactMap(Double.init).last ?? 0)
    }

    /// Serves `kind` at `/s/`, runs `get` on its entry with `arguments`, and returns the result and the output path.
    static func get(
        _ kind: StreamFixture.Kind, _ arguments: [String] = [], behavior: OriginBehavior = OriginBehavior(),
        _ check: (Finished, String, StreamFixture, TestOrigin) async throws -> Void
    ) async throws {
        let fixture = try await StreamFixture.shared(kind)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s", behavior: behavior)
            let output = directory + "/out.mp4"
            let result = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output] + arguments)
            try await check(result, output, fixture, origin)
        }
    }

    @Test(arguments: [StreamFixture.Kind.hlsVariants, .hlsFragmented, .hlsByteRange, .hlsEncrypted, .dash])
    func aStreamIsSavedAsOneFileWithTheSourcesFramesAndItsAudio(_ kind: StreamFixture.Kind) async throws {
        try await Self.get(kind) { (result: Finished, output: String, fixture: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardError.contains("saved \(output)"))
            #expect(result.standardError.contains("→ \(output)") && result.standardError.contains("vfetch: format: "))
            let frames = try await Self.videoFrames(output)
            #expect(frames.count == StreamFixture.duration * StreamFixture.frameRate)
            #expect(frames == (try await Self.videoFrames(fixture.path(fixture.source))))
            let probed = try await Self.probe(output)
            #expect(probed.kinds.sorted() == ["audio", "video"])
            #expect(abs(probed.duration - Double(StreamFixture.duration)) <= 0.2)
            #expect(!exists(output + ".parts"), "the parts are removed once remuxed")
        }
    }

    @Test func formatPicksTheVariantAndKeepSegmentsKeepsTheParts() async throws {
        try await Self.get(.hlsVariants, ["--format", "worst", "--keep-segments"]) {
            (result: Finished, output: String, fixture: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.sources[2]))))
            #expect(exists(output + ".parts/manifest"))
        }
        try await Self.get(.hlsVariants, ["--format", "height<=150"]) {
            (result: Finished, output: String, fixture: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.sources[1]))))
        }
        try await Self.get(.hlsVariants, ["--format", "height>2000"]) {
            (result: Finished, output: String, _: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 15, "\(result.standardError)")
            #expect(result.standardError.contains("vfetch: format unavailable: no track matches"), "\(result.standardError)")
            #expect(!exists(output))
        }
    }

    /// A format or an output that cannot be saved fails before any segment is fetched, not after them all.
    @Test func aFormatThatCannotBeSavedFailsBeforeTheSegments() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let url = origin.url("/s/" + fixture.entry)
            for (name, message) in [("out.webm", "WebM cannot hold"), ("out.avi", "its name must end in .mp4")] {
                let asked = origin.requests.count
                let result = try await vfetch(["get", url, "-o", directory + "/" + name])
                #expect(result.status == 15, "\(name): \(result.standardError)")
                #expect(result.standardError.contains(message), "\(name): \(result.standardError)")
                #expect(!exists(directory + "/" + name) && !exists(directory + "/" + name + ".parts"))
                let segments = origin.requests.dropFirst(asked).filter { !$0.path.hasSuffix(".m3u8") }
                #expect(segments.isEmpty, "\(name): \(segments.map(\.path))")
            }
            // A bare id, as yt-dlp's `-f ID`: the lowest variant's video is its source's.
            // `get -F`, as yt-dlp's: what `info` shows, and nothing downloaded.
            let asked = origin.requests.count
            let info = try await vfetch(["get", url, "-F", "--json", "-o", directory + "/listed.mp4", "-H", "X-Listed: yes"])
            let described = try await vfetch(["info", url, "--json"])
            #expect(info.status == 0 && info.standardOutput == described.standardOutput, "\(info)")
            #expect(origin.requests[asked].header("x-listed") == "yes", "get's request options go with -F")
            #expect(!exists(directory + "/listed.mp4") && !exists(directory + "/listed.mp4.parts"))
            let catalog = try #require(try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8)) as? [String: Any])
            let videos = try #require(catalog["tracks"] as? [[String: Any]]).filter { $0["kind"] as? String != "audio" }
            let lowest = try #require(videos.min { ($0["height"] as? Int ?? 0) < ($1["height"] as? Int ?? 0) }?["id"] as? String)
            let picked = try await vfetch(["get", url, "-o", directory + "/id.mp4", "--format", lowest])
            #expect(picked.status == 0, "\(picked.standardError)")
            #expect(try await Self.videoFrames(directory + "/id.mp4") == (try await Self.videoFrames(fixture.path(fixture.sources[2]))))
        }
    }

    /// As a finished plain file is: a stream saved before is "already complete" (0), not a failure (7).
    @Test func aStreamSavedBeforeIsAlreadyComplete() async throws {
        try await Self.get(.hlsFragmented) {
            (result: Finished, output: String, fixture: StreamFixture, origin: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            let saved = try sha256(file: output)
            let asked = origin.requests.count
            let again = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output])
            #expect(again.status == 0, "\(again.standardError)")
            #expect(again.standardError.contains("\(output) is already complete"), "\(again.standardError)")
            #expect(try sha256(file: output) == saved)
            #expect(origin.requests.count == asked + 1, "only the playlist is read again")
            let forced = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output, "--force"])
            #expect(forced.status == 0, "\(forced.standardError)")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
        }
    }

    @Test func theOutputsExtensionPicksTheContainer() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            for (name, container) in [("out.mkv", "matroska,webm"), ("out.ts", "mpegts")] {
                let output = directory + "/" + name
                let result = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output])
                #expect(result.status == 0, "\(result.standardError)")
                let probed = try await run(
                    "/usr/bin/env", ["ffprobe", "-v", "error", "-show_entries", "format=format_name", "-of", "default=nw=1:nk=1", output])
                #expect(probed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == container)
                #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
            }
        }
    }

    @Test func aMissingSegmentFailsNamingItUnlessSkipped() async throws {
        var missing = OriginBehavior()
        missing.failFirst = 1_000
        missing.failStatus = 404
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        let playlist = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
        let second = try #require(playlist.split(separator: "\n").filter { !$0.hasPrefix("#") }.dropFirst().first.map(String.init))
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            origin.setBehavior("/s/" + second, missing)
            let output = directory + "/out.mp4"
            let failed = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output, "--retries", "1"])
            #expect(failed.status == 13, "\(failed.standardError)")
            #expect(failed.standardError.contains(second))
            #expect(failed.standardError.contains("HTTP 404"))
            #expect(!exists(output))

            let skipped = try await vfetch(["get", origin.url("/s/" + fixture.entry), "-o", output, "--retries", "1", "--skip-unavailable"])
            #expect(skipped.status == 0, "\(skipped.standardError)")
            #expect(skipped.standardError.contains("left out (--skip-unavailable)"))
            #expect(skipped.standardError.contains(second))
            let frames = try await Self.videoFrames(output)
            #expect(frames.count == (StreamFixture.duration - StreamFixture.segmentDuration) * StreamFixture.frameRate)
        }
    }

    @Test func aStreamKilledMidwayResumesWithoutFetchingAKeptSegmentAgain() async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        try await withOrigin { origin, directory in
            // Slow enough that the kill comes between segments: one connection, about a second a segment.
            var slow = OriginBehavior()
            slow.bytesPerSecond = 96 << 10
            try origin.publishDirectory(fixture.directory, at: "/s", behavior: slow)
            let output = directory + "/out.mp4"
            let arguments = ["get", origin.url("/s/" + fixture.entry), "-o", output, "-c", "1"]
            let manifest = output + ".parts/manifest"
            // Killed once the manifest has its header line and two kept segments (not counting what checkpoints held).
            let killed = try await run(vfetchBinary, arguments, signal: SIGKILL) {
                String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: manifest))) ?? Data(), as: UTF8.self)
                    .split(separator: "\n").count { !$0.hasPrefix("h ") } >= 3
            }
            #expect(killed.status == SIGKILL)
            let info = try await vfetch(["info", output, "--json"])
            #expect(info.status == 0, "\(info.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8)) as? [String: Any])
            #expect(object["complete"] as? Bool == false)
            #expect((object["segments_kept"] as? [Int])?.count ?? 0 >= 2)
            #expect(object["segments"] as? Int == 1 + StreamFixture.duration / StreamFixture.segmentDuration)
            let resumed = try await vfetch(arguments)
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardError.contains("resuming: "))
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
            // Every segment was answered in full once, but the one in flight at the kill.
            let media = origin.requests.filter { $0.method == "GET" && !$0.path.hasSuffix(".m3u8") }
            let paths = media.map(\.path)
            #expect(Set(paths).count == paths.count || paths.count == Set(paths).count + 1, "\(paths)")
        }
    }

    /// A kill mid-segment costs only what arrived since the last checkpoint: the resumed run asks for the rest of
    /// the segment (with `If-Range`, so another version could not be spliced in), decrypts it whole, and the frames
    /// are the source's.
    @Test func aSegmentKilledMidwayResumesFromWhatArrived() async throws {
        let fixture = try await StreamFixture.shared(.hlsEncrypted)
        try await withOrigin { origin, directory in
            var slow = OriginBehavior()
            slow.bytesPerSecond = 64 << 10
            try origin.publishDirectory(fixture.directory, at: "/s", behavior: slow)
            let output = directory + "/out.mp4"
            let arguments = ["get", origin.url("/s/" + fixture.entry), "-o", output, "-c", "1", "--checkpoint-interval", "0.1"]
            let manifest = output + ".parts/manifest"
            // Killed once a checkpoint recorded part of a segment.
            let killed = try await run(vfetchBinary, arguments, signal: SIGKILL) {
                String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: manifest))) ?? Data(), as: UTF8.self)
                    .split(separator: "\n").contains { $0.hasPrefix("h ") }
            }
            #expect(killed.status == SIGKILL)
            let before = origin.requests.count
            let resumed = try await vfetch(arguments)
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardError.contains("in part"), "\(resumed.standardError)")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
            let continued = origin.requests.dropFirst(before).filter {
                $0.path.hasSuffix(".ts") && $0.header("if-range") != nil && $0.status == 206
                    && !($0.header("range") ?? "").hasPrefix("bytes=0-")
            }
            #expect(!continued.isEmpty, "\(origin.requests.dropFirst(before).map { ($0.path, $0.header("range") ?? "") })")
        }
    }

    @Test func maxSpeedHoldsForAStreamToo() async throws {
        try await Self.get(.hlsFragmented, ["--max-speed", "200K", "--json"]) {
            (result: Finished, output: String, fixture: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            let events = result.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let bytes = try #require(events.last { $0["event"] as? String == "progress" }?["bytes"] as? Int)
            #expect(events.first?["event"] as? String == "started" && events.first?["path"] as? String == output)
            let seconds = try #require(events.last { $0["event"] as? String == "done" }?["seconds"] as? Double)
            // Never faster than the limit allows (its bucket holds a tenth of a second); slower is the machine's business.
            #expect(seconds >= Double(bytes) / Double(200 << 10) - 0.15, "\(bytes) bytes in \(seconds) s")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
        }
    }

    /// Progress counts bytes as they arrive, not only segments once whole: on a slow origin, lines come
    /// between two segments kept, their bytes growing.
    @Test func progressCountsTheBytesOfSegmentsStillArriving() async throws {
        try await Self.get(.hlsFragmented, ["--json", "-c", "1"], behavior: throttled(128 << 10)) {
            (result: Finished, output: String, fixture: StreamFixture, _: TestOrigin) async throws -> Void in
            #expect(result.status == 0, "\(result.standardError)")
            let progress = result.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["event"] as? String == "progress" }
            let bytes = progress.compactMap { $0["bytes"] as? Int }
            #expect(bytes.count == progress.count && !bytes.isEmpty)
            #expect(bytes == bytes.sorted(), "never fewer bytes than before: \(bytes)")
            // A line while a segment arrives says more bytes than the segment kept before it.
            var kept = 0
            var between = 0
            for event in progress {
                let count = event["bytes"] as? Int ?? 0
                if event["segment"] is Int { kept = count } else if event["segment"] is NSNull, count > kept { between += 1 }
            }
            #expect(between >= 2, "\(progress)")
            #expect(try await Self.videoFrames(output) == (try await Self.videoFrames(fixture.path(fixture.source))))
        }
    }

    @Test func infoListsAStreamsTracks() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, _ in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let result = try await vfetch(["info", origin.url("/s/" + fixture.entry), "--json"])
            #expect(result.status == 0, "\(result.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
            #expect(object["stream"] as? String == "hls")
            let tracks = try #require(object["tracks"] as? [[String: Any]])
            #expect(tracks.compactMap { $0["height"] as? Int } == StreamFixture.variantSizes.map(\.height))
            #expect(tracks.allSatisfy { $0["segments"] as? Int == StreamFixture.duration / StreamFixture.segmentDuration })
        }
    }
}

/// Streams that cannot be saved: each ends with its documented exit code and one line, and leaves no output.
@Suite struct BadStreamTests {
    static let mpegurl = "application/vnd.apple.mpegurl"

    /// Publishes `files` (path → text, with the playlist type for `.m3u8`), runs `get` on the first, returns the result.
    static func get(_ files: [(String, String)], behaviors: [String: OriginBehavior] = [:], _ arguments: [String] = []) async throws -> (
        Finished, String
    ) {
        try await withOrigin { origin, directory in
            for (path, text) in files {
                var behavior = behaviors[path] ?? OriginBehavior()
                if behaviors[path] == nil { behavior.contentType = path.hasSuffix(".m3u8") ? mpegurl : "video/mp2t" }
                origin.publish(path, Array(text.utf8), behavior: behavior)
            }
            let output = directory + "/out.mp4"
            let result = try await vfetch(["get", origin.url(files[0].0), "-o", output, "--retries", "1"] + arguments)
            #expect(!exists(output))
            return (result, output)
        }
    }

    @Test func anHTMLPageWhereThePlaylistBelongsIsRefused() async throws {
        var html = OriginBehavior()
        html.contentType = "text/html"
        let (result, _) = try await Self.get([("/a/index.m3u8", "<html><body>Sign in</body></html>")], behaviors: ["/a/index.m3u8": html])
        #expect(result.status == 10, "\(result.standardError)")
        #expect(result.standardError.contains("web page"))
    }

    @Test func aMalformedPlaylistNamesItsLine() async throws {
        let (result, _) = try await Self.get([
            ("/a/index.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\nseg0.ts\n#EXT-X-ENDLIST\n")
        ])
        #expect(result.status == 10, "\(result.standardError)")
        #expect(result.standardError.contains("line 3"))
    }

    @Test func aMasterThatListsItselfIsRefused() async throws {
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nindex.m3u8\n"
        let (result, _) = try await Self.get([("/a/index.m3u8", master)])
        #expect(result.status == 10, "\(result.standardError)")
        #expect(result.standardError.contains("master playlist where a media playlist belongs"))
    }

    @Test func aKeyThatIsMissingFailsNamingIt() async throws {
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=AES-128,URI="gone.key"
            #EXTINF:2,
            seg0.ts
            #EXT-X-ENDLIST

            """
        var gone = OriginBehavior()
        gone.failFirst = 1_000
        gone.failStatus = 404
        let (result, _) = try await Self.get(
            [("/a/index.m3u8", playlist), ("/a/gone.key", "x"), ("/a/seg0.ts", "x")], behaviors: ["/a/gone.key": gone])
        // A key is a document, not a segment: its 404 reads as a file's (exit 5).
        #expect(result.status == 5, "\(result.standardError)")
        #expect(result.standardError.contains("gone.key"))
    }

    @Test func aSegmentThatIsAnHTMLPageFailsTheDownload() async throws {
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n#EXT-X-ENDLIST\n"
        var html = OriginBehavior()
        html.contentType = "text/html; charset=utf-8"
        let (result, _) = try await Self.get(
            [("/a/index.m3u8", playlist), ("/a/seg0.ts", "<html>captcha</html>")], behaviors: ["/a/seg0.ts": html])
        #expect(result.status == 13, "\(result.standardError)")
        #expect(result.standardError.contains("seg0.ts"))
        #expect(result.standardError.contains("HTML page"))
    }

    @Test func aWholeFileForAByteRangePastTheSegmentLimitIsRefusedBeforeItsBody() async throws {
        // The range's 100 bytes come after 9 EB of others when the origin ignores Range: its endless 200 must
        // not be read in the hope of reaching them.
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@9000000000000000000\nall.ts\n#EXT-X-ENDLIST\n"
        var endless = OriginBehavior()
        endless.contentType = "video/mp2t"
        endless.endlessBodyBytes = 64 << 20
        var type = OriginBehavior()
        type.contentType = Self.mpegurl
        try await withOrigin { origin, directory in
            origin.publish("/a/index.m3u8", Array(playlist.utf8), behavior: type)
            origin.publish("/a/all.ts", Array(repeating: 0x47, count: 188), behavior: endless)
            let output = directory + "/out.mp4"
            let result = try await vfetch(["get", origin.url("/a/index.m3u8"), "-o", output, "--retries", "1"])
            #expect(result.status == 13, "\(result.standardError)")
            #expect(result.standardError.contains("whole file (200) for a byte range"), "\(result.standardError)")
            // Two answers refused at their heads: only what the origin wrote before the client hung up.
            #expect(origin.bytesServed("/a/all.ts") < 16 << 20, "\(origin.bytesServed("/a/all.ts")) bytes sent")
            #expect(!exists(output))
        }
    }

    @Test func aMastersSessionKeyForDRMIsRefusedBeforeAnyMediaPlaylist() async throws {
        let master = """
            #EXTM3U
            #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXT-X-STREAM-INF:BANDWIDTH=1000000
            v0/index.m3u8

            """
        // The media playlist is not published: asked for, it would answer 404 (exit 5), not DRM (14).
        let (result, _) = try await Self.get([("/a/master.m3u8", master)])
        #expect(result.status == 14, "\(result.standardError)")
        #expect(result.standardError.contains("encrypted with com.apple.streamingkeydelivery"), "\(result.standardError)")
    }

    @Test func aStreamWithDRMIsRefusedSayingSo() async throws {
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
            #EXTINF:2,
            seg0.ts
            #EXT-X-ENDLIST

            """
        let (result, _) = try await Self.get([("/a/index.m3u8", playlist)])
        #expect(result.status == 14, "\(result.standardError)")
        #expect(result.standardError.contains("DRM"))
    }
}

/// A live HLS stream whose window slides while `get` records it.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct LiveStreamTests {
    static func window(_ segments: ClosedRange<Int>, names: [String], ended: Bool, target: Int = 1) -> [UInt8] {
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(target)\n#EXT-X-MEDIA-SEQUENCE:\(segments.lowerBound)\n"
        for index in segments { text += "#EXTINF:2.0,\n\(names[index])\n" }
        if ended { text += "#EXT-X-ENDLIST\n" }
        return Array(text.utf8)
    }

    /// The first variant's segments of the 3-variant fixture, named as its media playlist names them
    /// (relative to the master), for live windows made of them.
    static func segmentNames(of fixture: StreamFixture) throws -> [String] {
        let variant = try #require(
            try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8).split(separator: "\n").first { !$0.hasPrefix("#") })
        let media = try String(contentsOfFile: fixture.path(String(variant)), encoding: .utf8)
        let folder = (String(variant) as NSString).deletingLastPathComponent
        return media.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { folder.isEmpty ? String($0) : folder + "/" + $0 }
    }

    /// Polls `condition` every 50 ms, for two minutes at most (then the test's own checks fail).
    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<2400 where !condition() { try await Task.sleep(for: .milliseconds(50)) }
    }

    /// How often the origin was asked for the live playlist, and for segments, so far.
    static func playlistReads(_ origin: TestOrigin) -> Int { origin.requests.filter { $0.path == "/s/live.m3u8" }.count }
    static func segmentRequests(_ origin: TestOrigin) -> Int { origin.requests.filter { $0.path.hasSuffix(".ts") }.count }

    /// A condition for `interruptWhen`: true once the live playlist was read again after `asked` first held.
    static func onceReadAgain(_ origin: TestOrigin, after asked: @escaping @Sendable () -> Bool) -> @Sendable () -> Bool {
        let readsWhenAsked = Mutex<Int?>(nil)
        return {
            let reads = playlistReads(origin)
            guard asked() else { return false }
            let first = readsWhenAsked.withLock { first -> Int in
                if first == nil { first = reads }
                return first!
            }
            return reads > first
        }
    }

    /// Publishes a live playlist at `/s/live.m3u8` with the type players expect.
    static func publishLive(_ origin: TestOrigin, _ bytes: [UInt8]) {
        var playlist = OriginBehavior()
        playlist.contentType = "application/vnd.apple.mpegurl"
        origin.publish("/s/live.m3u8", bytes, behavior: playlist)
    }

    @Test func aLiveWindowIsRecordedUntilItEndsWithEverySegmentOnce() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        #expect(names.count == 3)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            Self.publishLive(origin, Self.window(0...1, names: names, ended: false))
            let output = directory + "/live.mp4"
            // The window slides once vfetch has the first segment, and ends once it read the slid one:
            // however late a loaded machine starts vfetch, it sees all three windows.
            let slide = Task {
                try await Self.waitUntil { origin.requests.contains { $0.path.hasSuffix(names[0]) } }
                origin.replace("/s/live.m3u8", with: Self.window(1...2, names: names, ended: false))
                let reads = Self.playlistReads(origin)
                try await Self.waitUntil { Self.playlistReads(origin) > reads }
                origin.replace("/s/live.m3u8", with: Self.window(1...2, names: names, ended: true))
            }
            // It ends when the window does: the watchdog only ends a run the test lost.
            let result = try await run(vfetchBinary, ["get", origin.url("/s/live.m3u8"), "-o", output], timeout: .seconds(300))
            try await slide.value
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.source))))
            let segmentGets = origin.requests.filter { $0.method == "GET" && $0.path.hasSuffix(".ts") }.map(\.path)
            #expect(segmentGets.count == 3, "\(segmentGets)")
        }
    }

    @Test func ctrlCEndsARecordingAndSavesWhatArrived() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            // A window that never ends and never moves: only Ctrl-C ends the recording.
            Self.publishLive(origin, Self.window(0...2, names: names, ended: false))
            let output = directory + "/live.mp4"
            let parts = output + ".parts"
            // Interrupted once the playlist has been read again after the three segments were asked for
            // (a reload waits for what it asked): they are in, and the recording waits for more.
            let result = try await vfetch(
                ["get", origin.url("/s/live.m3u8"), "-o", output],
                interruptWhen: Self.onceReadAgain(origin) { Self.segmentRequests(origin) >= 3 })
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.source))))
            #expect(!exists(parts))
        }
    }

    /// An LL-HLS window of MPEG-TS `segments` (name and size): the `whole` ones, each in `parted` listed as its
    /// two halves (`EXT-X-PART` byte ranges, cut between 188-byte packets) before its `EXTINF`, then the first
    /// `underWay.parts` halves of the segment still being written.
    static func lowLatencyWindow(
        _ segments: [(name: String, size: Int)], whole: ClosedRange<Int>, parted: Set<Int>, underWay: (segment: Int, parts: Int)
    ) -> [UInt8] {
        var text = "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n#EXT-X-PART-INF:PART-TARGET=1.0\n#EXT-X-MEDIA-SEQUENCE:0\n"
        func part(_ segment: Int, _ half: Int) -> String {
            let (name, size) = segments[segment]
            let first = size / 188 / 2 * 188
            return "#EXT-X-PART:DURATION=1.0,URI=\"\(name)\",BYTERANGE=" + (half == 0 ? "\(first)@0" : "\(size - first)") + "\n"
        }
        for segment in whole {
            if parted.contains(segment) { text += part(segment, 0) + part(segment, 1) }
            text += "#EXTINF:2.0,\n\(segments[segment].name)\n"
        }
        for half in 0..<underWay.parts { text += part(underWay.segment, half) }
        return Array(text.utf8)
    }

    @Test func aLowLatencyRecordingTakesEachPartOnceAndKeepsTheSegmentUnderWay() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        let segments = try names.map {
            ($0, try #require(try FileManager.default.attributesOfItem(atPath: fixture.path($0))[.size] as? Int))
        }
        let gets: @Sendable (Int, TestOrigin) -> Int = { segment, origin in
            origin.requests.filter { $0.method == "GET" && $0.path.hasSuffix(names[segment]) }.count
        }
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            // Segment 0 whole, and the first half of segment 1 written so far.
            Self.publishLive(origin, Self.lowLatencyWindow(segments, whole: 0...0, parted: [], underWay: (1, 1)))
            let grow = Task {
                try await Self.waitUntil { gets(1, origin) >= 1 }
                // Segment 1 finished (its parts listed before it), and segment 2 written whole in parts but not yet listed.
                origin.replace("/s/live.m3u8", with: Self.lowLatencyWindow(segments, whole: 0...1, parted: [1], underWay: (2, 2)))
            }
            let output = directory + "/live.mp4"
            // Ctrl-C once both halves of segment 2 were asked for and the playlist read again after.
            let result = try await vfetch(
                ["get", origin.url("/s/live.m3u8"), "-o", output], interruptWhen: Self.onceReadAgain(origin) { gets(2, origin) >= 2 })
            try await grow.value
            #expect(result.status == 0, "\(result.standardError)")
            // Every frame once: segment 1 from its two parts (never again whole), segment 2 from the parts under way.
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.source))))
            let counts: [Int] = [gets(0, origin), gets(1, origin), gets(2, origin)]
            #expect(counts == [1, 2, 2])
        }
    }

    @Test func aTargetDurationOfZeroIsReadOnceASecondAtMostAndCtrlCSavesTheRecording() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            Self.publishLive(origin, Self.window(0...2, names: names, ended: false, target: 0))
            let output = directory + "/live.mp4"
            let started = ContinuousClock.now
            let stopped = Mutex<Duration?>(nil)
            let result = try await vfetch(
                ["get", origin.url("/s/live.m3u8"), "-o", output],
                interruptWhen: {
                    // Three seconds of recording, its segments in: then Ctrl-C.
                    guard Self.segmentRequests(origin) >= 3, started.duration(to: .now) >= .seconds(3)
                    else { return false }
                    stopped.withLock { $0 = started.duration(to: .now) }
                    return true
                })
            let seconds = try #require(stopped.withLock { $0 }).components.seconds
            // get's probe and the first read, then at most one read a second (before: 22 a second).
            let reads = Self.playlistReads(origin)
            #expect(reads <= 3 + Int(seconds), "\(reads) reads in \(seconds) s")
            #expect(result.status == 0, "\(result.standardError)")
            let probed = try await StreamGetTests.probe(output)
            #expect(probed.kinds.sorted() == ["audio", "video"])
            // What was kept when Ctrl-C came, exact: the source's first frames (a segment asked for may
            // still have been on its way, on a busy machine).
            let recorded = try await StreamGetTests.videoFrames(output)
            let source = try await StreamGetTests.videoFrames(fixture.path(fixture.source))
            #expect(!recorded.isEmpty && source.starts(with: recorded), "\(recorded.count) of \(source.count) frames")
        }
    }

    @Test func ctrlCDuringAPlaylistsReloadSavesTheRecording() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            Self.publishLive(origin, Self.window(0...2, names: names, ended: false))
            // Once the stream's first read is answered, the playlist crawls: the reload is in flight at the Ctrl-C.
            let crawl = Task {
                while Self.playlistReads(origin) < 2 { try await Task.sleep(for: .milliseconds(5)) }
                var slow = OriginBehavior()
                slow.contentType = "application/vnd.apple.mpegurl"
                slow.bytesPerSecond = 16
                origin.setBehavior("/s/live.m3u8", slow)
            }
            let output = directory + "/live.mp4"
            let result = try await vfetch(
                ["get", origin.url("/s/live.m3u8"), "-o", output],
                interruptWhen: { Self.playlistReads(origin) >= 3 })
            try await crawl.value
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.source))))
            #expect(!exists(output + ".parts"))
        }
    }

    @Test func durationStopsARecordingThatWouldNotEnd() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        let names = try Self.segmentNames(of: fixture)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            Self.publishLive(origin, Self.window(0...2, names: names, ended: false))
            let output = directory + "/live.mp4"
            let result = try await vfetch(["get", origin.url("/s/live.m3u8"), "-o", output, "--duration", "4"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await StreamGetTests.videoFrames(output).count == 3 * StreamFixture.segmentDuration * StreamFixture.frameRate)
        }
    }
}
