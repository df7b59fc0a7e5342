import Foundation
import Testing

@testable import VFetchStreams

#if canImport(Glibc)
    import Glibc
#endif

/// Whether `ffmpeg`, which makes the DASH fixtures, is on `PATH`.
let ffmpegIsInstalled = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
    FileManager.default.isExecutableFile(atPath: $0 + "/ffmpeg")
}

/// Output of ffmpeg's own DASH and MP4 muxers, made at test time: 6 s of 320x240 `testsrc` at 25 fps
/// with 1 s GOPs, and a mono 44.1 kHz sine.
enum DASHFixture: String, CaseIterable, Sendable {
    /// `-f dash -use_template 1 -use_timeline 1`: SegmentTemplate with a SegmentTimeline.
    case timeline
    /// `-f dash -use_template 1 -use_timeline 0`: SegmentTemplate@duration, `$Number%05d$`.
    case numbered
    /// `-f dash -single_file 1`: one file per stream, a SegmentList of byte ranges.
    case singleFile = "single-file"
    /// One fragmented MP4 with a global `sidx` (`-movflags +dash+frag_keyframe+global_sidx`).
    case globalSidx = "global-sidx"

    private static let source = [
        "-f", "lavfi", "-i", "testsrc=d=6:s=320x240:r=25", "-f", "lavfi", "-i", "sine=d=6",
        "-map", "0", "-map", "1", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac",
    ]

    /// The ffmpeg arguments and the file they write, in the fixture's own directory.
    var recipe: (arguments: [String], output: String) {
        switch self {
        case .timeline:
            (Self.source + ["-f", "dash", "-seg_duration", "2", "-use_template", "1", "-use_timeline", "1"], "out.mpd")
        case .numbered:
            (Self.source + ["-f", "dash", "-seg_duration", "2", "-use_template", "1", "-use_timeline", "0"], "out.mpd")
        case .singleFile:
            (Self.source + ["-f", "dash", "-seg_duration", "2", "-single_file", "1"], "out.mpd")
        case .globalSidx:
            (
                [
                    "-f", "lavfi", "-i", "testsrc=d=6:s=320x240:r=25", "-c:v", "libx264", "-preset", "ultrafast", "-g",
                    "25", "-f", "mp4", "-movflags", "+dash+frag_keyframe+global_sidx",
                ], "movie.mp4"
            )
        }
    }

    /// The directory holding the fixture's files, made once per test process.
    var directory: URL {
        get async throws { try await DASHFixtureStore.shared.directory(of: self) }
    }

    /// The path of the file ffmpeg wrote (the MPD, or the MP4).
    var output: URL {
        get async throws { try await directory.appendingPathComponent(recipe.output) }
    }
}

/// Makes each fixture once per process, in a directory of its own under the temporary directory.
actor DASHFixtureStore {
    static let shared = DASHFixtureStore()

    private var made: [DASHFixture: Task<URL, any Error>] = [:]
    private let root = FileManager.default.temporaryDirectory.appendingPathComponent("vfetch-dash-\(getpid())")

    func directory(of fixture: DASHFixture) async throws -> URL {
        if let task = made[fixture] { return try await task.value }
        let directory = root.appendingPathComponent(fixture.rawValue)
        let task = Task {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let recipe = fixture.recipe
            let status = try await runFFmpeg(
                ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + recipe.arguments
                    + [directory.appendingPathComponent(recipe.output).path])
            guard status == 0 else { throw FixtureFailure(fixture: fixture, status: status) }
            return directory
        }
        made[fixture] = task
        return try await task.value
    }
}

struct FixtureFailure: Error, CustomStringConvertible {
    var fixture: DASHFixture
    var status: Int32
    var description: String { "ffmpeg exited \(status) making the \(fixture.rawValue) fixture" }
}

/// Runs ffmpeg to completion on a thread of its own (its wait must not hold a thread of Swift's
/// cooperative pool); its output goes nowhere, `-loglevel error` keeps it small.
func runFFmpeg(_ arguments: [String]) async throws -> Int32 {
    let result: Result<Int32, any Error> = await withCheckedContinuation { continuation in
        Thread {
            continuation.resume(
                returning: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                    process.arguments = ["ffmpeg"] + arguments
                    process.standardInput = FileHandle.nullDevice
                    process.standardOutput = FileHandle.nullDevice
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    process.waitUntilExit()
                    return process.terminationStatus
                })
        }.start()
    }
    return try result.get()
}

/// Runs CPU-heavy `work` on a thread of its own and returns what it returned. Swift's shared pool
/// has two threads here: a test that held one for seconds would starve the timing-sensitive tests
/// running beside it (downloads interrupted at a moment, servers that must answer in time).
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// `text` read as an MPD from a fixed URL on a thread of its own (see ``onOwnThread(_:)``).
/// The CPU time the calling thread has used, in seconds (`CLOCK_THREAD_CPUTIME_ID`).
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func parseMPDOnOwnThread(_ text: String) async -> Result<StreamCatalog, StreamParseError> {
    await onOwnThread { Result { () throws(StreamParseError) in try parseMPD(text) } }
}

/// Runs `work` on a thread with a 512 KiB stack, as small as the event loop threads `vfetch serve`
/// parses documents on: a recursion as deep as the input overflows it.
func onSmallStackThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 512 << 10
        thread.start()
    }
}
