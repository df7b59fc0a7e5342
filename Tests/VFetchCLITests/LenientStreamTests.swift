import Foundation
import TestOrigin
import Testing

/// Streams as the real world serves them, end to end.
@Suite(.enabled(if: StreamFixture.isAvailable, "needs ffmpeg to make the streams"))
struct LenientStreamTests {
    static let playlist = {
        var behavior = OriginBehavior()
        behavior.contentType = "application/vnd.apple.mpegurl"
        return behavior
    }()

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
