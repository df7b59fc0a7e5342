import Foundation
import Testing

@testable import VFetchStreams

/// MPDs in the encodings XML allows besides UTF-8 read as their UTF-8 twin does.
@Suite struct DASHEncodingTests {
    static let url = URL(string: "https://cdn.example.com/v/manifest.mpd")!

    /// A small MPD whose label has a letter outside ASCII, under the declaration `declaration`.
    static func mpd(_ declaration: String) -> String {
        """
        \(declaration)
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">
          <Period>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="fr">
              <Label>Français</Label>
              <Representation id="a" bandwidth="64000" codecs="mp4a.40.2">
                <SegmentTemplate media="a-$Number$.m4s" initialization="a-init.m4s" duration="2" startNumber="1"/>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """
    }

    static let expected = try! DASHManifest.parse(Array(mpd(#"<?xml version="1.0" encoding="UTF-8"?>"#).utf8), url: url)

    @Test func theUTF8ManifestIsTheReference() {
        #expect(Self.expected.tracks.map(\.name) == ["Français"])
        #expect(Self.expected.tracks.map(\.urls.count) == [2])
    }

    @Test(arguments: [
        ("ISO-8859-1", String.Encoding.isoLatin1), ("iso-8859-1", .isoLatin1), ("windows-1252", .windowsCP1252),
    ])
    func aSingleByteEncodingIsRead(name: String, encoding: String.Encoding) throws {
        let bytes = try #require(Self.mpd("<?xml version='1.0' encoding='\(name)'?>").data(using: encoding))
        #expect(String(validating: bytes, as: UTF8.self) == nil, "the fixture must not be UTF-8")
        #expect(try DASHManifest.parse(bytes, url: Self.url) == Self.expected)
    }

    @Test(arguments: [
        ([0xFF, 0xFE] as [UInt8], String.Encoding.utf16LittleEndian), ([0xFE, 0xFF], .utf16BigEndian), ([], .utf16LittleEndian),
        ([], .utf16BigEndian),
    ])
    func utf16WithOrWithoutAByteOrderMarkIsRead(mark: [UInt8], encoding: String.Encoding) throws {
        let text = try #require(Self.mpd(#"<?xml version="1.0" encoding="UTF-16"?>"#).data(using: encoding))
        let bytes = mark + Array(text)
        #expect(try DASHManifest.parse(bytes, url: Self.url) == Self.expected)
        #expect(StreamFormat.detect(contentType: "text/xml", path: "/v/manifest", firstBytes: bytes) == .dash)
        // serve's rewrite reads it too, and answers UTF-8.
        let (rewritten, _) = try StreamRewrite.dash(bytes, url: Self.url, own: [], budget: SegmentBudget()) { $0 }
        #expect(String(validating: rewritten, as: UTF8.self)?.contains("Français") == true)
    }

    @Test func aDocumentTypeInUTF16IsRefusedToo() throws {
        let text = "<?xml version=\"1.0\"?><!DOCTYPE MPD [<!ENTITY a \"b\">]><MPD>&a;</MPD>"
        let bytes = [0xFF, 0xFE] + Array(try #require(text.data(using: .utf16LittleEndian)))
        #expect(throws: StreamParseError("the manifest declares a document type (<!DOCTYPE), which vfetch refuses")) {
            try DASHManifest.parse(bytes, url: Self.url)
        }
    }

    @Test func anEncodingNotReadIsRefusedNamingIt() {
        let bytes = Array(Self.mpd(#"<?xml version="1.0" encoding="EBCDIC-US"?>"#).utf8)
        #expect(throws: StreamParseError("the manifest is in ebcdic-us, an encoding vfetch does not read")) {
            try DASHManifest.parse(bytes, url: Self.url)
        }
    }
}
