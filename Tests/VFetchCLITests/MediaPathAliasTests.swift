import Foundation
import TestOrigin
import Testing

/// `/stream?url=`, the old name of serve's `/media?url=`, for links, bookmarks and players started
/// before an upgrade: answered exactly as `/media` is.
@Suite struct MediaPathAliasTests {
    static let playlist = """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-KEY:METHOD=AES-128,URI="k.bin"
        #EXTINF:2,
        s1.ts
        #EXTINF:2,
        s2.ts
        #EXT-X-ENDLIST

        """

    /// A read of `url` with curl: its status line and headers but `Date`, and the SHA-256 of its body.
    func read(_ url: String, _ arguments: [String], into directory: String) async throws -> (headers: [String], body: String) {
        let answer = try await run("/usr/bin/curl", ["-s", "-D", "-", "-o", directory + "/body"] + arguments + [url])
        #expect(answer.status == 0, "\(answer.standardError)")
        let headers = answer.standardOutput.split(separator: "\r\n").map(String.init).filter { !$0.lowercased().hasPrefix("date:") }
        return (headers, try sha256(file: directory + "/body"))
    }

    /// `local`, a `/media` URL, by the path's old name.
    func byOldName(_ local: String) -> String { local.replacingOccurrences(of: "/media?", with: "/stream?") }

    @Test func theOldPathAnswersTheSameBytesAndHeadersForAFileAndAPlaylist() async throws {
        let file = randomBytes(1 << 20 | 17, seed: 28)
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", file)
            var playlist = OriginBehavior()
            playlist.contentType = "application/vnd.apple.mpegurl"
            origin.publish("/v/index.m3u8", Array(Self.playlist.utf8), behavior: playlist)
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            let reads: [(url: String, arguments: [String])] = [
                (origin.url("/f.bin"), []), (origin.url("/f.bin"), ["-r", "1000-199999"]), (origin.url("/f.bin"), ["-I"]),
                (origin.url("/v/index.m3u8"), []),
            ]
            for (url, arguments) in reads {
                // Read once first: both reads that are compared then find the cache (and the kept playlist) alike.
                _ = try await read(server.media(url), arguments, into: directory)
                let media = try await read(server.media(url), arguments, into: directory)
                let alias = try await read(byOldName(server.media(url)), arguments, into: directory)
                #expect(media.headers.first?.hasPrefix("HTTP/1.1 2") == true, "\(media.headers)")
                #expect(alias.headers == media.headers, "\(arguments) \(url)")
                // A HEAD's "body" is curl writing the headers, `Date` among them: compared above, without it.
                if !arguments.contains("-I") { #expect(alias.body == media.body, "\(arguments) \(url)") }
            }
            #expect(try await read(server.media(origin.url("/f.bin")), [], into: directory).body == sha256(file))
            // The playlist, by either name, links its segments and key through `/media`.
            _ = try await read(byOldName(server.media(origin.url("/v/index.m3u8"))), [], into: directory)
            let text = try String(contentsOfFile: directory + "/body", encoding: .utf8)
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            for name in ["s1.ts", "s2.ts", "k.bin"] {
                let url = origin.url("/v/" + name).addingPercentEncoding(withAllowedCharacters: unreserved)!
                #expect(text.contains("\n/media?url=" + url) || text.contains("\"/media?url=" + url + "&kind=key\""), "\(text)")
            }
            #expect(!text.contains("/stream?"), "\(text)")
            #expect(await server.stop() == 0)
        }
    }
}
