import Testing
@testable import VFetchCore

@Suite struct DownloadQueueTests {
    func request(_ name: String) -> DownloadQueue.Request {
        DownloadQueue.Request(url: "http://h/\(name)", output: "/tmp/\(name)", outputIsDirectory: false)
    }

    @Test func runsAtMostTheLimitInOrder() {
        var queue = DownloadQueue()
        let added = (1...5).map { queue.add(request("f\($0)")) }
        #expect(added.map(\.actions) == [[.start("1")], [.start("2")], [.start("3")], [], []])
        #expect(queue.ended("2", error: nil) == [.start("4")])
        #expect(queue.ended("1", error: "HTTP 404") == [.start("5")])
        #expect(queue.item("1")?.state == .failed && queue.item("1")?.error == "HTTP 404")
        #expect(queue.item("2")?.state == .done)
        #expect(queue.running == ["3", "4", "5"])
        // One that finished while being paused is done; a failure then is not recorded.
        #expect(queue.pause("3") == [.stop("3")])
        #expect(queue.ended("3", error: nil) == [] && queue.item("3")?.state == .done)
        #expect(queue.pause("4") == [.stop("4")])
        #expect(queue.ended("4", error: "interrupted") == [] && queue.item("4")?.state == .paused)
    }

    @Test func pauseResumeAndRemove() {
        var queue = DownloadQueue()
        for name in ["a", "b", "c", "d"] { _ = queue.add(request(name)) }
        #expect(queue.pause("2") == [.stop("2"), .start("4")])
        #expect(queue.resume("2") == [])  // queued again, behind the running three
        #expect(queue.item("2")?.state == .queued)
        #expect(queue.remove("1") == [.stop("1"), .start("2")])
        #expect(queue.pause("nope") == nil && queue.resume("nope") == nil && queue.remove("nope") == nil)
        #expect(queue.ended("3", error: "x") == [])
        #expect(queue.resume("3") == [.start("3")], "a failed download can be retried")
        #expect(queue.items.map(\.id) == ["2", "3", "4"])
    }

    @Test func loweringTheLimitStopsTheLatestAndARestartResumesInOrder() throws {
        var queue = DownloadQueue()
        for name in ["a", "b", "c"] { _ = queue.add(request(name)) }
        #expect(queue.setMaxConcurrent(1) == [.stop("3"), .stop("2")])
        #expect(queue.running == ["1"])
        // Saved while "1" ran; after a restart "1" starts again first.
        let saved = try JSONRoundTrip.copy(queue)
        var restarted = saved
        #expect(restarted.recover() == [.start("1")])
        #expect(restarted.setMaxConcurrent(3) == [.start("2"), .start("3")])
        #expect(restarted.add(request("d")).id == "4", "IDs are not reused after a restart")
    }
}

import Foundation

enum JSONRoundTrip {
    static func copy<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }
}
