import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a hostile client of the JSON API, a hostile origin or a damaged queue can do to `vfetch serve`
/// and `vfetch get`: each is refused in one line, never a crash, an endless wait or a header passed on.
@Suite struct HostileAPITests {
    /// One API request through curl: the status and the `error` of the answer.
    func api(_ server: ServerProcess, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws
        -> (status: Int, error: String)
    {
        var arguments = ["-s", "-X", method, "-H", "Authorization: Bearer \(try server.token())", "-w", "\n%{http_code}"]
        if let body { arguments += ["--data-binary", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)] }
        let answer = try await run("/usr/bin/curl", arguments + [server.base + path])
        var lines = answer.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        let status = lines.popLast().flatMap { Int($0) } ?? 0
        let object = try? JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8)) as? [String: Any]
        return (status, object?["error"] as? String ?? "")
    }

    /// Whether any request the origin saw carried a header of this name.
    func sawHeader(_ origin: TestOrigin, _ name: String) -> Bool {
        origin.requests.contains { request in request.headers.contains { $0.0.lowercased() == name.lowercased() } }
    }

    static let injected = "X-A: 1\r\nX-Injected: evil"

    @Test func wrongTypesAndAbsurdNumbersGet400NamingTheField() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", randomBytes(64 << 10, seed: 170))
            let server = try await ServerProcess.start(cacheDirectory: directory + "/cache")
            let valid: [String: Any] = ["url": origin.url("/f.bin"), "output": directory + "/f.bin"]
            let downloads: [(String, [String: Any])] = [
                ("url", ["url": 5]),
                ("output", ["output": ["/a"]]),
                ("output_is_directory", ["output_is_directory": "yes"]),
                ("connections", ["connections": "4"]),
                ("connections", ["connections": 1.5]),
                ("connections", ["connections": Int.max]),
                ("connections", ["connections": 0]),
                ("headers", ["headers": "X-A: 1"]),
                ("headers", ["headers": [1]]),
                ("headers", ["headers": [Self.injected]]),
                ("headers", ["headers": ["X-A: 1\u{0}"]]),
                ("headers", ["headers": ["Bad Name: 1"]]),
                ("checksum", ["checksum": 7]),
                ("conections", ["conections": 4]),
            ]
            for (field, change) in downloads {
                let answer = try await api(server, "POST", "/api/downloads", valid.merging(change) { $1 })
                #expect(answer.status == 400, "\(change) was accepted")
                #expect(answer.error.contains(field), "\(change): \(answer.error)")
            }
            let settings: [(String, [String: Any])] = [
                ("max_concurrent", ["max_concurrent": Int.max]),
                ("max_concurrent", ["max_concurrent": 65]),
                ("max_concurrent", ["max_concurrent": "2"]),
                ("max_bytes_per_second", ["max_bytes_per_second": 0]),
                ("max_bytes_per_second", ["max_bytes_per_second": Int.max]),
                ("max_bytes_per_second", ["max_bytes_per_second": "1M"]),
                ("max_bytes_per_second", ["max_bytes_per_second": 2.5]),
                ("max_speed", ["max_speed": 5]),
            ]
            for (field, body) in settings {
                let answer = try await api(server, "PUT", "/api/settings", body)
                #expect(answer.status == 400, "\(body) was accepted")
                #expect(answer.error.contains(field), "\(body): \(answer.error)")
            }
            // Nothing of that reached the queue or its limits; sound requests still work.
            #expect(try await api(server, "GET", "/api/downloads/1").status == 404)
            #expect(try await api(server, "PUT", "/api/settings", ["max_concurrent": 64, "max_bytes_per_second": NSNull()]).status == 200)
            let sound = valid.merging(["output_is_directory": false, "connections": 2, "headers": ["X-Fine: yes"]]) { $1 }
            #expect(try await api(server, "POST", "/api/downloads", sound).status == 201)
            #expect(try await vfetch(["wait", "--cache-dir", directory + "/cache"]).status == 0)
            #expect(origin.requests.contains { $0.header("X-Fine") == "yes" })
            #expect(await server.stop() == 0)
        }
    }

    @Test func aLineBreakInAHeaderNeverReachesTheOrigin() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", randomBytes(64 << 10, seed: 171))
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let url = origin.url("/f.bin")
            let answer = try await api(
                server, "POST", "/api/downloads", ["url": url, "output": directory + "/api.bin", "headers": [Self.injected]])
            #expect(answer.status == 400 && answer.error.contains("headers"), "\(answer)")
            for arguments in [
                ["get", url, "-o", directory + "/get.bin", "-H", Self.injected],
                ["get", url, "-o", directory + "/get.bin", "-H", "X-A: 1\nX-Injected: evil"],
                ["add", url, "-o", directory + "/add.bin", "-H", Self.injected, "--cache-dir", cache],
            ] {
                let refused = try await vfetch(arguments)
                #expect(refused.status == 64, "\(arguments[0]): \(refused)")
                #expect(refused.standardError.contains("header") && !refused.standardError.contains("\r"), "\(refused.standardError)")
            }
            // A server started with such a header would send it with every request: it does not start.
            let serve = try await vfetch(
                ["serve", "--port", "0", "--cache-dir", directory + "/other", "-H", Self.injected], interruptAfter: .seconds(5))
            #expect(serve.status == 64, "\(serve)")
            // Everything the server runs in the meantime is fine, and the origin never saw the injected line.
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            #expect(!sawHeader(origin, "X-Injected"))
            #expect(!exists(directory + "/get.bin") && !exists(directory + "/api.bin") && !exists(directory + "/add.bin"))
            #expect(await server.stop() == 0)
        }
    }

    @Test func aQueueWithACounterAtItsEndIsQuarantinedNotACrash() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/f.bin", randomBytes(64 << 10, seed: 172))
            let cache = directory + "/cache"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            let damaged = #"{"items": [], "maxConcurrent": 3, "nextNumber": 9223372036854775807}"#
            try damaged.write(toFile: cache + "/queue.json", atomically: true, encoding: .utf8)
            let server = try await ServerProcess.start(cacheDirectory: cache)
            let added = try await vfetch(["add", origin.url("/f.bin"), "-o", directory + "/f.bin", "--cache-dir", cache])
            #expect(added.status == 0, "\(added)")
            #expect(added.standardOutput == "1\n", "the queue started over")
            #expect(try String(contentsOfFile: cache + "/queue.json.damaged", encoding: .utf8) == damaged, "kept for a look")
            #expect(try await vfetch(["wait", "--cache-dir", cache]).status == 0)
            #expect(try await api(server, "GET", "/api/downloads/1").status == 200, "the server is still there")
            #expect(await server.stop() == 0)
            #expect(!exists(cache + "/server.json"))
        }
    }

    /// With no server, `ls` reads the saved queue: a damaged one is one line and exit code 1, left as it is.
    @Test func aDamagedSavedQueueIsOneLineWithoutAServer() async throws {
        try await withOrigin { _, directory in
            let damaged = #"{"items": ["#
            try damaged.write(toFile: directory + "/queue.json", atomically: true, encoding: .utf8)
            let listed = try await vfetch(["ls", "--cache-dir", directory])
            #expect(listed.status == 1, "\(listed)")
            #expect(listed.standardError.split(separator: "\n").count == 1, "\(listed.standardError)")
            #expect(listed.standardError.contains("queue.json: not a queue vfetch saved"), "\(listed.standardError)")
            #expect(try String(contentsOfFile: directory + "/queue.json", encoding: .utf8) == damaged)
        }
    }

    @Test func anOriginAskingToWaitAnHourFailsTheDownloadNamingIt() async throws {
        try await withOrigin { origin, directory in
            var hour = OriginBehavior()
            hour.failFirst = 1000
            hour.retryAfter = 3600
            origin.publish("/hour.bin", randomBytes(64 << 10, seed: 173), behavior: hour)
            // Waiting would run into `run`'s 60 s timeout (a kill), not exit 5: no clock needed here.
            let failed = try await vfetch(["get", origin.url("/hour.bin"), "-o", directory + "/hour.bin"])
            #expect(failed.status == 5, "\(failed)")
            #expect(failed.standardError.contains("Retry-After: 3600"), "\(failed.standardError)")
            #expect(failed.standardError.split(separator: "\n").last?.hasPrefix("vfetch: ") == true)
            #expect(!exists(directory + "/hour.bin.part"))

            // A lower limit of the user's.
            var minute = hour
            minute.retryAfter = 60
            origin.publish("/minute.bin", randomBytes(64 << 10, seed: 174), behavior: minute)
            let limited = try await vfetch(["get", origin.url("/minute.bin"), "-o", directory + "/minute.bin", "--max-retry-wait", "30"])
            #expect(limited.status == 5 && limited.standardError.contains("Retry-After: 60"), "\(limited)")
            // Within it, the wait is honoured and shown.
            var second = hour
            second.failFirst = 1
            second.retryAfter = 1
            origin.publish("/second.bin", randomBytes(64 << 10, seed: 175), behavior: second)
            let waited = try await vfetch(["get", origin.url("/second.bin"), "-o", directory + "/second.bin", "--max-retry-wait", "1"])
            #expect(waited.status == 0, "\(waited)")
            #expect(waited.standardError.contains("Retry-After"), "\(waited.standardError)")

            for bad in ["-1", "soon", "1e9"] {
                let usage = try await vfetch(["get", origin.url("/second.bin"), "--max-retry-wait=" + bad])
                #expect(usage.status == 64 && usage.standardError.contains("--max-retry-wait"), "\(bad): \(usage)")
                let serve = try await vfetch(
                    ["serve", "--port", "0", "--cache-dir", directory + "/cache", "--max-retry-wait=" + bad], interruptAfter: .seconds(5))
                #expect(serve.status == 64, "\(bad): \(serve)")
            }
        }
    }

    @Test func aQueuedDownloadThatWouldWaitAnHourFreesItsSlot() async throws {
        try await withOrigin { origin, directory in
            var hour = OriginBehavior()
            hour.failFirst = 1000
            hour.retryAfter = 3600
            origin.publish("/hour.bin", randomBytes(64 << 10, seed: 176), behavior: hour)
            origin.publish("/next.bin", randomBytes(64 << 10, seed: 177))
            let cache = directory + "/cache"
            let server = try await ServerProcess.start(cacheDirectory: cache, ["--max-downloads", "1"])
            let added = try await vfetch(["add", origin.url("/hour.bin"), origin.url("/next.bin"), "-d", directory, "--cache-dir", cache])
            #expect(added.standardOutput == "1\n2\n", "\(added)")
            var states: [String: String] = [:]
            var error = ""
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, states["2"] != "done" {
                try await Task.sleep(for: .milliseconds(200))
                let listed = try await vfetch(["ls", "--json", "--cache-dir", cache])
                for line in listed.standardOutput.split(separator: "\n") {
                    guard let item = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let id = item["id"] as? String
                    else { continue }
                    states[id] = item["state"] as? String
                    if id == "1" { error = item["error"] as? String ?? "" }
                }
            }
            #expect(states == ["1": "failed", "2": "done"])
            #expect(error.contains("Retry-After: 3600"), "\(error)")
            #expect(await server.stop() == 0)
        }
    }

    @Test func serverChosenNamesAreNeitherHiddenNorTooLongForTheDisk() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(64 << 10, seed: 178)
            var dotfile = OriginBehavior()
            dotfile.contentDisposition = #"attachment; filename=".bashrc""#
            origin.publish("/dot", bytes, behavior: dotfile)
            let hidden = try await vfetch(["get", origin.url("/dot"), "-d", directory])
            #expect(hidden.status == 0, "\(hidden)")
            #expect(exists(directory + "/bashrc") && !exists(directory + "/.bashrc"))

            // 150 two-byte characters: 300 bytes, more than a file name may have.
            var long = OriginBehavior()
            let name = String(repeating: "é", count: 150) + ".mp4"
            long.contentDisposition =
                "attachment; filename*=UTF-8''"
                + name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            origin.publish("/long", bytes, behavior: long)
            // 250 ASCII characters: the name fits, `NAME.vfetch` would not.
            var ascii = OriginBehavior()
            ascii.contentDisposition = #"attachment; filename=""# + String(repeating: "a", count: 246) + #".mp4""#
            origin.publish("/ascii", bytes, behavior: ascii)
            for path in ["/long", "/ascii"] {
                try FileManager.default.createDirectory(atPath: directory + path, withIntermediateDirectories: true)
                let saved = try await vfetch(["get", origin.url(path), "-d", directory + path])
                #expect(saved.status == 0, "\(path): \(saved)")
                let files = try FileManager.default.contentsOfDirectory(atPath: directory + path)
                #expect(files.count == 1 && files.allSatisfy { $0.hasSuffix(".mp4") && $0.utf8.count <= 244 }, "\(files)")
            }
        }
    }
}
