import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// HLS and DASH through `vfetch serve`: ffmpeg opens the playlist through serve, and every playlist,
/// init section, key and segment it then asks for must come through serve and decode to the
/// source's frames.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct ServeStreamTests {
    /// The checksums of the decoded frames of video stream `map` (framemd5's last column).
    static func frames(_ input: String, map: String = "0:v:0") async throws -> (checksums: [String], errors: String) {
        let result = try await run(
            "/usr/bin/env",
            ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", input, "-map", map, "-f", "framemd5", "-"],
            timeout: .seconds(120))
        let checksums = result.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return (checksums, result.status == 0 ? "" : "ffmpeg exited with \(result.status): \(result.standardError)")
    }

    func withServer(_ body: (TestOrigin, ServerProcess) async throws -> Void) async throws {
        try await withOrigin { origin, directory in
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            do {
                try await body(origin, server)
                #expect(await server.stop() == 0, "a clean stop exits with 0")
            } catch {
                await server.crash()
                throw error
            }
        }
    }

    /// How serve links `url` in a rewritten playlist: root-relative, so that a player resolves it against
    /// the address it reached serve by (a cache in front of serve too); every byte of `url` but the
    /// unreserved ones percent-encoded. `server.base +` it is the link a player on this machine follows.
    func linked(_ url: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return "/media?url=" + url.addingPercentEncoding(withAllowedCharacters: unreserved)!
    }

    /// What serve wrote on stderr so far.
    func log(_ server: ServerProcess) -> String {
        (try? String(contentsOfFile: server.cacheDirectory + ".stderr", encoding: .utf8)) ?? ""
    }

    @Test(arguments: [StreamFixture.Kind.hlsVariants, .hlsFragmented, .hlsByteRange, .hlsEncrypted, .dash])
    func ffmpegPlaysTheStreamThroughServeWithTheSourcesFrames(_ kind: StreamFixture.Kind) async throws {
        let fixture = try await StreamFixture.shared(kind)
        let source = try await Self.frames(fixture.path(fixture.source), map: "0:v")
        #expect(source.checksums.count == StreamFixture.duration * StreamFixture.frameRate)
        try await withServer { origin, server in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let played = try await Self.frames(server.media(origin.url("/s/" + fixture.entry)))
            #expect(played.errors.isEmpty, "\(played.errors)\n\(log(server).suffix(2000))")
            #expect(played.checksums == source.checksums)
            // A media segment has no index at its end: none was asked for its tail (`Range: bytes=-N`), whose
            // bytes a small segment's first answer sends again. (Init sections and keys, a few bytes, still are.)
            let tails = origin.requests.filter {
                $0.header("range")?.hasPrefix("bytes=-") == true && !$0.path.contains("init") && !$0.path.hasSuffix(".key")
            }
            #expect(tails.isEmpty, "\(tails.map { ($0.path, $0.header("range") ?? "") })")
            // Every request went through serve: the origin saw the playlist's parts asked for by serve's
            // cache, and the rewritten playlist names no origin URL outside a url= parameter.
            let playlist = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/s/" + fixture.entry))])
            #expect(playlist.status == 0)
            #expect(!playlist.standardOutput.contains(origin.url("/s/")))
            #expect(playlist.standardOutput.contains("/media?url=") && !playlist.standardOutput.contains(server.base))
            // The segments (and init sections, keys) are cache entries; the playlists, fetched afresh, are not.
            let entries = try await server.files()
            let urls = entries.compactMap { $0["url"] as? String }
            #expect(urls.count >= StreamFixture.duration / StreamFixture.segmentDuration || kind == .hlsByteRange)
            #expect(!urls.isEmpty && urls.allSatisfy { $0.hasPrefix(origin.url("/s/")) })
            #expect(!urls.contains { $0.hasSuffix(".m3u8") || $0.hasSuffix(".mpd") }, "\(urls)")
            // And they are one entry: the stream's, under the URL the player opened.
            let listed = try await server.status()["entries"] as? [[String: Any]] ?? []
            let streams = listed.filter { $0["kind"] as? String == "stream" }
            #expect(streams.count == 1 && listed.count == 1, "\(listed.map { $0["url"] ?? "" })")
            #expect(streams.first?["url"] as? String == origin.url("/s/" + fixture.entry))
            let variants = streams.first?["variants"] as? [String] ?? []
            #expect(variants.count == (kind == .hlsVariants ? StreamFixture.variantSizes.count : 1), "\(variants)")
            #expect((streams.first?["variants_read"] as? [String] ?? []).contains(variants.first ?? "-"))
        }
    }

    /// An HLS stream's AES key comes through serve as a secret: linked apart from the media, kept for
    /// offline play, listed by neither `/status` nor `vfetch cache ls`, and, like every file of the
    /// cache, readable by its owner only.
    @Test func anAESKeyIsKeptPrivateAndUnlisted() async throws {
        let fixture = try await StreamFixture.shared(.hlsEncrypted)
        try await withServer { origin, server in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let keyURL = origin.url("/s/key.key")
            let played = try await Self.frames(server.media(origin.url("/s/" + fixture.entry)))
            #expect(played.errors.isEmpty, "\(played.errors)\n\(log(server).suffix(2000))")
            #expect(origin.requests.contains { $0.path == "/s/key.key" }, "the key came through serve")
            let playlist = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/s/" + fixture.entry))])
            #expect(playlist.standardOutput.contains(linked(keyURL) + "&kind=key"), "\(playlist.standardOutput)")
            let listed = try await run("/usr/bin/curl", ["-sf", server.base + "/status"]).standardOutput
            #expect(listed.contains(".ts") && !listed.contains("key.key"), "\(listed)")
            let table = try await vfetch(["cache", "ls", "--json", "--cache-dir", server.cacheDirectory])
            #expect(table.status == 0 && table.standardOutput.contains(".ts") && !table.standardOutput.contains("key.key"))
            let files = try #require(FileManager.default.enumerator(atPath: server.cacheDirectory)).compactMap { $0 as? String }
            #expect(!files.isEmpty)
            for file in files {
                let mode = try #require(
                    FileManager.default.attributesOfItem(atPath: server.cacheDirectory + "/" + file)[.posixPermissions] as? Int)
                #expect(mode & 0o077 == 0, "\(file) has mode \(String(mode, radix: 8))")
            }
        }
    }

    /// A stream played through serve is one entry in `vfetch cache ls`, its `--json` and `/status`: its
    /// playlist's URL, its files cached of all, their bytes; plain files list as before, and `cache rm`
    /// of the stream removes its files and kept playlist.
    @Test func aStreamIsOneEntryInTheCacheListings() async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter {
            $0.hasSuffix(".m4s") || $0 == "init.mp4"
        }
        let sizes = try names.map { try #require(FileManager.default.attributesOfItem(atPath: fixture.path($0))[.size] as? Int) }
        let total = sizes.reduce(0, +)
        #expect(names.count == 4)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let film = randomBytes(300 << 10, seed: 19)
            origin.publish("/film.mp4", film)
            let playlist = origin.url("/s/index.m3u8")
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            do {
                let read = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url("/film.mp4"))])
                #expect(read.status == 0)
                let played = try await Self.frames(server.media(playlist))
                #expect(played.errors.isEmpty, "\(played.errors)\n\(log(server).suffix(2000))")
                var stream: [String: Any] = [:]
                for _ in 0..<100 {
                    let entries = try await server.status()["entries"] as? [[String: Any]] ?? []
                    stream = entries.first { $0["kind"] as? String == "stream" } ?? [:]
                    if stream["complete"] as? Bool == true { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(stream["url"] as? String == playlist)
                #expect(stream["state"] as? String == "complete")
                #expect(stream["segments"] as? Int == names.count && stream["segments_cached"] as? Int == names.count, "\(stream)")
                #expect(stream["bytes_cached"] as? Int == total)
                #expect(stream["variants"] as? [String] == [playlist] && stream["variants_read"] as? [String] == [playlist])
                let parts = stream["parts"] as? [[String: Any]] ?? []
                #expect(Set(parts.compactMap { $0["url"] as? String }) == Set(names.map { origin.url("/s/" + $0) }))
                let entries = try await server.status()["entries"] as? [[String: Any]] ?? []
                #expect(entries.count == 2)
                #expect(entries.contains { $0["url"] as? String == origin.url("/film.mp4") && $0["complete"] as? Bool == true })
            } catch {
                await server.crash()
                throw error
            }
            #expect(await server.stop() == 0)

            let cache = ["--cache-dir", server.cacheDirectory]
            let table = try await vfetch(["cache", "ls"] + cache)
            #expect(table.status == 0)
            let lines = table.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "a header, the film, the stream: \(lines)")
            let streamLine = try #require(lines.first { $0.hasSuffix(playlist) })
            #expect(streamLine.contains("stream 4/4"), "\(streamLine)")
            #expect(lines.contains { $0.contains("complete") && $0.hasSuffix(origin.url("/film.mp4")) })

            let json = try await vfetch(["cache", "ls", "--json"] + cache)
            let objects = try json.standardOutput.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(objects.count == 2)
            let listed = try #require(objects.first { $0["kind"] as? String == "stream" })
            #expect(listed["url"] as? String == playlist && listed["complete"] as? Bool == true)
            #expect(listed["segments"] as? Int == 4 && listed["segments_cached"] as? Int == 4 && listed["bytes_cached"] as? Int == total)
            #expect((listed["parts"] as? [[String: Any]])?.count == 4)
            let file = try #require(objects.first { $0["kind"] as? String == "file" })
            let fields = ["id", "url", "key", "length", "bytes_cached", "bytes_on_disk", "complete", "state", "error", "last_access"]
            #expect(Set(file.keys).isSuperset(of: fields), "\(file.keys)")
            #expect(file["length"] as? Int == film.count && file["state"] as? String == "complete")

            // Removing the stream removes its files and its kept playlist; the film stays.
            let id = try #require(listed["id"] as? String)
            #expect(try await vfetch(["cache", "rm", id] + cache).status == 0)
            let left = try FileManager.default.contentsOfDirectory(atPath: server.cacheDirectory)
            #expect(!left.contains { $0.hasSuffix(".playlist") }, "\(left)")
            #expect(left.filter { $0.hasSuffix(".part") }.count == 1, "\(left)")
            let after = try await vfetch(["cache", "ls", "--json"] + cache)
            #expect(after.standardOutput.split(separator: "\n").count == 1 && after.standardOutput.contains("film.mp4"))
        }
    }

    /// The DASH fixture's manifest moved around: BaseURLs at the Period (`../media/`) and in each
    /// Representation (`v/`, `a/`), and each SegmentTemplate lent by its AdaptationSet, so the
    /// template's links must be made against each Representation's own BaseURL.
    static func layeredManifest(_ fixture: StreamFixture) throws -> String {
        var text = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
        var searchFrom = text.startIndex
        for directory in ["v/", "a/"] {
            let template = try #require(text.range(of: "<SegmentTemplate", range: searchFrom..<text.endIndex))
            let templateEnd = try #require(text.range(of: "</SegmentTemplate>", range: template.upperBound..<text.endIndex))
            let block = String(text[template.lowerBound..<templateEnd.upperBound])
            text.removeSubrange(template.lowerBound..<templateEnd.upperBound)
            let representation = try #require(
                text.range(of: "<Representation", options: .backwards, range: text.startIndex..<template.lowerBound))
            let representationEnd = try #require(text.range(of: ">", range: representation.upperBound..<text.endIndex))
            text.insert(contentsOf: "<BaseURL>\(directory)</BaseURL>", at: representationEnd.upperBound)
            text.insert(contentsOf: block + "\n", at: representation.lowerBound)
            searchFrom = try #require(text.range(of: "</AdaptationSet>", range: representation.lowerBound..<text.endIndex)).upperBound
        }
        let period = try #require(text.range(of: "<Period id=\"0\" start=\"PT0.0S\">"))
        text.insert(contentsOf: "<BaseURL>../media/</BaseURL>", at: period.upperBound)
        return text
    }

    @Test func ffmpegPlaysADASHManifestWithBaseURLsAtSeveralLevelsAndLentTemplates() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        let source = try await Self.frames(fixture.path(fixture.source), map: "0:v")
        let manifest = try Self.layeredManifest(fixture)
        try await withServer { origin, server in
            try origin.publishDirectory(fixture.directory, at: "/media/v")
            try origin.publishDirectory(fixture.directory, at: "/media/a")
            var behavior = OriginBehavior()
            behavior.contentType = "application/dash+xml"
            origin.publish("/m/manifest.mpd", Array(manifest.utf8), behavior: behavior)
            // The manifest is right: `vfetch get` saves the source's frames from it. (ffmpeg itself
            // cannot read it from the origin: its DASH demuxer mishandles a `../` BaseURL.)
            let saved = server.cacheDirectory + "-direct.mp4"
            let got = try await vfetch(["get", origin.url("/m/manifest.mpd"), "-o", saved])
            #expect(got.status == 0, "\(got.standardError)")
            #expect(try await Self.frames(saved).checksums == source.checksums)
            let played = try await Self.frames(server.media(origin.url("/m/manifest.mpd")))
            #expect(played.errors.isEmpty, "\(played.errors)\n\(log(server).suffix(2000))")
            #expect(played.checksums == source.checksums)
            let entries = try await server.files()
            let urls = entries.compactMap { $0["url"] as? String }
            #expect(urls.contains(origin.url("/media/v/init-stream0.m4s")), "\(urls)")
            #expect(urls.contains(origin.url("/media/a/init-stream1.m4s")), "\(urls)")
        }
    }

    @Test func aLivePlaylistIsReadAfreshAsItGrows() async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        let source = try await Self.frames(fixture.path(fixture.source), map: "0:v")
        let vod = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
        // Live: no playlist type, no end; the last segment not out yet.
        let full = vod.replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD\n", with: "")
        let ending = try #require(full.range(of: "#EXTINF:2.000000,\nsegment2.m4s\n#EXT-X-ENDLIST\n"))
        let live = String(full[..<ending.lowerBound])
        try await withServer { origin, server in
            try origin.publishDirectory(fixture.directory, at: "/s")
            var behavior = OriginBehavior()
            behavior.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/s/index.m3u8", Array(live.utf8), behavior: behavior)
            let playlist = server.media(origin.url("/s/index.m3u8"))
            let first = try await run("/usr/bin/curl", ["-sfD", "-", playlist])
            #expect(first.standardOutput.lowercased().contains("cache-control: no-store"))
            #expect(!first.standardOutput.contains("segment2.m4s"))
            // The stream goes on (and ends) while ffmpeg plays it: it sees the new segment only by
            // reading the playlist through serve again.
            let growing = Task {
                try await Task.sleep(for: .seconds(1))
                origin.replace("/s/index.m3u8", with: Array(full.utf8))
            }
            let played = try await run(
                "/usr/bin/env",
                [
                    "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-live_start_index", "0", "-i", playlist,
                    "-map", "0:v:0", "-f", "framemd5", "-",
                ],
                timeout: .seconds(120))
            try await growing.value
            #expect(played.status == 0, "\(played.standardError)\n\(log(server).suffix(2000))")
            let checksums = played.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
                $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
            }
            #expect(checksums == source.checksums)
            let again = try await run("/usr/bin/curl", ["-sfD", "-", playlist])
            #expect(again.standardOutput.lowercased().contains("cache-control: no-cache"), "ended: no longer live")
        }
    }

    @Test func theRewrittenPlaylistHasAPlaylistsTypeAndIsNotCachedWhenLive() async throws {
        try await withServer { origin, server in
            var behavior = OriginBehavior()
            behavior.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/live/index.m3u8", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg1.ts\n".utf8), behavior: behavior)
            // Named by its type alone: no .m3u8 in the URL.
            origin.publish(
                "/vod", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg1.ts\n#EXT-X-ENDLIST\n".utf8), behavior: behavior)
            let live = try await run("/usr/bin/curl", ["-sfD", "-", server.media(origin.url("/live/index.m3u8"))])
            #expect(live.status == 0)
            #expect(live.standardOutput.lowercased().contains("content-type: application/vnd.apple.mpegurl"))
            #expect(live.standardOutput.lowercased().contains("cache-control: no-store"))
            #expect(live.standardOutput.contains(linked(origin.url("/live/seg1.ts"))))
            // Asked again, the origin is asked again: a live playlist is never served from the cache.
            let before = origin.bytesServed("/live/index.m3u8")
            _ = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/live/index.m3u8"))])
            #expect(origin.bytesServed("/live/index.m3u8") > before)
            // A link to serve itself is kept as it is, not wrapped again.
            let own = server.media(origin.url("/live/index.m3u8"))
            origin.publish("/nested.m3u8", Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(own)\n".utf8))
            let nested = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/nested.m3u8"))])
            #expect(nested.standardOutput == "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(own)\n")
            // No name, no type: told by its first bytes. A file of that type that is none stays as it is.
            var plain = OriginBehavior()
            plain.contentType = "text/plain"
            origin.publish("/get/5", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg9.ts\n".utf8), behavior: plain)
            let sniffed = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/get/5"))])
            #expect(sniffed.standardOutput.contains(linked(origin.url("/get/seg9.ts"))), "\(sniffed)")
            var opaque = OriginBehavior()
            opaque.contentType = "application/octet-stream"
            let notes = Array("just some notes, #EXTM3U later\n".utf8)
            origin.publish("/notes", notes, behavior: opaque)
            let raw = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/notes"))])
            #expect(raw.standardOutput == String(decoding: notes, as: UTF8.self))
            let vod = try await run("/usr/bin/curl", ["-sfD", "-", server.media(origin.url("/vod"))])
            #expect(vod.status == 0)
            #expect(vod.standardOutput.lowercased().contains("cache-control: no-cache"))
            #expect(vod.standardOutput.contains(linked(origin.url("/seg1.ts"))))
        }
    }

    @Test func badPlaylistsAreAnHTTPErrorAndALogLineNeverAHang() async throws {
        try await withServer { origin, server in
            var page = OriginBehavior()
            page.contentType = "text/html"
            origin.publish("/login.m3u8", Array("<!DOCTYPE html><html><body>Sign in</body></html>".utf8), behavior: page)
            origin.publish("/self/master.m3u8", Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nmaster.m3u8\n".utf8))
            // Never published: the origin answers 404.
            var huge = Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n".utf8)
            huge += [UInt8](repeating: UInt8(ascii: "#"), count: 17 << 20)
            origin.publish("/huge.m3u8", huge)
            // A playlist whose segment and key are gone: the player's requests for them, as linked, fail.
            origin.publish(
                "/broken/index.m3u8",
                Array(
                    "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"gone.key\"\n#EXTINF:2,\ngone.ts\n#EXT-X-ENDLIST\n"
                        .utf8))
            let broken = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/broken/index.m3u8"))])
            #expect(broken.standardOutput.contains(linked(origin.url("/broken/gone.ts"))))
            #expect(broken.standardOutput.contains(linked(origin.url("/broken/gone.key"))))
            let requests =
                ["/login.m3u8", "/self/master.m3u8", "/gone.m3u8", "/missing.mpd", "/huge.m3u8"].map { ($0, server.media(origin.url($0))) }
                + ["/broken/gone.ts", "/broken/gone.key"].map { ($0, server.base + linked(origin.url($0))) }
            for (path, url) in requests {
                // Never a hang: a 502 long before curl gives up (a hang answers nothing: "000").
                let answer = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "90", url])
                #expect(answer.standardOutput == "502", "\(path)")
                #expect(log(server).contains(path), "\(path): \(log(server))")
            }
            // Nothing wrong is kept: of these playlists only the good one (a VOD playlist whose parts fail) has a copy.
            let kept = try FileManager.default.contentsOfDirectory(atPath: server.cacheDirectory).filter { $0.hasSuffix(".playlist") }
            #expect(kept.count == 1, "\(kept)")
            // And with the origin down, those that failed still fail rather than answer something kept.
            try await origin.shutdown()
            for path in ["/login.m3u8", "/self/master.m3u8", "/huge.m3u8"] {
                let answer = try await run(
                    "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", server.media(origin.url(path))])
                #expect(answer.standardOutput == "502", "\(path)")
            }
        }
    }

    /// Offline: a stream played once through serve plays again, with the same frames, once its origin
    /// is gone (the listener closed: every connection refused). The VOD playlists come from the copies
    /// serve kept (private files, not cache entries); a segment never fetched is a quick 502 and a log line.
    @Test(arguments: [StreamFixture.Kind.hlsFragmented, .hlsVariants, .hlsEncrypted, .dash])
    func aStreamPlayedOncePlaysAgainWithItsOriginDown(_ kind: StreamFixture.Kind) async throws {
        let fixture = try await StreamFixture.shared(kind)
        let source = try await Self.frames(fixture.path(fixture.source), map: "0:v")
        try await withOrigin { origin, directory in
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            do {
                try origin.publishDirectory(fixture.directory, at: "/s")
                let entry = server.media(origin.url("/s/" + fixture.entry))
                let online = try await Self.frames(entry)
                #expect(online.errors.isEmpty, "\(online.errors)\n\(log(server).suffix(2000))")
                #expect(online.checksums == source.checksums)
                // Asked again while the origin is up: a conditional request, answered 304, and the same playlist.
                let first = try await run("/usr/bin/curl", ["-sf", entry])
                let again = try await run("/usr/bin/curl", ["-sf", entry])
                #expect(again.status == 0 && again.standardOutput == first.standardOutput)
                let asked = origin.requests.filter { $0.path == "/s/" + fixture.entry }
                #expect(asked.last?.status == 304, "\(asked.map(\.status))")
                #expect(asked.last?.headers.contains { $0.0.lowercased() == "if-none-match" } == true)
                // Kept beside the entries, private, and not listed as entries.
                let kept = try FileManager.default.contentsOfDirectory(atPath: server.cacheDirectory).filter { $0.hasSuffix(".playlist") }
                #expect(kept.count >= 1, "\(kept)")
                for name in kept {
                    let mode =
                        try FileManager.default.attributesOfItem(atPath: server.cacheDirectory + "/" + name)[.posixPermissions] as? Int
                    #expect(mode == 0o600, "\(name)")
                }
                let urls = try await server.files().compactMap { $0["url"] as? String }
                #expect(!urls.contains { $0.hasSuffix(".m3u8") || $0.hasSuffix(".mpd") }, "\(urls)")

                try await origin.shutdown()
                let offline = try await Self.frames(entry)
                #expect(offline.errors.isEmpty, "\(offline.errors)\n\(log(server).suffix(2000))")
                #expect(offline.checksums == source.checksums)
                #expect(log(server).contains("answering the copy kept in the cache"))
                let playlist = try await run("/usr/bin/curl", ["-sf", entry])
                #expect(playlist.status == 0 && playlist.standardOutput == first.standardOutput, "\(log(server).suffix(3000))")
                // Another site's page gets no kept copy: what a player kept may be of a private address.
                let page = try await run(
                    "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", "-H", "Sec-Fetch-Site: cross-site", entry])
                #expect(page.standardOutput == "502")

                let started = ContinuousClock.now
                let never = server.base + linked(origin.url("/s/never-fetched.m4s"))
                let answer = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", never])
                #expect(answer.standardOutput == "502")
                #expect(ContinuousClock.now - started < .seconds(20))
                #expect(log(server).contains("never-fetched.m4s"), "\(log(server).suffix(2000))")
                // A playlist never kept has nothing to fall back on: 502 as well.
                let unknown = server.media(origin.url("/s/unknown.m3u8"))
                let refused = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", unknown])
                #expect(refused.standardOutput == "502")
            } catch {
                await server.crash()
                throw error
            }
            // The copies are on disk: the next server on this cache plays the stream offline too.
            #expect(await server.stop() == 0)
            let next = try await ServerProcess.start(cacheDirectory: server.cacheDirectory)
            do {
                let restarted = try await Self.frames(next.media(origin.url("/s/" + fixture.entry)))
                #expect(restarted.errors.isEmpty, "\(restarted.errors)\n\(log(next).suffix(2000))")
                #expect(restarted.checksums == source.checksums)
            } catch {
                await next.crash()
                throw error
            }
            #expect(await next.stop() == 0)
        }
    }

    /// Prefetch: a player's read of segment 1 of a media playlist serve rewrote makes serve fetch
    /// segments 2 to 4 into the cache before anyone asks for them, and no more; a seek far away stops
    /// what was fetched ahead for the old place.
    @Test func theNextSegmentsAreFetchedAheadOfThePlayerAndASeekStopsThem() async throws {
        try await withServer { origin, server in
            var media = OriginBehavior()
            media.contentType = "video/mp2t"
            var slow = media
            slow.bytesPerSecond = 16 << 10
            slow.maxConcurrentResponses = 2
            let count = 12
            for index in 0..<count {
                // Segments 6 to 8 are large and slow: still coming (for half a minute) when the player seeks away.
                let slowly = (6...8).contains(index)
                origin.publish(
                    "/p/seg\(index).ts", randomBytes(slowly ? 1 << 20 : 256 << 10, seed: UInt64(index)), behavior: slowly ? slow : media)
            }
            let lines = (0..<count).map { "#EXTINF:2,\nseg\($0).ts\n" }.joined()
            var type = OriginBehavior()
            type.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/p/index.m3u8", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(lines)#EXT-X-ENDLIST\n".utf8), behavior: type)
            let playlist = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/p/index.m3u8"))])
            #expect(playlist.status == 0)
            let segment = { (index: Int) in server.base + linked(origin.url("/p/seg\(index).ts")) }
            let first = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", segment(1)])
            #expect(first.status == 0)
            for index in 2...4 {
                let cached = try await server.waitForEntry(origin.url("/p/seg\(index).ts"), seconds: 15) { $0["complete"] as? Bool == true }
                #expect(cached, "segment \(index) is in the cache before the player asks for it")
            }
            // Bounded: nothing further ahead, nothing behind.
            try await Task.sleep(for: .milliseconds(500))
            let asked = Set(origin.requests.map(\.path))
            #expect(!asked.contains("/p/seg5.ts") && !asked.contains("/p/seg0.ts"), "\(asked.sorted())")

            // The player goes on to segment 5: 6 to 8 start, slowly. Then it seeks back to 0.
            _ = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", segment(5)])
            for index in 6...8 {
                let started = try await server.waitForEntry(origin.url("/p/seg\(index).ts"), seconds: 15) {
                    $0["downloading"] as? Bool == true
                }
                #expect(started, "segment \(index) is fetched ahead")
            }
            _ = try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", segment(0)])
            for index in 6...8 {
                let stopped = try await server.waitForEntry(origin.url("/p/seg\(index).ts"), seconds: 10) {
                    $0["downloading"] as? Bool == false
                }
                #expect(stopped, "segment \(index), far from the player now, is no longer fetched")
            }
            try await expectStopped((6...8).map { "/p/seg\($0).ts" }, on: origin)
            // Read later (the origin quick again), a stopped segment is fetched again, whole and right.
            origin.setBehavior("/p/seg7.ts", media)
            let saved = server.cacheDirectory + "-seg7"
            let later = try await run("/usr/bin/curl", ["-sf", "-m", "30", "-o", saved, segment(7)])
            #expect(later.status == 0, "\(later)\n\(log(server).suffix(2000))")
            #expect(FileManager.default.contents(atPath: saved) == Data(randomBytes(1 << 20, seed: 7)))
        }
    }

    /// The segment a player waits for comes before those fetched ahead of it: the origin answers two
    /// responses at once and each slowly, so the read-ahead (`--prefetch full`) and the segment the
    /// player seeked to would compete for the same two places; the player's is whole before any part
    /// of the others arrives, and they follow.
    @Test func theSegmentAPlayerWaitsForComesBeforeThoseFetchedAhead() async throws {
        try await withServer { origin, server in
            var configuration = OriginConfiguration()
            configuration.maxResponsesPerClient = 2
            origin.configuration = configuration
            var media = OriginBehavior()
            media.contentType = "video/mp2t"
            media.bytesPerSecond = 256 << 10
            let count = 10
            let size = 512 << 10
            for index in 0..<count { origin.publish("/w/seg\(index).ts", randomBytes(size, seed: UInt64(100 + index)), behavior: media) }
            let lines = (0..<count).map { "#EXTINF:2,\nseg\($0).ts\n" }.joined()
            var type = OriginBehavior()
            type.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/w/index.m3u8", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(lines)#EXT-X-ENDLIST\n".utf8), behavior: type)
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url("/w/index.m3u8"))]).status == 0)
            // A seek: the player's first read is segment 5.
            let saved = server.cacheDirectory + "-seg5"
            let seek = try await run("/usr/bin/curl", ["-sf", "-m", "60", "-o", saved, server.base + linked(origin.url("/w/seg5.ts"))])
            #expect(seek.status == 0, "\(seek)\n\(log(server).suffix(2000))")
            #expect(FileManager.default.contents(atPath: saved) == Data(randomBytes(size, seed: 105)))
            for index in 6...8 {
                let cached = try await server.waitForEntry(origin.url("/w/seg\(index).ts"), seconds: 30) { $0["complete"] as? Bool == true }
                #expect(cached, "segment \(index) is fetched ahead")
            }
            // The order the origin finished its responses in: segment 5's last part before any of theirs.
            let finished = origin.completedResponses
            let whole = try #require(finished.lastIndex(of: "/w/seg5.ts"))
            for index in 6...8 {
                let first = finished.firstIndex(of: "/w/seg\(index).ts") ?? .max
                #expect(whole < first, "segment 5 is whole before a part of \(index) arrives: \(finished)")
            }
        }
    }

    /// Prefetch on DASH: the segments a static MPD's templates name are read ahead as an HLS playlist's are.
    @Test func theNextDASHSegmentsAreFetchedAheadOfThePlayer() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        try await withServer { origin, server in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let manifest = try await run("/usr/bin/curl", ["-sf", server.media(origin.url("/s/manifest.mpd"))])
            #expect(manifest.status == 0)
            let first = try await run(
                "/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", server.base + linked(origin.url("/s/chunk-stream0-00001.m4s"))])
            #expect(first.status == 0)
            for number in 2...3 {
                let url = origin.url("/s/chunk-stream0-0000\(number).m4s")
                let cached = try await server.waitForEntry(url, seconds: 15) { $0["complete"] as? Bool == true }
                #expect(cached, "video segment \(number) is in the cache before the player asks for it")
            }
            // The audio Representation is another list: nobody read it, nothing is fetched of it.
            #expect(!origin.requests.contains { $0.path.hasPrefix("/s/chunk-stream1-") }, "\(origin.requests.map(\.path))")
        }
    }

    /// A player that switches variants: what was fetched ahead on the old one stops.
    @Test func aVariantSwitchStopsWhatWasFetchedAheadOnTheOldVariant() async throws {
        try await withServer { origin, server in
            var media = OriginBehavior()
            media.contentType = "video/mp2t"
            var slow = media
            slow.bytesPerSecond = 16 << 10
            slow.maxConcurrentResponses = 2
            var type = OriginBehavior()
            type.contentType = "application/vnd.apple.mpegurl"
            for variant in ["low", "high"] {
                for index in 0..<6 {
                    // The low variant's segments 1 to 3 are large and slow: still coming at the switch.
                    let slowly = variant == "low" && (1...3).contains(index)
                    origin.publish(
                        "/m/\(variant)/\(index).ts", randomBytes(slowly ? 1 << 20 : 64 << 10, seed: UInt64(index)),
                        behavior: slowly ? slow : media)
                }
                let lines = (0..<6).map { "#EXTINF:2,\n\($0).ts\n" }.joined()
                origin.publish(
                    "/m/\(variant)/index.m3u8", Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(lines)#EXT-X-ENDLIST\n".utf8), behavior: type)
            }
            let master =
                "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000\nlow/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=900000\nhigh/index.m3u8\n"
            origin.publish("/m/master.m3u8", Array(master.utf8), behavior: type)
            for path in ["/m/master.m3u8", "/m/low/index.m3u8", "/m/high/index.m3u8"] {
                #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", server.media(origin.url(path))]).status == 0)
            }
            let segment = { (variant: String, index: Int) in server.base + linked(origin.url("/m/\(variant)/\(index).ts")) }
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", segment("low", 0)]).status == 0)
            for index in 1...3 {
                let started = try await server.waitForEntry(origin.url("/m/low/\(index).ts"), seconds: 15) {
                    $0["downloading"] as? Bool == true
                }
                #expect(started, "low \(index) is fetched ahead")
            }
            // The switch: the high variant's next segments come, the low variant's stop.
            #expect(try await run("/usr/bin/curl", ["-sf", "-o", "/dev/null", "-m", "30", segment("high", 0)]).status == 0)
            for index in 1...3 {
                let cached = try await server.waitForEntry(origin.url("/m/high/\(index).ts"), seconds: 15) {
                    $0["complete"] as? Bool == true
                }
                #expect(cached, "high \(index) is fetched ahead")
                let stopped = try await server.waitForEntry(origin.url("/m/low/\(index).ts"), seconds: 10) {
                    $0["downloading"] as? Bool == false
                }
                #expect(stopped, "low \(index) is no longer fetched")
            }
            try await expectStopped((1...3).map { "/m/low/\($0).ts" }, on: origin)
        }
    }

    /// What was fetched ahead of `paths` stopped early: under 1 MiB each, and nothing more arrives for them.
    func expectStopped(_ paths: [String], on origin: TestOrigin, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let served = paths.map { origin.bytesServed($0) }
        try await Task.sleep(for: .seconds(1))
        #expect(paths.map { origin.bytesServed($0) } == served, "nothing more arrives for them", sourceLocation: sourceLocation)
        #expect(served.allSatisfy { $0 < 1 << 20 }, sourceLocation: sourceLocation)
    }
}
