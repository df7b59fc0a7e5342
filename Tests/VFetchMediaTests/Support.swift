import Foundation
import Testing
import VFetchContainers
import VFetchMedia

#if canImport(Glibc)
    import Glibc
#endif

/// A media file made by the `ffmpeg` command line at test time: 10 s of `testsrc2` at 25 fps with
/// 1 s GOPs and a stereo sine, small and fast to make.
enum Fixture: String, CaseIterable, Sendable, CustomStringConvertible {
    case faststartMP4 = "faststart.mp4"
    case moovAtEndMP4 = "moov-at-end.mp4"
    case fragmentedMP4 = "fragmented.mp4"
    case matroska = "movie.mkv"
    case webm = "movie.webm"
    case audioM4A = "audio.m4a"

    var description: String { rawValue }

    private static let source = [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=10",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=10",
    ]
    private static let h264AAC = [
        "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
        "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-b:a", "96k",
    ]

    /// The `ffmpeg` arguments before the output path.
    var arguments: [String] {
        switch self {
        case .faststartMP4: Self.source + Self.h264AAC + ["-movflags", "+faststart", "-f", "mp4"]
        case .moovAtEndMP4: Self.source + Self.h264AAC + ["-f", "mp4"]
        case .fragmentedMP4: Self.source + Self.h264AAC + ["-movflags", "frag_keyframe+empty_moov", "-f", "mp4"]
        case .matroska: Self.source + Self.h264AAC + ["-f", "matroska"]
        case .webm:
            Self.source + [
                "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "25", "-b:v", "400k",
                "-c:a", "libopus", "-ac", "2", "-f", "webm",
            ]
        case .audioM4A:
            [
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=10", "-c:a", "aac", "-ac", "2",
                "-f", "ipod",
            ]
        }
    }

    /// The file, made once per set of arguments and kept in the temporary directory.
    var path: String {
        get async throws { try await FixtureStore.shared.path(of: self) }
    }
}

/// Whether `ffmpeg`, which makes the fixtures, is on `PATH`.
let ffmpegIsInstalled = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
    FileManager.default.isExecutableFile(atPath: $0 + "/ffmpeg")
}

/// Makes each fixture once. The directory is named after a hash of every fixture's arguments, so
/// test runs share files until the recipe changes; files appear by atomic rename.
actor FixtureStore {
    static let shared = FixtureStore()

    private var made: [Fixture: Task<String, any Error>] = [:]

    let directory: String = {
        let recipe = Fixture.allCases.map { $0.rawValue + $0.arguments.joined(separator: " ") }.joined(separator: "\n")
        let hash = recipe.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return NSTemporaryDirectory() + "vfetch-media-fixtures-" + String(hash, radix: 16)
    }()

    func path(of fixture: Fixture) async throws -> String {
        if let task = made[fixture] { return try await task.value }
        let directory = directory
        let task = Task {
            let path = directory + "/" + fixture.rawValue
            if FileManager.default.fileExists(atPath: path) { return path }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let partial = path + ".\(getpid()).tmp"
            let result = try await runTool(
                "ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + fixture.arguments + [partial])
            guard result.status == 0 else {
                throw ToolFailure(message: "ffmpeg failed making \(fixture): \(result.standardError)")
            }
            guard rename(partial, path) == 0 else { throw ToolFailure(message: "rename \(partial) failed") }
            return path
        }
        made[fixture] = task
        return try await task.value
    }
}

struct ToolFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

struct ToolResult: Sendable {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs a tool from `PATH` to completion on a thread of its own (its blocking reads and wait
/// must not hold a thread of Swift's cooperative pool).
func runTool(_ name: String, _ arguments: [String]) async throws -> ToolResult {
    let result: Result<ToolResult, any Error> = await withCheckedContinuation { continuation in
        Thread {
            continuation.resume(
                returning: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                    process.arguments = [name] + arguments
                    let output = Pipe()
                    let error = Pipe()
                    process.standardOutput = output
                    process.standardError = error
                    process.standardInput = FileHandle.nullDevice
                    try process.run()
                    // Drain stderr beside stdout, so a chatty tool never blocks on a full pipe.
                    let errorData = ErrorBox()
                    let drain = Thread { errorData.set(error.fileHandleForReading.readDataToEndOfFile()) }
                    drain.start()
                    let out = output.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    return ToolResult(
                        status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
                        standardError: String(decoding: errorData.wait(), as: UTF8.self))
                })
        }.start()
    }
    return try result.get()
}

/// Hands the stderr bytes from the draining thread to the waiting one.
final class ErrorBox: @unchecked Sendable {  // `condition` guards `data` and `done`.
    private let condition = NSCondition()
    private var data = Data()
    private var done = false

    func set(_ value: Data) {
        condition.lock()
        data = value
        done = true
        condition.signal()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return data
    }
}

/// One packet as `ffprobe` reports it: the independent truth the probe is checked against.
struct ProbedPacket: Sendable {
    var kind: String
    var pts: Double
    var size: Int64
    var position: Int64
    var isKeyframe: Bool

    var range: Range<Int64> { position..<position + size }
}

/// Every packet of a file, in file order, by `ffprobe -show_packets -of csv`.
func ffprobePackets(_ path: String) async throws -> [ProbedPacket] {
    let result = try await runTool(
        "ffprobe",
        [
            "-v", "error", "-show_packets", "-show_entries", "packet=codec_type,pts_time,size,pos,flags", "-of",
            "csv=p=0", path,
        ])
    guard result.status == 0 else { throw ToolFailure(message: "ffprobe failed: \(result.standardError)") }
    // Lines read "video,0.040000,818,18033,__"; side data may follow the flags, and blank lines appear.
    return result.standardOutput.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 5, fields[0] == "video" || fields[0] == "audio", let pts = Double(fields[1]),
            let size = Int64(fields[2]), let position = Int64(fields[3])
        else { return nil }
        return ProbedPacket(
            kind: fields[0], pts: pts, size: size, position: position, isKeyframe: fields[4].hasPrefix("K"))
    }
}

/// Creates a `MediaProbe` and asks it questions on a thread of its own, as the library's users must.
func withProbe<T: Sendable>(
    path: String, length: Int64? = nil, present: [Range<Int64>]? = nil,
    _ body: @escaping @Sendable (MediaProbe) -> T
) async throws(MediaError) -> T {
    try await onThread { () throws(MediaError) in
        let file: PartialFile
        if let length, let present {
            file = try PartialFile(path: path, length: length, present: present)
        } else {
            file = try PartialFile(path: path)
        }
        return body(try MediaProbe(source: file))
    }
}

/// Runs `body` on a new thread and waits for it without blocking the cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws(MediaError) -> T) async throws(MediaError) -> T {
    let result: Result<T, MediaError> = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: Result(catching: body)) }.start()
    }
    return try result.get()
}

func fileLength(_ path: String) throws -> Int64 {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.size] as? NSNumber)?.int64Value ?? 0
}

func bytes(of path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Writes `bytes` to a new file in the temporary directory and returns its path.
func temporaryFile(_ bytes: [UInt8], name: String) throws -> String {
    let path = NSTemporaryDirectory() + "vfetch-media-\(UUID().uuidString)-" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Top-level ISO BMFF box headers read by hand from a complete file: type and range. Independent
/// of `MP4Boxes`, for checking it.
func topLevelBoxes(_ bytes: [UInt8]) -> [(type: String, range: Range<Int64>)] {
    var boxes: [(String, Range<Int64>)] = []
    var offset = 0
    while offset + 8 <= bytes.count {
        var size =
            Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
            | Int(bytes[offset + 3])
        let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
        if size == 1 { size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
        if size == 0 { size = bytes.count - offset }
        guard size >= 8 else { break }
        boxes.append((type, Int64(offset)..<Int64(offset + size)))
        offset += size
    }
    return boxes
}

/// The real-world sample, `../shared/media/bbb-480p-30s.mp4` beside the package, when present.
let bigBuckBunny: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("shared/media/bbb-480p-30s.mp4").path

let hasBigBuckBunny = FileManager.default.fileExists(atPath: bigBuckBunny)
