import Foundation
import Testing

@testable import VFetchCache
@testable import VFetchCore

@Suite struct CacheIndexTests {
    @Test func idsAreHashesThatNameNoPath() {
        let id = CacheIndex.id(forKey: "https://example.com/../../etc/passwd")
        #expect(CacheIndex.isID(id))
        #expect(id != CacheIndex.id(forKey: "https://example.com/a.mp4"))
        for bad in ["../x", "", String(repeating: "A", count: 32), String(repeating: "0", count: 31) + "/"] {
            #expect(!CacheIndex.isID(bad))
        }
    }

    @Test func evictsLeastRecentlyUsedFirstAndNeverWhatIsInUse() {
        var index = CacheIndex()
        for (id, time) in [("a", 10.0), ("b", 20.0), ("c", 30.0), ("d", 5.0)] {
            index.entries[id] = CacheIndex.Entry(key: id, url: id, lastAccess: time)
        }
        let sizes: [String: Int64] = ["a": 100, "b": 100, "c": 100, "d": 100]
        #expect(index.evictions(sizes: sizes, maxBytes: 400, inUse: []) == [])
        #expect(index.evictions(sizes: sizes, maxBytes: 250, inUse: []) == ["d", "a"])
        #expect(index.evictions(sizes: sizes, maxBytes: 250, inUse: ["d"]) == ["a", "b"])
        #expect(index.evictions(sizes: sizes, maxBytes: 0, inUse: ["a", "b", "c", "d"]) == [])
        #expect(index.evictions(sizes: ["a": 0, "b": 100], maxBytes: 0, inUse: []) == ["b"], "empty entries free nothing")
    }

    @Test func roundTrips() throws {
        var index = CacheIndex()
        index.entries["x"] = CacheIndex.Entry(key: "k", url: "http://h/x", lastAccess: 1.5)
        #expect(try CacheIndex(decoding: index.encoded()) == index)
        #expect(throws: (any Error).self) { try CacheIndex(decoding: Data("{".utf8)) }
    }
}

@Suite struct CacheKeyTests {
    @Test func aPlayersKeyIsScopedToTheURLsPath() {
        let a = CacheIndex.key(url: "https://cdn.example/film.mp4?sig=1", playerKey: "film")
        #expect(a == CacheIndex.key(url: "https://user:pw@cdn.example/film.mp4?sig=2#t=5", playerKey: "film"))
        #expect(a != CacheIndex.key(url: "https://cdn.example/other.mp4?sig=1", playerKey: "film"))
        #expect(a != CacheIndex.key(url: "https://evil.example/film.mp4", playerKey: "film"))
        #expect(!a.contains("pw"))
        // Without a key the URL is the key; a key never equals another URL's own key.
        let url = "https://cdn.example/film.mp4"
        #expect(CacheIndex.key(url: url, playerKey: nil) == url)
        #expect(CacheIndex.key(url: url, playerKey: "") == url)
        #expect(CacheIndex.key(url: "https://evil.example/x", playerKey: url) != url)
    }

    @Test func aWebPagesReadsHaveKeysOfTheirOwn() {
        let url = "http://192.168.1.2/film.mp4"
        let page = CacheIndex.key(url: url, playerKey: nil, forPage: true)
        #expect(page != url && page != CacheIndex.playlistKey(url: url) && !CacheIndex.isPlaylistKey(page))
        #expect(CacheIndex.key(url: url, playerKey: "film", forPage: true) != CacheIndex.key(url: url, playerKey: "film"))
        // No player's key names a page's entry.
        #expect(CacheIndex.key(url: "http://o/x", playerKey: "page \(url)") != page)
        #expect(CacheIndex.key(url: url, playerKey: nil, forPage: true) == page)
    }
}

@Suite struct ServedContentTypeTests {
    @Test(
        arguments: [
            ("video/mp4", ServedContentType.media("video/mp4")),
            ("Video/MP4; codecs=\"avc1\"", .media("video/mp4")),
            ("application/vnd.apple.mpegurl", .media("application/vnd.apple.mpegurl")),
            ("application/dash+xml", .media("application/dash+xml")),
            ("audio/x-<script>", .opaque),
            ("text/html; charset=utf-8", .page("text/html")),
            ("application/xhtml+xml", .page("application/xhtml+xml")),
            ("image/svg+xml", .page("image/svg+xml")),
            ("text/xml", .page("text/xml")),
            ("application/javascript", .page("application/javascript")),
            ("text/plain", .opaque),
            ("application/octet-stream", .opaque),
            ("", .opaque),
        ] as [(String, ServedContentType)])
    func classifies(type: String, expected: ServedContentType) {
        #expect(ServedContentType(origin: type) == expected)
    }
}

@Suite struct NetworkAddressTests {
    @Test(
        arguments: [
            ([8, 8, 8, 8], true), ([93, 184, 216, 34], true), ([172, 32, 0, 1], true), ([100, 128, 0, 1], true),
            ([127, 0, 0, 1], false), ([10, 1, 2, 3], false), ([172, 16, 0, 1], false), ([172, 31, 255, 255], false),
            ([192, 168, 1, 1], false), ([169, 254, 169, 254], false), ([0, 0, 0, 0], false), ([100, 64, 0, 1], false),
            ([224, 0, 0, 1], false), ([255, 255, 255, 255], false),
        ] as [([UInt8], Bool)])
    func ipv4(address: [UInt8], isPublic: Bool) {
        #expect(NetworkAddress.isPublic(ipv4: address) == isPublic)
    }

    @Test func ipv6() {
        func v6(_ prefix: [UInt8], _ tail: [UInt8] = []) -> [UInt8] {
            prefix + [UInt8](repeating: 0, count: 16 - prefix.count - tail.count) + tail
        }
        #expect(NetworkAddress.isPublic(ipv6: v6([0x26, 0x06, 0x47, 0x00], [1])))
        #expect(!NetworkAddress.isPublic(ipv6: v6([], [1])))  // ::1
        #expect(!NetworkAddress.isPublic(ipv6: v6([])))  // ::
        #expect(!NetworkAddress.isPublic(ipv6: v6([0xFE, 0x80], [1])))  // link-local
        #expect(!NetworkAddress.isPublic(ipv6: v6([0xFD, 0x12], [1])))  // unique local
        #expect(!NetworkAddress.isPublic(ipv6: v6([0x20, 0x01, 0x0D, 0xB8], [1])))  // documentation
        #expect(!NetworkAddress.isPublic(ipv6: v6([], [0xFF, 0xFF, 127, 0, 0, 1])))  // ::ffff:127.0.0.1
        #expect(NetworkAddress.isPublic(ipv6: v6([], [0xFF, 0xFF, 8, 8, 8, 8])))
        #expect(!NetworkAddress.isPublic(ipv6: v6([0x00, 0x64, 0xFF, 0x9B], [192, 168, 0, 1])))  // NAT64
    }
}
