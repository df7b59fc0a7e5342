import Foundation
import TestOrigin
import Testing

/// Streams as the real world serves them, one of whose tracks cannot be read: `info` lists every track it
/// can and marks the other; `get` fails only when it chose the unreadable one.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct LenientStreamTests {
    static let playlist = {
        var behavior = OriginBehavior()
        behavior.contentType = "application/vnd.apple.mpegurl"
        return behavior
    }()

    static func info(_ url: String) async throws -> (Finished, [[String: Any]]) {
        let result = try await vfetch(["info", url, "--json"])
        let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        return (result, object?["tracks"] as? [[String: Any]] ?? [])
    }

    @Test func aMasterWhoseSubtitleRenditionIsMissingListsTheOtherTracks() async throws {
        let fixture = try await StreamFixture.shared(.hlsVariants)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let master = """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",URI="gone/subs.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=777933,RESOLUTION=320x180,SUBTITLES="subs"
                v0/index.m3u8

                """
            origin.publish("/s/lenient.m3u8", Array(master.utf8), behavior: Self.playlist)
            let url = origin.url("/s/lenient.m3u8")

            let (result, tracks) = try await Self.info(url)
            #expect(result.status == 0, "\(result.standardError)")
            try #require(tracks.map { $0["id"] as? String } == ["v0", "SUBTITLES/subs/English"])
            #expect(tracks[0]["segments"] as? Int == StreamFixture.duration / StreamFixture.segmentDuration)
            #expect(tracks[0]["problem"] is NSNull)
            let problem = try #require(tracks[1]["problem"] as? String)
            #expect(problem.contains("gone/subs.m3u8") && problem.contains("404"), "\(problem)")
            let text = try await vfetch(["info", url])
            #expect(text.status == 0 && text.standardOutput.contains("unreadable: "), "\(text.standardOutput)")

            // The default choice does not include the subtitles: saved whole.
            let output = directory + "/out.mp4"
            let saved = try await vfetch(["get", url, "-o", output, "--retries", "0"])
            #expect(saved.status == 0, "\(saved.standardError)")
            #expect(
                try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.sources[0]))))
            // Chosen, it fails the download, naming it.
            let chosen = try await vfetch([
                "get", url, "-o", directory + "/subs.mp4", "--retries", "0", "--format", "id=SUBTITLES/subs/English",
            ])
            // A playlist is not a segment: "HTTP 404" and exit 5, as for a file, not 13 "segment unavailable".
            #expect(chosen.status == 5, "\(chosen.standardError)")
            #expect(chosen.standardError.contains("HTTP 404") && chosen.standardError.contains("gone/subs.m3u8"), "\(chosen.standardError)")
        }
    }

    @Test func aMasterWhoseOnlyVariantIsMissingFailsInfo() async throws {
        try await withOrigin { origin, _ in
            origin.publish("/s/lenient.m3u8", Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\ngone.m3u8\n".utf8), behavior: Self.playlist)
            let (result, _) = try await Self.info(origin.url("/s/lenient.m3u8"))
            #expect(result.status != 0)
            #expect(result.standardError.contains("gone.m3u8"), "\(result.standardError)")
        }
    }

    @Test func aDASHTrackWhoseIndexIsUnreachableIsMarkedAndTheOthersListed() async throws {
        let fixture = try await StreamFixture.shared(.dash)
        try await withOrigin { origin, directory in
            try origin.publishDirectory(fixture.directory, at: "/s")
            let manifest = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8)
            let french = """
                <AdaptationSet id="2" contentType="audio" lang="fr">
                  <Representation id="fr" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="32000">
                    <BaseURL>gone-fr.mp4</BaseURL>
                    <SegmentBase indexRange="800-1199"><Initialization range="0-799"/></SegmentBase>
                  </Representation>
                </AdaptationSet>
                </Period>
                """
            let lenient = manifest.replacingOccurrences(of: "</Period>", with: french)
            var dash = OriginBehavior()
            dash.contentType = "application/dash+xml"
            origin.publish("/s/lenient.mpd", Array(lenient.utf8), behavior: dash)
            let url = origin.url("/s/lenient.mpd")

            let (result, tracks) = try await Self.info(url)
            #expect(result.status == 0, "\(result.standardError)")
            try #require(tracks.map { $0["id"] as? String } == ["0", "1", "fr"])
            #expect(tracks[0]["segments"] as? Int == StreamFixture.duration / StreamFixture.segmentDuration)
            let problem = try #require(tracks[2]["problem"] as? String)
            #expect(problem.contains("gone-fr.mp4"), "\(problem)")

            let output = directory + "/out.mp4"
            let saved = try await vfetch(["get", url, "-o", output, "--retries", "0"])
            #expect(saved.status == 0, "\(saved.standardError)")
            let chosen = try await vfetch(["get", url, "-o", directory + "/fr.mp4", "--retries", "0", "--format", "id=0,id=fr"])
            #expect(chosen.status == 5, "\(chosen.standardError)")
            #expect(chosen.standardError.contains("gone-fr.mp4"), "\(chosen.standardError)")
        }
    }

    @Test func anInitializationSectionEncryptedByTheKeyBeforeItsMapIsDecrypted() async throws {
        let fixture = try await StreamFixture.shared(.hlsFragmented)
        try await withOrigin { origin, directory in
            let encrypted = directory + "/encrypted"
            try FileManager.default.createDirectory(atPath: encrypted, withIntermediateDirectories: true)
            let key = StreamFixture.key.map { String(format: "%02x", $0) }.joined()
            let iv = StreamFixture.iv.map { String(format: "%02x", $0) }.joined()
            for name in ["init.mp4"] + (0..<3).map({ "segment\($0).m4s" }) {
                let openssl = try await run(
                    "/usr/bin/env",
                    ["openssl", "enc", "-aes-128-cbc", "-K", key, "-iv", iv, "-in", fixture.path(name), "-out", encrypted + "/" + name])
                #expect(openssl.status == 0, "\(openssl.standardError)")
            }
            try Data(StreamFixture.key).write(to: URL(fileURLWithPath: encrypted + "/key.key"))
            let playlist = try String(contentsOfFile: fixture.path(fixture.entry), encoding: .utf8).replacingOccurrences(
                of: "#EXT-X-MAP", with: "#EXT-X-KEY:METHOD=AES-128,URI=\"key.key\",IV=0x\(iv)\n#EXT-X-MAP")
            try Data(playlist.utf8).write(to: URL(fileURLWithPath: encrypted + "/index.m3u8"))
            try origin.publishDirectory(URL(fileURLWithPath: encrypted), at: "/e")

            let output = directory + "/out.mp4"
            let result = try await vfetch(["get", origin.url("/e/index.m3u8"), "-o", output])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try await StreamGetTests.videoFrames(output) == (try await StreamGetTests.videoFrames(fixture.path(fixture.source))))
        }
    }
}
