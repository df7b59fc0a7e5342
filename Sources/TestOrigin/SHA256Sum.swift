import Foundation

/// SHA-256 of a file as lowercase hex, by coreutils' `sha256sum`: independent of the code under test,
/// and native speed in a debug build. (vfetch's own SHA-256, built for debugging, hashed 16 MiB for
/// seconds on one of the few threads Swift's concurrency has; tests waiting on the others starved.)
/// The output goes to a file, not a pipe: a pipe read to its end waits for every process started
/// meanwhile that holds a copy of its write end.
public func sha256(file path: String) throws -> String {
    let output = NSTemporaryDirectory() + "vfetch-sha256-" + UUID().uuidString
    FileManager.default.createFile(atPath: output, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: output) }
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
    defer { try? handle.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    process.standardOutput = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return String(try String(contentsOfFile: output, encoding: .utf8).prefix(64))
}

/// SHA-256 of `bytes` the same way, through a temporary file; "unreadable" when that cannot be written.
public func sha256(_ bytes: [UInt8]) -> String {
    let path = NSTemporaryDirectory() + "vfetch-sha256-input-" + UUID().uuidString
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return "unreadable" }
    defer { try? FileManager.default.removeItem(atPath: path) }
    return (try? sha256(file: path)) ?? "unreadable"
}
