import Foundation
import Testing

@testable import VFetchCore

@Suite struct FileNameTests {
    @Test func namesFromTheURLPath() {
        #expect(FileName.choose(url: "http://h/videos/My%20Film.mp4?token=abc", suggested: nil) == "My Film.mp4")
        #expect(FileName.choose(url: "http://h/", suggested: nil) == "download")
        #expect(FileName.choose(url: "http://h/a/..", suggested: nil) == "download")
    }

    @Test func prefersContentDisposition() {
        let plain = FileName.fromContentDisposition("attachment; filename=\"movie.mp4\"")
        #expect(plain == "movie.mp4")
        let encoded = FileName.fromContentDisposition("attachment; filename=\"x.mp4\"; filename*=UTF-8''%E7%94%B5%E5%BD%B1.mp4")
        #expect(encoded == "电影.mp4")
        #expect(FileName.choose(url: "http://h/get?id=1", suggested: plain) == "movie.mp4")
    }

    @Test(arguments: ["movie.bin", "Movie; Part 1.bin", #"a "quoted" back\slash.bin"#, "电影 100%.bin"])
    func serveNamesAnAttachmentAsItIsReadBack(name: String) {
        let header = ContentDisposition.attachment(fileName: name)
        #expect(ContentDisposition(header).type == "attachment")
        #expect(FileName.fromContentDisposition(header) == name, "\(header)")
        #expect(header.unicodeScalars.allSatisfy { (0x20..<0x7F).contains($0.value) }, "plain ASCII: \(header)")
    }

    @Test func neverEscapesTheDirectory() {
        #expect(FileName.sanitized("../../etc/passwd") == "passwd")
        #expect(FileName.sanitized("..") == nil)
        #expect(FileName.sanitized("a\u{0}b\nc") == "abc")
        #expect(FileName.sanitized("dir\\evil.mp4") == "evil.mp4")
    }
}

@Suite struct HostileFileNameTests {
    @Test(arguments: [
        (#"attachment; filename="Movie; Part 1.mp4""#, "Movie; Part 1.mp4"),
        (#"attachment; filename="a \"quoted\" name.mp4""#, #"a "quoted" name.mp4"#),
        (#"attachment; filename="back\\slash.mp4""#, #"back\slash.mp4"#),
        (#"attachment;filename=plain.mp4;size=3"#, "plain.mp4"),
        (#"attachment; filename*=UTF-8''Movie%3B%20Part%201.mp4; filename="fallback.mp4""#, "Movie; Part 1.mp4"),
        (#"attachment; filename="fallback.mp4"; filename*=utf-8'en'%E7%94%B5%E5%BD%B1.mp4"#, "电影.mp4"),
        (#"attachment; filename*=ISO-8859-1''%A3%20rates.mp4"#, "£ rates.mp4"),
        (#"attachment; filename*=iso-8859-1'de'M%FCnchen.mkv; filename="Munchen.mkv""#, "München.mkv"),
        // Not UTF-8, or a charset nobody can read: the plain name stands.
        (#"attachment; filename*=UTF-8''%FF%FE.mp4; filename="plain.mp4""#, "plain.mp4"),
        (#"attachment; filename*=KOI8-R''%F0.mp4; filename="plain.mp4""#, "plain.mp4"),
        (#"attachment; title="x; filename=evil.sh"; filename="good.mp4""#, "good.mp4"),
    ])
    func contentDispositionFollowsRFC6266(header: String, name: String) {
        #expect(FileName.fromContentDisposition(header) == name)
    }

    @Test func aServerNeverChoosesAHiddenFile() {
        let dotfile = FileName.fromContentDisposition(#"attachment; filename=".bashrc""#)
        #expect(FileName.choose(url: "http://h/get?id=1", suggested: dotfile) == "bashrc")
        #expect(FileName.choose(url: "http://h/get", suggested: " ..profile") == "profile")
        #expect(FileName.choose(url: "http://h/.hidden.mp4", suggested: nil) == "hidden.mp4")
        #expect(FileName.choose(url: "http://h/x/...", suggested: "...") == "download")
    }

    @Test func longNamesAreCutByBytesKeepingTheExtension() throws {
        // NAME_MAX less the longest side file's suffix.
        let budget = 255 - ".vfetch.tmp".utf8.count
        let stem = String(repeating: "é", count: 200) + String(repeating: "電", count: 50)
        let name = try #require(FileName.sanitized(stem + ".mp4"))
        #expect(name.utf8.count <= budget)
        #expect(name.utf8.count + ".vfetch.tmp".utf8.count <= 255, "every side file fits NAME_MAX")
        #expect(name.hasSuffix(".mp4"))
        #expect(stem.hasPrefix(String(name.dropLast(4))), "cut on a character boundary")
        #expect(name.utf8.count > budget - 3, "no more than one character short")
        // One character far longer than the budget is cut between its scalars, still valid UTF-8, never to ".mp4".
        let combining = "a" + String(repeating: "\u{301}", count: 300) + ".mp4"
        let cut = try #require(FileName.sanitized(combining))
        #expect(cut.utf8.count <= budget && cut.unicodeScalars.first == "a" && cut.hasSuffix(".mp4"))
        // An extension too long to be one is cut like the rest.
        let odd = FileName.sanitized("x." + String(repeating: "y", count: 300))
        #expect(odd?.utf8.count == budget)
        // A name created on disk with its longest side-file suffix: no ENAMETOOLONG.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vfetch-name-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent(name + ".vfetch.tmp").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    }

    @Test func aStreamIsNamedAfterItsPlaylistOrItsFolder() {
        #expect(FileName.forStream(url: "https://cdn.example/videos/bbb/master.m3u8") == "bbb.mp4")
        #expect(FileName.forStream(url: "https://cdn.example/show/episode-4.m3u8?token=x") == "episode-4.mp4")
        #expect(FileName.forStream(url: "https://cdn.example/a/b/manifest.mpd") == "b.mp4")
        #expect(FileName.forStream(url: "https://cdn.example/index.m3u8") == "index.mp4")
        #expect(FileName.forStream(url: "https://cdn.example/") == "stream.mp4")
        #expect(FileName.forStream(url: "https://cdn.example/..%2F..%2Fetc/.hidden.m3u8") == "hidden.mp4")
    }
}
