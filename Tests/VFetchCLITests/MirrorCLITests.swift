import Foundation
import TestOrigin
import Testing

/// `--mirror` and Metalink v4 files on the command line.
@Suite struct MirrorCLITests {
    static func metalink(name: String, size: Int, sha256: String, urls: [String]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="\(name)">
            <size>\(size)</size>
            <hash type="sha-256">\(sha256)</hash>
            \(urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined(separator: "\n"))
          </file>
        </metalink>
        """
    }

    static func served(as contentType: String) -> OriginBehavior {
        var behavior = OriginBehavior()
        behavior.contentType = contentType
        return behavior
    }

    @Test func aMetalinkFileDownloadsFromItsURLsIntoItsName() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 35)
            origin.publish("/a/film.mp4", bytes, behavior: throttled(1 << 20))
            origin.publish("/b/film.mp4", bytes)
            let file = directory + "/film.meta4"
            let text = Self.metalink(
                name: "film.mp4", size: bytes.count, sha256: sha256(bytes), urls: [origin.url("/a/film.mp4"), origin.url("/b/film.mp4")])
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let run = try await vfetch(["get", file, "-d", directory + "/out", "-c", "4", "-q"])
            #expect(run.status == 0, "\(run.standardError)")
            #expect(try sha256(file: directory + "/out/film.mp4") == sha256(bytes))
            #expect(origin.bytesServed("/b/film.mp4") > 0)
        }
    }

    /// The summary says how many bytes each source gave: `--json`'s `done` lists them as `sources`, the
    /// human summary a line each; a mirror's password is masked in both.
    @Test func theSummarySaysWhatEachSourceGave() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 40)
            origin.publish("/a/film.mp4", bytes, behavior: throttled(128 << 10))  // 8 s alone: time for the mirror to take segments
            origin.publish("/b/film.mp4", bytes)
            let (primary, mirror) = (origin.url("/a/film.mp4"), origin.url("/b/film.mp4"))
            let secret = mirror.replacingOccurrences(of: "http://", with: "http://ann:hunter2@")
            let shown = mirror.replacingOccurrences(of: "http://", with: "http://ann:***@")
            let json = try await vfetch(["get", primary, "--mirror", secret, "-c", "4", "-o", directory + "/j.mp4", "--json"])
            #expect(json.status == 0, "\(json.standardError)")
            let done = try #require(
                try JSONSerialization.jsonObject(with: Data(json.standardOutput.split(separator: "\n").last.map(String.init)!.utf8))
                    as? [String: Any])
            let sources = try #require(done["sources"] as? [[String: Any]], "\(done)")
            #expect(sources.compactMap { $0["url"] as? String } == [primary, shown], "\(sources)")
            let counts = sources.compactMap { $0["bytes"] as? Int }
            #expect(counts.count == 2 && counts.reduce(0, +) == bytes.count && counts[1] > 0, "\(sources)")
            #expect(try sha256(file: directory + "/j.mp4") == sha256(bytes))

            let human = try await vfetch(["get", primary, "--mirror", secret, "-c", "4", "-o", directory + "/h.mp4"])
            #expect(human.status == 0, "\(human.standardError)")
            let lines = human.standardError.split(separator: "\n").map(String.init)
            let saved = try #require(lines.firstIndex { $0.hasPrefix("vfetch: saved ") }, "\(lines)")
            #expect(lines.count == saved + 3, "\(lines)")
            #expect(lines.dropFirst(saved + 1).first?.hasSuffix(" from \(primary)") == true, "\(lines)")
            #expect(lines.last?.hasSuffix(" from \(shown)") == true, "\(lines)")
            #expect(!json.standardOutput.contains("hunter2") && !human.standardError.contains("hunter2"))
        }
    }

    /// A Metalink file fetched by URL is read, not saved (aria2c's --follow-metalink): its file comes from
    /// its URLs into its name. Known by its name under a vague type, or by its type alone.
    @Test func aMetalinkURLIsFollowed() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(4 << 20, seed: 41)
            origin.publish("/a/film.mp4", bytes, behavior: throttled(128 << 10))
            origin.publish("/b/film.mp4", bytes)
            let text = Self.metalink(
                name: "film.mp4", size: bytes.count, sha256: sha256(bytes), urls: [origin.url("/a/film.mp4"), origin.url("/b/film.mp4")])
            origin.publish("/film.meta4", Array(text.utf8), behavior: Self.served(as: "application/octet-stream"))
            origin.publish("/get", Array(text.utf8), behavior: Self.served(as: "application/metalink4+xml"))

            let named = try await vfetch(["get", origin.url("/film.meta4"), "-d", directory + "/out", "-c", "4"])
            #expect(named.status == 0, "\(named.standardError)")
            #expect(try sha256(file: directory + "/out/film.mp4") == sha256(bytes))
            #expect(!exists(directory + "/out/film.meta4"))
            #expect(origin.bytesServed("/b/film.mp4") > 0)
            #expect(named.standardError.contains("is a Metalink file: downloading film.mp4 from its 2 URLs"), "\(named.standardError)")

            let byType = try await vfetch(["get", origin.url("/get?id=7"), "-o", directory + "/typed.mp4", "-q"])
            #expect(byType.status == 0, "\(byType.standardError)")
            #expect(try sha256(file: directory + "/typed.mp4") == sha256(bytes))
        }
    }

    /// A Metalink URL whose answer is too large, or not a Metalink file vfetch reads, fails in one line
    /// (exit code 10, a bad response) and saves nothing.
    @Test(arguments: ["large", "hostile"]) func aBadMetalinkURLIsOneLine(_ kind: String) async throws {
        try await withOrigin { origin, directory in
            let body =
                kind == "large"
                ? Array("<metalink>".utf8) + [UInt8](repeating: 0x20, count: 2 << 20)
                : Array("<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><metalink/>".utf8)
            origin.publish("/bad.meta4", body, behavior: Self.served(as: "application/metalink4+xml"))
            let run = try await vfetch(["get", origin.url("/bad.meta4"), "-d", directory])
            #expect(run.status == 10, "\(run.standardError)")
            #expect(run.standardError.split(separator: "\n").count == 1, "\(run.standardError)")
            let reason = kind == "large" ? "more than the 1 MiB vfetch reads" : "not a Metalink file"
            #expect(run.standardError.contains(reason), "\(run.standardError)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func aMetalinkHashMismatchFailsWithTheChecksumExitCode() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 36)
            origin.publish("/film.mp4", bytes)
            let file = directory + "/film.meta4"
            let wrong = sha256(randomBytes(1 << 20, seed: 37))
            try Self.metalink(name: "film.mp4", size: bytes.count, sha256: wrong, urls: [origin.url("/film.mp4")])
                .write(toFile: file, atomically: true, encoding: .utf8)
            let run = try await vfetch(["get", "--metalink", file, "-o", directory + "/film.mp4"])
            #expect(run.status == 9, "\(run.standardError)")
            #expect(run.standardError.contains("checksum mismatch"))
            #expect(!exists(directory + "/film.mp4"))
        }
    }

    @Test func aMetalinkSizeOtherThanTheServersFailsAtOnce() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 39)
            origin.publish("/film.mp4", bytes)
            let file = directory + "/film.meta4"
            try Self.metalink(name: "film.mp4", size: bytes.count + 1, sha256: sha256(bytes), urls: [origin.url("/film.mp4")])
                .write(toFile: file, atomically: true, encoding: .utf8)
            let run = try await vfetch(["get", file, "-d", directory])
            #expect(run.status == 6, "\(run.standardError)")
            #expect(run.standardError.contains("the Metalink file \(bytes.count + 1) bytes"), "\(run.standardError)")
        }
    }

    /// A `--checksum` other than the Metalink file's hash is a mismatch known before any byte is fetched,
    /// whether the file is local or fetched by URL: exit code 9, one line, nothing saved.
    @Test func aChecksumOtherThanTheMetalinkFilesFailsBeforeAnyByte() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(1 << 20, seed: 38)
            origin.publish("/film.mp4", bytes)
            let text = Self.metalink(name: "film.mp4", size: bytes.count, sha256: sha256(bytes), urls: [origin.url("/film.mp4")])
            let file = directory + "/film.meta4"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            origin.publish("/film.meta4", Array(text.utf8), behavior: Self.served(as: "application/metalink4+xml"))
            let other = "sha256=" + sha256(randomBytes(16, seed: 39))
            for source in [file, origin.url("/film.meta4")] {
                let run = try await vfetch(["get", source, "--checksum", other, "-d", directory + "/out"])
                #expect(run.status == 9, "\(run.standardError)")
                #expect(run.standardError.contains("checksum mismatch"), "\(run.standardError)")
                #expect(run.standardError.contains("the Metalink file's"), "\(run.standardError)")
            }
            #expect(origin.bytesServed("/film.mp4") == 0)
            #expect(!exists(directory + "/out/film.mp4"))
        }
    }

    /// `-o -` writes the file a Metalink file describes to standard output, from its URLs, its hash checked.
    @Test func aMetalinkFileGoesToStandardOutput() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 << 20, seed: 41)
            origin.publish("/a/film.mp4", bytes, behavior: throttled(1 << 20))
            origin.publish("/b/film.mp4", bytes)
            let file = directory + "/film.meta4"
            try Self.metalink(
                name: "film.mp4", size: bytes.count, sha256: sha256(bytes), urls: [origin.url("/a/film.mp4"), origin.url("/b/film.mp4")]
            ).write(toFile: file, atomically: true, encoding: .utf8)
            let command = "'\(vfetchBinary)' get --metalink '\(file)' -o - -c 4 | sha256sum > '\(directory)/digest'"
            let run = try await run("/bin/bash", ["-c", "set -o pipefail; " + command])
            #expect(run.status == 0, "\(run.standardError)")
            let printed = try String(contentsOfFile: directory + "/digest", encoding: .utf8).prefix(64)
            #expect(String(printed) == sha256(bytes), "\(run.standardError)")
            #expect(!exists(directory + "/film.mp4"))
        }
    }

    @Test func formatsAreListedForAURLNotAMetalinkFile() async throws {
        let run = try await vfetch(["get", "--metalink", "film.meta4", "-F"])
        #expect(run.status == 64)
        #expect(run.standardError.contains("not of a Metalink file"), "\(run.standardError)")
    }

    @Test func aBadMetalinkFileIsOneLineAndExitCodeOne() async throws {
        try await withOrigin { _, directory in
            let file = directory + "/bad.meta4"
            try "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><metalink/>".write(toFile: file, atomically: true, encoding: .utf8)
            let run = try await vfetch(["get", file, "-d", directory])
            #expect(run.status == 1)
            #expect(run.standardError.hasPrefix("vfetch: unreadable manifest: \(file): "), "\(run.standardError)")
            #expect(run.standardError.split(separator: "\n").count == 1, "\(run.standardError)")
        }
    }

    @Test func aMirrorIsForOneURL() async throws {
        let run = try await vfetch(["get", "http://a.example/1", "http://a.example/2", "--mirror", "http://b.example/1"])
        #expect(run.status == 64)
        #expect(run.standardError.contains("--mirror and --metalink are for one file"))
    }
}
