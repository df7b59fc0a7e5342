import Foundation
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

enum JSONRoundTrip {
    static func copy<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }
}

@Suite struct DamagedQueueTests {
    func saved(
        nextNumber: String = "2", maxConcurrent: String = "3", speed: String = "null", headers: String = "[]", connections: String = "4",
        mirrors: String? = nil
    )
        -> Data
    {
        Data(
            """
            {"items": [{"id": "1", "state": "queued", "request": {"url": "http://h/a.mp4", "output": "/videos/a.mp4",
              "outputIsDirectory": false, "connections": \(connections), "headers": \(headers)\(mirrors.map { #", "mirrors": "# + $0 } ?? "")}}],
             "maxConcurrent": \(maxConcurrent), "maxBytesPerSecond": \(speed), "nextNumber": \(nextNumber)}
            """.utf8)
    }

    @Test func aSoundQueueLoadsAndNumbersOn() throws {
        let mirrored = try JSONDecoder().decode(DownloadQueue.self, from: saved(mirrors: #"["http://m/a.mp4"]"#))
        #expect(mirrored.items.first?.request.mirrors == ["http://m/a.mp4"])
        var queue = try JSONDecoder().decode(DownloadQueue.self, from: saved())
        #expect(queue.items.first?.request.mirrors == nil, "saved before there were mirrors")
        let added = queue.add(DownloadQueue.Request(url: "http://h/b", output: "/videos/b", outputIsDirectory: false))
        #expect(added.id == "2")
    }

    @Test(arguments: [
        // The counter at its end: the next add would overflow.
        ("nextNumber", "9223372036854775807"),
        ("nextNumber", "0"),
        ("nextNumber", "-5"),
        // Below an ID in use: the next add would give that ID twice.
        ("nextNumber", "1"),
        ("maxConcurrent", "9223372036854775807"),
        ("maxConcurrent", "0"),
        ("speed", "0"),
        ("headers", #"["X-A: 1\r\nX-Injected: 1"]"#),
        ("headers", #"["no colon"]"#),
        ("connections", "100000"),
        ("mirrors", #"["file:///etc/passwd"]"#),
        ("mirrors", "[" + Array(repeating: #""http://h/m""#, count: 65).joined(separator: ",") + "]"),
    ])
    func anAbsurdQueueIsRefusedNotTrusted(field: String, value: String) {
        let data =
            switch field {
            case "nextNumber": saved(nextNumber: value)
            case "maxConcurrent": saved(maxConcurrent: value)
            case "speed": saved(speed: value)
            case "headers": saved(headers: value)
            case "mirrors": saved(mirrors: value)
            default: saved(connections: value)
            }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DownloadQueue.self, from: data) }
    }

    @Test func numbersNeverOverflow() {
        var queue = DownloadQueue()
        let limit = queue.setMaxConcurrent(Int.max)
        #expect(limit.isEmpty && queue.maxConcurrent <= 64)
    }
}
