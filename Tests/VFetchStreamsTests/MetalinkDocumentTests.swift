import Testing

@testable import VFetchStreams

@Suite struct MetalinkDocumentTests {
    static func parse(_ text: String) throws(StreamParseError) -> MetalinkDocument { try MetalinkDocument.parse(Array(text.utf8)) }

    @Test func readsNameSizeHashAndURLsByPriority() throws {
        let document = try Self.parse(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <published>2026-11-27T00:00:00Z</published>
              <file name="film.mp4">
                <size>14471447</size>
                <identity>Example</identity>
                <hash type="sha-1">a97fcf6ba9358f8a6f62beee4421863d3e52b080</hash>
                <hash type="sha-256">F0AD929CD259957E160EA442EB80986B5F01AE8C8B4A0B68E8C2E3E9E5A8D0C1</hash>
                <pieces length="262144" type="sha-1"><hash>x</hash></pieces>
                <url priority="2">https://b.example/film.mp4</url>
                <url>http://c.example/film.mp4</url>
                <url location="de" priority="1"> https://a.example/film.mp4 </url>
                <url priority="1">ftp://d.example/film.mp4</url>
                <metaurl mediatype="torrent">https://e.example/film.torrent</metaurl>
              </file>
            </metalink>
            """)
        #expect(document.name == "film.mp4")
        #expect(document.size == 14_471_447)
        #expect(document.sha256 == "f0ad929cd259957e160ea442eb80986b5f01ae8c8b4a0b68e8c2e3e9e5a8d0c1")
        #expect(document.urls == ["https://a.example/film.mp4", "https://b.example/film.mp4", "http://c.example/film.mp4"])
    }

    @Test func aMetalinkIsKnownByItsTypeOrByItsNameUnderAVagueType() {
        #expect(MetalinkDocument.isMetalink(contentType: "application/metalink4+xml; charset=utf-8", path: "/get?id=7"))
        #expect(MetalinkDocument.isMetalink(contentType: nil, path: "/film.META4"))
        #expect(MetalinkDocument.isMetalink(contentType: "application/octet-stream", path: "/film.metalink"))
        #expect(MetalinkDocument.isMetalink(contentType: "application/xml", path: "/film.meta4"))
        #expect(!MetalinkDocument.isMetalink(contentType: "video/mp4", path: "/film.meta4"))
        #expect(!MetalinkDocument.isMetalink(contentType: "application/octet-stream", path: "/film.meta4.mp4"))
        #expect(!MetalinkDocument.isMetalink(contentType: "application/xml", path: "/film.xml"))
    }

    @Test(arguments: [
        // Entities, external and internal: refused with the document type.
        """
        <?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>
        <metalink><file name="a"><url>http://a.example/&x;</url></file></metalink>
        """,
        """
        <?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
        <metalink><file name="a"><url>http://a.example/&b;</url></file></metalink>
        """,
        "<metalink><file name=\"a\"><url>http://a.example/a</url></file>",
        "<html><body>not found</body></html>",
        "<metalink><file name=\"a\"><url>file:///etc/passwd</url><url>javascript:x</url></file></metalink>",
        "<metalink><file name=\"../..\"><url>http://a.example/a</url></file></metalink>",
        "<metalink><file name=\"a\"><url>http://a.example/a</url></file><file name=\"b\"><url>http://a.example/b</url></file></metalink>",
        "<metalink><file name=\"a\"><size>-1</size><url>http://a.example/a</url></file></metalink>",
        "<metalink><file name=\"a\"><hash type=\"sha-256\">abc</hash><url>http://a.example/a</url></file></metalink>",
        "",
        "\u{FF}\u{FE}<metalink/>",
        String(repeating: "<a>", count: 100_000),
    ])
    func hostileOrBrokenFilesAreRefusedInOneLine(text: String) {
        #expect(throws: StreamParseError.self) { try Self.parse(text) }
        do {
            _ = try Self.parse(text)
        } catch {
            #expect(!error.description.contains("\n") && error.description.count < 300, "\(error.description)")
        }
    }

    @Test func aNameLosesItsDirectoriesAndAFileOverTheLimitIsNotRead() throws {
        let document = try Self.parse("<metalink><file name=\"../etc/.passwd\"><url>http://a.example/a</url></file></metalink>")
        #expect(document.name == "passwd")
        let huge = [UInt8](repeating: 0x20, count: MetalinkDocument.maxBytes + 1)
        #expect(throws: StreamParseError.self) { try MetalinkDocument.parse(huge) }
    }
}
