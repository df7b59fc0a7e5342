import Foundation
import Testing
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
