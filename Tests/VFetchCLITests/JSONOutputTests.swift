import Foundation
import TestOrigin
import Testing
import VFetch
import VFetchCache
import VFetchCore
import VFetchServe

/// Each JSON object `vfetch` prints (`info --json`, `status --json`, `cache ls --json`) and serve's `/status` is
/// the encoding of a library type: decoded with that type and encoded again, it is the same text; and its keys,
/// nesting, nulls and numbers are pinned as the hand-built dictionaries before those types printed them (which
/// wrote `/` as `\/`: the same JSON string, so the output is compared with `\/` read as `/`).
@Suite struct JSONOutputTests {
    /// `line` decoded as `T`, and that value encoded as `vfetch` and serve print (keys sorted, `/` unescaped).
    static func decoded<T: Codable>(_: T.Type, _ line: some StringProtocol) throws -> (value: T, encoded: String) {
        let value = try JSONDecoder().decode(T.self, from: Data(line.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (value, String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// The text of a JSON number: no `.0` on a whole one.
    static func number(_ value: Double?) -> String {
        guard let value else { return "null" }
        let text = "\(value)"
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    static func pairs(_ ranges: [ClosedRange<Double>]) -> String {
        "[" + ranges.map { "[\(number($0.lowerBound)),\(number($0.upperBound))]" }.joined(separator: ",") + "]"
    }

    /// A line of output as the dictionaries wrote it too: one object, `/` unescaped.
    static func line(_ output: String) -> String {
        output.trimmingCharacters(in: .newlines).replacingOccurrences(of: #"\/"#, with: "/")
    }

    static let secretURL = "http://user:secret@127.0.0.1:9/clip.mp4"
    static let shownURL = "http://user:***@127.0.0.1:9/clip.mp4"

    /// `status --json` and `info --json` of an unfinished download of the first half of an MP4 (moov first).
    @Test func anUnfinishedDownloadIsAnUnfinishedDownloadAndAMediaReport() async throws {
        let path = try #require(await InfoTests.faststart.file(), "ffmpeg could not make the fixture")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try await withOrigin { _, directory in
            let output = directory + "/clip.mp4"
            let (length, saved) = (bytes.count, bytes.count / 2)
            try PartInfoTests.leaveUnfinished(bytes, present: [0..<saved], url: Self.secretURL, etag: #""v1""#, at: output)

            let status = try await vfetch(["status", output, "--json"])
            #expect(status.status == 0, "\(status.standardError)")
            let (download, encoded) = try Self.decoded(UnfinishedDownload.self, status.standardOutput)
            #expect(encoded == Self.line(status.standardOutput))
            let fraction = Double(saved) / Double(length)
            let blockSize = BlockBitmap.blockSize(forLength: Int64(length))
            let map = ByteRangeSet([0..<Int64(saved)]).map(total: Int64(length), width: 64)
            let created = ISO8601DateFormatter().string(from: download.created)
            #expect(abs(download.created.timeIntervalSinceNow) < 600, "\(created)")
            #expect(
                Self.line(status.standardOutput)
                    == #"{"block_size":\#(blockSize),"bytes_done":\#(saved),"content_type":"video/mp4","created":"\#(created)","#
                    + #""done_ranges":[[0,\#(saved)]],"etag":"\"v1\"","final_url":"\#(Self.shownURL)","fraction":\#(Self.number(fraction)),"#
                    + #""last_modified":null,"length":\#(length),"map":"\#(map)","path":"\#(output)","#
                    + #""percent":\#(Self.number((fraction * 1000).rounded() / 10)),"url":"\#(Self.shownURL)"}"#)

            let info = try await vfetch(["info", output, "--json"])
            #expect(info.status == 0, "\(info.standardError)")
            let (result, reencoded) = try Self.decoded(ProbeResult.self, info.standardOutput)
            #expect(reencoded == Self.line(info.standardOutput))
            guard case .media(let report) = result else {
                Issue.record("not media: \(result)")
                return
            }
            #expect(!report.playable.isEmpty && report.info?.duration != nil, "\(report)")
            #expect(
                Self.line(info.standardOutput)
                    == #"{"bit_rate":\#(report.info?.bitRate.map { "\($0)" } ?? "null"),"complete":false,"container":"mp4","#
                    + #""downloaded":\#(Self.number(fraction)),"duration":\#(Self.number(report.info?.duration)),"faststart":true,"#
                    + #""fetched_bytes":null,"fragmented":false,"length":\#(length),"needs":null,"playable":\#(Self.pairs(report.playable)),"#
                    + #""present":[[0,\#(saved)]],"requests":null,"streams":["#
                    + #"{"channels":null,"codec":"h264","frame_rate":25,"height":240,"kind":"video","sample_rate":null,"width":320},"#
                    + #"{"channels":1,"codec":"aac","frame_rate":null,"height":null,"kind":"audio","sample_rate":48000,"width":null}]}"#)
        }
    }

    /// `info --json` of an HLS playlist (one of its tracks unreadable) and of an unfinished stream download.
    @Test func aStreamIsACatalogAndAnUnfinishedOneWhatItKept() async throws {
        try await withOrigin { origin, directory in
            let media =
                "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4,\ns0.ts\n#EXTINF:2.5,\ns1.ts\n#EXT-X-ENDLIST\n"
            origin.publish("/s/v.m3u8", Array(media.utf8))
            let master = """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="English",LANGUAGE="en",URI="en.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=1280000,RESOLUTION=640x360,CODECS="avc1.64001e,mp4a.40.2",AUDIO="a"
                v.m3u8

                """
            origin.publish("/s/master.m3u8", Array(master.utf8))
            let run = try await vfetch(["info", origin.url("/s/master.m3u8"), "--json"])
            #expect(run.status == 0, "\(run.standardError)")
            let (result, encoded) = try Self.decoded(ProbeResult.self, run.standardOutput)
            #expect(encoded == Self.line(run.standardOutput))
            guard case .stream(let catalog) = result else {
                Issue.record("not a stream: \(result)")
                return
            }
            let problem = try #require(catalog.tracks.first { $0.kind == "audio" }?.problem)
            #expect(problem.contains("404"), "\(problem)")
            #expect(
                Self.line(run.standardOutput)
                    == #"{"duration":6.5,"live":false,"stream":"hls","tracks":["#
                    + #"{"bandwidth":1280000,"codecs":["avc1.64001e","mp4a.40.2"],"duration":6.5,"encryption":"none","height":360,"#
                    + #""id":"v0","kind":"video","language":null,"name":null,"problem":null,"segments":2,"width":640},"#
                    + #"{"bandwidth":null,"codecs":[],"duration":null,"encryption":"none","height":null,"id":"AUDIO/a/English","#
                    + #""kind":"audio","language":"en","name":"English","problem":"\#(problem)","segments":null,"width":null}]}"#)

            // An interrupted stream download: its manifest (a header line, then `fetch size tag` per kept fetch).
            let output = directory + "/show.mp4"
            try FileManager.default.createDirectory(atPath: output + ".parts", withIntermediateDirectories: true)
            let manifest = #"{"fetches":6,"fingerprint":"f","source":"\#(Self.secretURL)","version":1}"# + "\n0 1000 7\n3 2500 9\n"
            try Data(manifest.utf8).write(to: URL(fileURLWithPath: output + ".parts/manifest"))
            let unfinished = try await vfetch(["info", output, "--json"])
            #expect(unfinished.status == 0, "\(unfinished.standardError)")
            let (parts, reencoded) = try Self.decoded(ProbeResult.self, unfinished.standardOutput)
            #expect(reencoded == Self.line(unfinished.standardOutput))
            guard case .unfinishedStream(let kept) = parts else {
                Issue.record("not an unfinished stream: \(parts)")
                return
            }
            #expect((kept.source, kept.segments, kept.segmentsKept, kept.bytesKept) == (Self.shownURL, 6, [0, 3], 3500))
            #expect(
                Self.line(unfinished.standardOutput)
                    == #"{"bytes_kept":3500,"complete":false,"segments":6,"segments_kept":[0,3],"stream":"\#(Self.shownURL)"}"#)

            // A failed `get --json` ends with its error, not an event.
            let failed = try await vfetch(["get", origin.url("/missing.mp4"), "-o", directory + "/missing.mp4", "--json"])
            let last = try #require(failed.standardOutput.split(separator: "\n").last.map(String.init))
            #expect(
                Self.line(last)
                    == #"{"event":"error","exit_code":\#(failed.status),"message":"\#(failed.standardError.dropFirst(8).dropLast())"}"#,
                "\(failed)")
        }
    }

    /// serve's `/status` and `cache ls --json` of a cache holding a file and an HLS stream, read whole.
    @Test(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the stream"))
    func theCacheIsACacheStatusAndAListing() async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter {
            $0.hasSuffix(".m4s") || $0 == "init.mp4"
        }
        let sizes = try names.map { try #require(FileManager.default.attributesOfItem(atPath: fixture.path($0))[.size] as? Int) }
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let film = randomBytes(300 << 10, seed: 20)
            origin.publish("/film.bin", film)
            let playlist = origin.url("/s/index.m3u8")
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            var status: CacheStatus?
            var text = ""
            do {
                #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url("/film.bin"))]).status == 0)
                let played = try await ServeStreamTests.frames(server.media(playlist))
                #expect(played.errors.isEmpty, "\(played.errors)")
                // Until every file is whole and no player or download is left.
                for _ in 0..<100 {
                    text = try await run("/usr/bin/curl", ["-sf", server.base + "/status"]).standardOutput
                    let (decoded, encoded) = try Self.decoded(CacheStatus.self, text)
                    #expect(encoded == Self.line(text))
                    status = decoded
                    let files = decoded.entries.flatMap { entry -> [CacheStatus.File] in
                        switch entry {
                        case .file(let file): [file]
                        case .stream(let stream): stream.parts
                        }
                    }
                    if files.count == names.count + 1, files.allSatisfy({ $0.isComplete && $0.readers == 0 && !$0.isDownloading }) { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
            } catch {
                await server.crash()
                throw error
            }
            #expect(await server.stop() == 0)
            let entries = try #require(status?.entries)

            // What the server and `cache ls` print of the film, and of each of the stream's files.
            let urls = names.map { origin.url("/s/" + $0) } + [origin.url("/film.bin")]
            let lengths = Dictionary(uniqueKeysWithValues: zip(urls, sizes + [film.count]))
            var disk: [String: (bytes: Int64, access: Double)] = [:]
            for case .file(let file) in entries { disk[file.url] = (file.bytesOnDisk, file.lastAccess) }
            for case .stream(let stream) in entries { for part in stream.parts { disk[part.url] = (part.bytesOnDisk, part.lastAccess) } }
            func common(_ url: String) -> String {
                let (length, (bytes, access)) = (lengths[url] ?? -1, disk[url] ?? (-1, -1))
                return #""bytes_cached":\#(length),"bytes_on_disk":\#(bytes),"complete":true,"#
                    + #""id":"\#(CacheIndex.id(forKey: url))","key":"\#(url)","kind":"file","last_access":\#(Self.number(access)),"#
                    + #""length":\#(length),"state":"complete","url":"\#(url)""#
            }
            func served(_ url: String) -> String {
                let fields = common(url).replacingOccurrences(of: #""id":"#, with: #""downloading":false,"id":"#)
                return "{" + fields.replacingOccurrences(of: #","state":"#, with: #","playable":[],"readers":0,"state":"#) + "}"
            }
            func listed(_ url: String) -> String {
                "{" + common(url).replacingOccurrences(of: #""id":"#, with: #""error":null,"id":"#) + "}"
            }
            let parts = urls.dropLast().sorted { CacheIndex.id(forKey: $0) < CacheIndex.id(forKey: $1) }
            guard case .stream(let stream)? = entries.first(where: { $0.id != CacheIndex.id(forKey: urls.last!) }) else {
                Issue.record("no stream in \(text)")
                return
            }
            let streamFields = (
                #""bytes_cached":\#(sizes.reduce(0, +)),"bytes_on_disk":\#(stream.bytesOnDisk),"complete":true,"id":"\#(stream.id)","#
                    + #""kind":"stream","last_access":\#(Self.number(stream.lastAccess)),"#,
                #""segments":\#(names.count),"segments_cached":\#(names.count),"state":"complete","url":"\#(playlist)","#
                    + #""variants":["\#(playlist)"],"variants_read":["\#(playlist)"]"#
            )
            let servedStream =
                "{" + streamFields.0.replacingOccurrences(of: #""id":"#, with: #""downloading":false,"id":"#)
                + #""parts":[\#(parts.map(served).joined(separator: ","))],"readers":0,"# + streamFields.1 + "}"
            let listedStream = "{" + streamFields.0 + #""parts":[\#(parts.map(listed).joined(separator: ","))],"# + streamFields.1 + "}"
            let filmFirst = CacheIndex.id(forKey: urls.last!) < stream.id
            let servedEntries = filmFirst ? [served(urls.last!), servedStream] : [servedStream, served(urls.last!)]
            #expect(
                Self.line(text)
                    == #"{"bytes_cached":\#(sizes.reduce(0, +) + film.count),"entries":[\#(servedEntries.joined(separator: ","))],"readers":0}"#
            )

            let ls = try await vfetch(["cache", "ls", "--json", "--cache-dir", server.cacheDirectory])
            #expect(ls.status == 0, "\(ls.standardError)")
            let lines = ls.standardOutput.split(separator: "\n")
            for line in lines {
                let (_, encoded) = try Self.decoded(CacheListing.Entry.self, line)
                #expect(encoded == Self.line(String(line)))
            }
            #expect(
                lines.map { Self.line(String($0)) }
                    == (filmFirst ? [listed(urls.last!), listedStream] : [listedStream, listed(urls.last!)]))
        }
    }
}
