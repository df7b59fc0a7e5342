import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What someone else put where vfetch writes or reads: a symbolic link to a file of theirs, a FIFO, a
/// device. vfetch never writes through a link, never replaces anything but a regular file, never
/// blocks on a FIFO, and leaves no temporary file behind however it ends.
@Suite struct HostileFileTests {
    /// A file that must come out of every test byte for byte as it went in.
    static func victim(in directory: String) throws -> (path: String, sha256: String) {
        let path = directory + "/victim.txt"
        try Data("precious, not to be overwritten\n".utf8).write(to: URL(fileURLWithPath: path))
        return (path, try sha256(file: path))
    }

    @Test func aPartFileThatIsALinkIsRefusedAndWhatItPointsToIsKept() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", randomBytes(1 << 20, seed: 71))
            let victim = try Self.victim(in: directory)
            let output = directory + "/clip.mp4"
            try FileManager.default.createSymbolicLink(atPath: output + ".part", withDestinationPath: victim.path)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(run.status == 7, "stderr: \(run.standardError)")
            #expect(run.standardError == "vfetch: cannot write output: \(output).part is a symbolic link, not a regular file\n")
            #expect(try sha256(file: victim.path) == victim.sha256)
            #expect(kind(output) == nil, "no output, least of all a link to the victim")
            #expect(kind(output + ".part") == S_IFLNK)
        }
    }

    @Test func aManifestThatIsALinkIsRefused() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", randomBytes(1 << 20, seed: 72))
            let victim = try Self.victim(in: directory)
            let output = directory + "/clip.mp4"
            try FileManager.default.createSymbolicLink(atPath: output + ".vfetch", withDestinationPath: victim.path)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(run.status == 7, "stderr: \(run.standardError)")
            #expect(run.standardError.hasSuffix("\(output).vfetch is a symbolic link, not a regular file\n"))
            #expect(try sha256(file: victim.path) == victim.sha256)
            #expect(kind(output) == nil && kind(output + ".part") == nil)
        }
    }

    /// A stale `NAME.vfetch.tmp` is removed, not written through, and the manifest made in its place
    /// is private.
    @Test func aTemporaryManifestThatIsALinkIsNotFollowed() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(2 << 20, seed: 73)
            origin.publish("/clip.mp4", bytes)
            let victim = try Self.victim(in: directory)
            let output = directory + "/clip.mp4"
            try FileManager.default.createSymbolicLink(atPath: output + ".vfetch.tmp", withDestinationPath: victim.path)
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output])
            #expect(run.status == 0, "stderr: \(run.standardError)")
            #expect(try sha256(file: victim.path) == victim.sha256)
            #expect(kind(output) == S_IFREG)
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(kind(output + ".vfetch.tmp") == nil && kind(output + ".vfetch") == nil)
        }
    }

    /// `--force` replaces a regular file, never a FIFO, a device or a link.
    @Test(arguments: ["FIFO", "symbolic link"])
    func anOutputThatIsNotARegularFileIsNeverReplaced(what: String) async throws {
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", randomBytes(1 << 20, seed: 74))
            let victim = try Self.victim(in: directory)
            let output = directory + "/clip.mp4"
            if what == "FIFO" {
                #expect(mkfifo(output, 0o600) == 0)
            } else {
                try FileManager.default.createSymbolicLink(atPath: output, withDestinationPath: victim.path)
            }
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", output, "--force"])
            #expect(run.status == 7, "stderr: \(run.standardError)")
            #expect(run.standardError == "vfetch: cannot write output: \(output) is a \(what), not a regular file\n")
            #expect(kind(output) == (what == "FIFO" ? S_IFIFO : S_IFLNK))
            #expect(try sha256(file: victim.path) == victim.sha256)
            #expect(kind(output + ".part") == nil)
        }
    }

    /// Without `--force` too the answer is that it is no regular file, not that `--force` would help.
    /// (Never run with `--force` on a real device: as root the old behaviour replaced it.)
    @Test func aDeviceAsOutputIsRefusedForWhatItIs() async throws {
        try await withOrigin { origin, _ in
            origin.publish("/clip.mp4", randomBytes(1 << 20, seed: 75))
            let run = try await vfetch(["get", origin.url("/clip.mp4"), "-o", "/dev/null"])
            #expect(run.status == 7, "stderr: \(run.standardError)")
            #expect(run.standardError == "vfetch: cannot write output: /dev/null is a character device, not a regular file\n")
            #expect(kind("/dev/null") == S_IFCHR && kind("/dev/null.part") == nil)
        }
    }

    @Test func infoOfAFIFOSaysSoAtOnce() async throws {
        let directory = NSTemporaryDirectory() + "vfetch-fifo-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/clip.mp4"
        #expect(mkfifo(fifo, 0o600) == 0)
        let run = try await run(vfetchBinary, ["info", fifo], timeout: .seconds(10))
        #expect(run.status == 1, "stderr: \(run.standardError)")
        #expect(run.standardError == "vfetch: \(fifo) is a FIFO, not a regular file\n")
        #expect(run.standardOutput.isEmpty)
    }

    /// An unfinished download's manifest that is a FIFO is not read (the read would block).
    @Test func infoOfADownloadWhoseManifestIsAFIFOSaysSoAtOnce() async throws {
        let directory = NSTemporaryDirectory() + "vfetch-fifo-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/clip.mp4"
        #expect(mkfifo(output + ".vfetch", 0o600) == 0)
        let run = try await run(vfetchBinary, ["info", output], timeout: .seconds(10))
        #expect(run.status == 1, "stderr: \(run.standardError)")
        #expect(run.standardError == "vfetch: unreadable manifest: \(output).vfetch is a FIFO, not a regular file\n")
    }

    /// `info URL` keeps what it fetches in a temporary file: none is left after a failure, Ctrl-C,
    /// SIGTERM, or even `kill -9`.
    @Test func infoOfAURLLeavesNoTemporaryFileHoweverItEnds() async throws {
        try await withOrigin { origin, directory in
            let scratch = directory + "/tmp/"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            let environment = ["TMPDIR": scratch]
            origin.publish("/garbage.mp4", randomBytes(1 << 20, seed: 76))
            origin.publish("/slow.mp4", randomBytes(4 << 20, seed: 77), behavior: throttled(32 << 10))
            let missing = try await run(vfetchBinary, ["info", origin.url("/missing.mp4")], environment: environment)
            #expect(missing.status == 5, "stderr: \(missing.standardError)")
            let garbage = try await run(vfetchBinary, ["info", origin.url("/garbage.mp4")], environment: environment)
            #expect(garbage.status == 12, "stderr: \(garbage.standardError)")
            for signal in [SIGINT, SIGTERM, SIGKILL] {
                let before = origin.requests.filter { $0.path == "/slow.mp4" }.count
                let stopped = try await run(
                    vfetchBinary, ["info", origin.url("/slow.mp4")], signal: signal,
                    when: { origin.requests.filter { $0.path == "/slow.mp4" }.count > before }, environment: environment,
                    timeout: .seconds(20))
                #expect(stopped.status != 0, "signal \(signal)")
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch)
            #expect(left.isEmpty, "left behind: \(left)")
        }
    }

    /// The manifest is private state (0600); the `.part` file is the user's, made as the umask says.
    @Test func theManifestIsPrivateAndThePartFileIsNot() async throws {
        try await withOrigin { origin, directory in
            origin.publish("/clip.mp4", randomBytes(4 << 20, seed: 78), behavior: throttled(256 << 10))
            let output = directory + "/clip.mp4"
            let run = try await vfetch(
                ["get", origin.url("/clip.mp4"), "-o", output, "-c", "2"],
                interruptWhen: {
                    exists(output + ".vfetch")
                })
            #expect(run.status == 130, "stderr: \(run.standardError)")
            let mask = umaskOfThisProcess()
            #expect(permissions(output + ".vfetch") == 0o600)
            #expect(permissions(output + ".part") == 0o644 & ~mask)
        }
    }
}

/// The type of what is at `path` (`S_IFREG`, `S_IFLNK`, ...), a link not followed; nil when nothing is.
private func kind(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
}

private func permissions(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}

/// Read from procfs: setting the umask to learn it would race with the other tests' threads.
private func umaskOfThisProcess() -> mode_t {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
    return line.flatMap { mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0o022
}
