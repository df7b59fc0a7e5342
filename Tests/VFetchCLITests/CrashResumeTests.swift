import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// kill -9 and a full disk, with the real binary: the next run resumes, and the result is exact.
@Suite struct CrashResumeTests {
    static let mib = 1 << 20

    /// What `vfetch status --json` says is saved, or nil when there is no readable manifest.
    func savedBytes(_ output: String) async throws -> Int? {
        let status = try await vfetch(["status", output, "--json"])
        guard status.status == 0, let data = status.standardOutput.data(using: .utf8),
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["bytes_done"] as? Int
    }

    @Test func survivesTwentyKillNineAtRandomMoments() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(32 * Self.mib, seed: 41)
            // 8 connections at 128 KiB/s, runs of 0.3–2.3 s: 20 runs fetch about 23 MiB of the
            // 32, so the download does not end by itself before the 20th kill (4 standard
            // deviations away). The last run goes at full speed.
            var throttled = OriginBehavior()
            throttled.bytesPerSecond = 128 << 10
            origin.publish("/film.mp4", bytes, behavior: throttled)
            let output = directory + "/film.mp4"
            let arguments = ["get", origin.url("/film.mp4"), "-o", output, "-c", "8", "-q"]
            var generator = SystemRandomNumberGenerator()
            var kills = 0
            var worstLoss = 0
            while kills < 20 {
                let savedBefore = try await savedBytes(output) ?? 0
                let servedBefore = origin.bytesServed("/film.mp4")
                let lifetime = Double.random(in: 0.3...2.3, using: &generator)
                let clock = ContinuousClock()
                let started = clock.now
                let run = try await vfetch(arguments, signal: SIGKILL, after: .milliseconds(Int(lifetime * 1000)))
                let seconds =
                    Double((clock.now - started).components.attoseconds) * 1e-18
                    + Double((clock.now - started).components.seconds)
                guard run.status == 9 else {
                    Issue.record("the download ended by itself after \(kills) kills: \(run.standardError)")
                    return
                }
                kills += 1
                // A run killed before its first checkpoint (a slow start on a loaded machine) leaves none yet.
                let recorded = try await savedBytes(output)
                #expect(recorded != nil || savedBefore == 0, "the manifest survives kill -9")
                let saved = recorded ?? 0
                #expect(saved >= savedBefore, "a checkpoint never loses what an earlier one recorded")
                // What this run received but did not record: at most one checkpoint interval (1 s) at
                // the rate the origin allows (8 connections at 128 KiB/s: 1 MiB), plus what was in
                // flight (a partial 64 KiB block each and what sat in socket buffers), 1 MiB in all.
                // (The run's average rate is no bound: a run killed just before its second checkpoint
                // spent part of its life starting up.) Without checkpoints a run longer than 2 s loses
                // more than that, and the total saved below stays near zero.
                let served = origin.bytesServed("/film.mp4") - servedBefore
                let lost = served - (saved - savedBefore)
                let allowance = 8 * (128 << 10) + Self.mib
                #expect(lost <= allowance, "kill \(kills): lost \(lost) of \(served) bytes in \(seconds) s")
                worstLoss = max(worstLoss, lost)
            }
            #expect(try await savedBytes(output) ?? 0 > 4 * Self.mib, "kills do not stop progress")
            origin.setBehavior("/film.mp4", OriginBehavior())
            let finish = try await vfetch(arguments)
            #expect(finish.status == 0, "stderr: \(finish.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
            #expect(!exists(output + ".vfetch") && !exists(output + ".part"))
            print("kill -9 × \(kills): worst loss \(worstLoss) bytes, origin served \(origin.bytesServed("/film.mp4")) for \(bytes.count)")
        }
    }

    @Test(.enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func aFullDiskStopsCleanlyAndResumesOnceThereIsRoom() async throws {
        try await withOrigin { origin, directory in
            try await withSmallDisk(in: directory, size: "6m", filler: 3 * Self.mib) { mount in
                let bytes = randomBytes(4 * Self.mib, seed: 42)
                origin.publish("/film.mp4", bytes)
                let output = mount + "/film.mp4"
                let full = try await vfetch(["get", origin.url("/film.mp4"), "-o", output, "-c", "4"])
                #expect(full.status == 8, "stderr: \(full.standardError)")
                #expect(full.standardError.contains("disk full"))
                #expect(!exists(output))
                let saved = try await savedBytes(output)
                #expect(saved != nil, "the manifest is consistent after ENOSPC")
                try FileManager.default.removeItem(atPath: mount + "/filler")
                let resumed = try await vfetch(["get", origin.url("/film.mp4"), "-o", output, "--json"])
                #expect(resumed.status == 0, "stderr: \(resumed.standardError)")
                #expect(try sha256(file: output) == sha256(bytes))
                let done = resumed.standardOutput.split(separator: "\n").last.map(String.init) ?? ""
                #expect(done.contains("\"resumed_bytes\":\(saved ?? -1)"), "\(done)")
            }
        }
    }

    /// A run that throws the saved bytes away removes their manifest first: when it then fails
    /// (here `--preallocate` on a full disk, after the side file was emptied), the next run must
    /// start over, not resume from a manifest that vouches for zeros.
    @Test(.enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func aFailedRestartLeavesNoManifestForTheOldBytes() async throws {
        try await withOrigin { origin, directory in
            try await withSmallDisk(in: directory, size: "6m", filler: 3 * Self.mib) { mount in
                let bytes = randomBytes(4 * Self.mib, seed: 43)
                // Slow enough for checkpoints to record bytes before the disk fills up.
                origin.publish("/film.mp4", bytes, behavior: throttled(1 << 20))
                let output = mount + "/film.mp4"
                let full = try await vfetch(
                    ["get", origin.url("/film.mp4"), "-o", output, "-c", "4", "--checkpoint-interval", "0.1"])
                #expect(full.status == 8, "stderr: \(full.standardError)")
                #expect(try await savedBytes(output) ?? 0 > 0, "the first run saved something to lose")
                let restart = try await vfetch(["get", origin.url("/film.mp4"), "-o", output, "--restart", "--preallocate"])
                #expect(restart.status == 8, "stderr: \(restart.standardError)")
                #expect(!exists(output + ".vfetch"), "no manifest may outlive the bytes it vouched for")
                try FileManager.default.removeItem(atPath: mount + "/filler")
                origin.setBehavior("/film.mp4", OriginBehavior())
                let again = try await vfetch(["get", origin.url("/film.mp4"), "-o", output])
                #expect(again.status == 0, "stderr: \(again.standardError)")
                #expect(try sha256(file: output) == sha256(bytes))
            }
        }
    }

    /// kill -9 inside a checkpoint, held there by strace: during the data's `fdatasync`, before the
    /// update that records it is written; during the update's own `fdatasync`, written but not yet
    /// durable; and, in a resumed run, between the new snapshot's fsync and its rename over the
    /// manifest the run before left. Each time the manifest stays whole and true, and the next run
    /// resumes from it to the exact file.
    static let strace = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }

    enum HeldStep: String, CaseIterable {
        case dataSync, updateSync, snapshotRename
    }

    @Test(.enabled(if: strace != nil, "needs strace"), arguments: HeldStep.allCases)
    func aKillInsideACheckpointLeavesTheManifestWhole(held: HeldStep) async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(16 * Self.mib, seed: 44)
            origin.publish("/film.mp4", bytes, behavior: throttled(512 << 10))
            let output = directory + "/film.mp4"
            let arguments = ["get", origin.url("/film.mp4"), "-o", output, "-c", "4", "-q"]
            if held == .snapshotRename {
                // A first run saves something; the second is held as its snapshot replaces that manifest.
                let first = try await vfetch(arguments, signal: SIGKILL, after: .seconds(2))
                #expect(first.status == 9, "stderr: \(first.standardError)")
            }
            // Checkpoints come every second. One that records something calls fdatasync twice, for the
            // data and then for the update appended to the manifest: the 3rd and 4th calls are the second
            // checkpoint's. (A snapshot is fsynced; rename is asked for by any of its names.)
            let (names, when) =
                switch held {
                case .dataSync: ("fdatasync", "3+")
                case .updateSync: ("fdatasync", "4+")
                case .snapshotRename: ("rename,renameat,renameat2", "1+")
                }
            let strace = Process()
            strace.executableURL = URL(fileURLWithPath: try #require(Self.strace))
            strace.arguments =
                ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(names)", "-e", "inject=\(names):delay_enter=60000000:when=\(when)"]
                + [vfetchBinary] + arguments
            strace.standardOutput = FileHandle.nullDevice
            strace.standardError = FileHandle.nullDevice
            try strace.run()
            defer { if strace.isRunning { kill(strace.processIdentifier, SIGKILL) } }
            var saved = 0
            for _ in 0..<200 where saved == 0 {
                try await Task.sleep(for: .milliseconds(100))
                saved = try await savedBytes(output) ?? 0
            }
            #expect(saved > 0, "a checkpoint recorded bytes")
            try await Task.sleep(for: .seconds(2))  // the second checkpoint, a second later, is held
            let kept = try await savedBytes(output) ?? 0
            #expect(kept >= saved)
            // Two lines a record: the snapshot, the first checkpoint's update, and the held one's once written.
            let lines = try Data(contentsOf: URL(fileURLWithPath: output + ".vfetch")).count { $0 == 0x0A }
            switch held {
            case .dataSync: #expect(lines == 4 && kept == saved, "the held checkpoint wrote no update")
            case .updateSync: #expect(lines == 6, "the held update was written before its sync")
            case .snapshotRename: #expect(kept == saved, "the first run's manifest")
            }
            try await Task.sleep(for: .seconds(1))
            #expect(try await savedBytes(output) == kept, "the checkpoint is held")
            // strace's child is vfetch; killing strace would only let it go on.
            let children = try String(
                contentsOfFile: "/proc/\(strace.processIdentifier)/task/\(strace.processIdentifier)/children", encoding: .utf8)
            let pid = try #require(children.split(separator: " ").first.flatMap { Int32($0) })
            #expect(kill(pid, SIGKILL) == 0)
            // strace itself may sit out its delay before it notices; it has nothing left to do.
            try await Task.sleep(for: .milliseconds(200))
            kill(strace.processIdentifier, SIGKILL)
            while strace.isRunning { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await savedBytes(output) == kept, "the manifest is whole")
            if held == .snapshotRename { #expect(exists(output + ".vfetch.tmp"), "the held snapshot never replaced it") }
            origin.setBehavior("/film.mp4", OriginBehavior())
            let resumed = try await vfetch(["get", origin.url("/film.mp4"), "-o", output])
            #expect(resumed.status == 0, "stderr: \(resumed.standardError)")
            #expect(resumed.standardError.contains("resuming: \(kept) of"), "stderr: \(resumed.standardError)")
            #expect(try sha256(file: output) == sha256(bytes))
        }
    }
}
