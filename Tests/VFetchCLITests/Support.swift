import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
    import Glibc
#endif

struct Finished {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// The built `vfetch`, next to this test bundle.
let vfetchBinary: String = {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("vfetch")
    if FileManager.default.isExecutableFile(atPath: beside.path) { return beside.path }
    // Tests/VFetchCLITests/Support.swift → the package root.
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/vfetch").path
}()

func vfetch(_ arguments: [String], interruptAfter: Duration? = nil) async throws -> Finished {
    try await run(vfetchBinary, arguments, signal: SIGINT, after: interruptAfter)
}

func vfetch(_ arguments: [String], signal: Int32, after delay: Duration) async throws -> Finished {
    try await run(vfetchBinary, arguments, signal: signal, after: delay)
}

/// Runs `vfetch` and sends SIGINT once `condition` holds (polled every 0.2 s while it runs):
/// interrupting on a state, not a clock, whatever the machine's load. Killed after `timeout`.
func vfetch(
    _ arguments: [String], timeout: Duration = .seconds(60), interruptWhen condition: @escaping @Sendable () -> Bool
) async throws -> Finished {
    try await run(vfetchBinary, arguments, signal: SIGINT, when: condition, timeout: timeout)
}

/// Runs a program to completion (killed after `timeout`), optionally sending `signal` after a delay or
/// once `condition` holds, with `environment` added to this process's. A program killed by a signal
/// reports that signal's number as its status.
///
/// The signal is sent from a thread of its own: tests busy on Swift's few cooperative threads must
/// not delay it until the program has finished.
func run(
    _ path: String, _ arguments: [String], signal: Int32 = SIGINT, after delay: Duration? = nil,
    when condition: (@Sendable () -> Bool)? = nil, environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
) async throws -> Finished {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let pid = process.processIdentifier
    // Drain both pipes while the process runs, so a chatty child never blocks on a full pipe.
    async let stdout = readToEnd(output)
    async let stderr = readToEnd(error)
    if delay != nil || condition != nil {
        let (seconds, attoseconds) = delay?.components ?? (0, 0)
        Thread {
            if delay != nil { usleep(UInt32(seconds) * 1_000_000 + UInt32(attoseconds / 1_000_000_000_000)) }
            while let condition, process.isRunning, !condition() { usleep(200_000) }
            kill(pid, signal)
        }.start()
    }
    let watchdog = Task.detached {
        try await Task.sleep(for: timeout)
        kill(pid, SIGKILL)
    }
    let (out, err) = await (stdout, stderr)
    process.waitUntilExit()
    watchdog.cancel()
    return Finished(
        status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
        standardError: String(decoding: err, as: UTF8.self))
}

/// Runs a program to completion on the calling thread; for conditions polled off the cooperative pool.
func runBlocking(_ path: String, _ arguments: [String]) -> Finished {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return Finished(status: -1, standardOutput: "", standardError: "") }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Finished(status: process.terminationStatus, standardOutput: String(decoding: data, as: UTF8.self), standardError: "")
}

/// Reads a pipe to its end on a thread of its own: a blocking read must not hold one of the few
/// threads of Swift's cooperative pool.
func readToEnd(_ pipe: Pipe) async -> Data {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: pipe.fileHandleForReading.readDataToEndOfFile()) }.start()
    }
}

/// A file ffmpeg makes once per test run, waited for off Swift's cooperative threads. Made in a
/// `static let`, an encode (many seconds on a busy machine) held one of those few threads, and every
/// test that touched the same file meanwhile another: on 2 cores the whole suite stood still behind it.
actor MadeOnce {
    let path: String
    private let arguments: [String]
    private var making: Task<Bool, Never>?

    /// ffmpeg makes the file `name` (in the temporary directory) with `arguments`, then the path.
    init(_ name: String, ffmpeg arguments: [String]) {
        path = NSTemporaryDirectory() + "vfetch-\(getpid())-\(name)"
        self.arguments = arguments
    }

    /// The file's path, once made; nil when ffmpeg could not make it.
    func file() async -> String? {
        let making =
            self.making
            ?? Task { [path, arguments] in
                let ffmpeg = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments + [path]
                return (try? await run("/usr/bin/env", ffmpeg, timeout: .seconds(600)))?.status == 0
            }
        self.making = making
        return await making.value ? path : nil
    }
}

func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

func withOrigin<T>(_ body: (TestOrigin, String) async throws -> T) async throws -> T {
    let origin = try await TestOrigin.start()
    let directory = NSTemporaryDirectory() + "vfetch-cli-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
        let result = try await body(origin, directory)
        try await origin.shutdown()
        return result
    } catch {
        try? await origin.shutdown()
        throw error
    }
}

/// An origin behavior that serves each connection at `rate` bytes per second.
func throttled(_ rate: Int) -> OriginBehavior {
    var behavior = OriginBehavior()
    behavior.bytesPerSecond = rate
    return behavior
}

/// Runs `body` with a tmpfs of `size` (mount's syntax, "6m") mounted in `directory`, holding a file of
/// `filler` bytes, and unmounts it afterwards. Needs root.
func withSmallDisk(in directory: String, size: String, filler: Int = 0, _ body: (String) async throws -> Void) async throws {
    let mount = directory + "/small"
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    #expect(try await run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mount]).status == 0)
    defer { _ = try? Process.run(URL(fileURLWithPath: "/bin/umount"), arguments: [mount]).waitUntilExit() }
    if filler > 0 { _ = FileManager.default.createFile(atPath: mount + "/filler", contents: Data(count: filler)) }
    try await body(mount)
}

/// Top-level MP4 boxes read by hand (8-byte headers; 64-bit sizes when the size is 1).
func topLevelBoxes(_ bytes: [UInt8]) -> [(type: String, range: Range<Int>)] {
    var result: [(String, Range<Int>)] = []
    var offset = 0
    while offset + 8 <= bytes.count {
        var size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
        if size == 1 { size = bytes[(offset + 8)..<(offset + 16)].reduce(0) { $0 << 8 | Int($1) } }
        if size == 0 { size = bytes.count - offset }
        guard size >= 8 else { break }
        result.append((type, offset..<(offset + size)))
        offset += size
    }
    return result
}
