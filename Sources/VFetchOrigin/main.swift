// vfetch-origin: serves files over HTTP with the test origin, for demos and manual testing.
//
//   vfetch-origin [--host 127.0.0.1] [--port 8080] [--rate BYTES_PER_SEC] [--burst BYTES]
//                 [--max-concurrent N] [--slow-every N --slow-rate BYTES_PER_SEC]
//                 [--max-per-client N] [--link-rate BYTES_PER_SEC] [--latency MS]
//                 [--rate-after BYTES:BYTES_PER_SEC] FILE|DIR...
//
// --rate, --burst, --max-concurrent and --slow-* apply to each file; --max-per-client (503 beyond),
// --link-rate (all connections together), --latency (before every response) and --rate-after (every
// connection's rate once the origin has sent BYTES) to the origin as a whole.
//
// Each FILE is served at /<basename>; a directory's files at /<basename>/<path inside it> (a
// segmented stream as ffmpeg cut it), each with its extension's Content-Type. Prints `listening on http://HOST:PORT` once ready and
// serves until SIGINT or SIGTERM; then says on stderr, for each path asked for, the body bytes it sent and
// the requests (`served /clip.mp4 4194304 bytes in 5 requests`), so a script can count what a cache asked.

import Dispatch
import Foundation
import TestOrigin

/// The parsed command line.
struct Options {
    var host = "127.0.0.1"
    var port = 8080
    var behavior = OriginBehavior()
    var configuration = OriginConfiguration()
    var files: [String] = []
}

/// A command-line mistake, reported as one line on stderr with exit status 2.
struct UsageError: Error {
    var message: String
}

let usage = """
    usage: vfetch-origin [--host H] [--port P] [--rate B/S] [--burst B] [--max-concurrent N] \
    [--slow-every N --slow-rate B/S] [--max-per-client N] [--link-rate B/S] [--latency MS] \
    [--rate-after BYTES:B/S] FILE|DIR...
    """

func parseOptions(_ arguments: [String]) throws(UsageError) -> Options {
    var options = Options()
    var slowEvery: Int?
    var slowRate: Int?
    var index = 0

    // Accepts both `--name value` and `--name=value`.
    func value(for name: String, inline: String?) throws(UsageError) -> String {
        if let inline { return inline }
        index += 1
        guard index < arguments.count else { throw UsageError(message: "\(name) needs a value") }
        return arguments[index]
    }
    func number(_ text: String, for name: String, range: ClosedRange<Int> = 1...Int.max) throws(UsageError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            let wanted =
                range.upperBound != .max
                ? "a whole number in \(range)"
                : range.lowerBound == 0 ? "a whole number, 0 or more" : "a positive whole number"
            throw UsageError(message: "\(name) needs \(wanted), got '\(text)'")
        }
        return number
    }

    while index < arguments.count {
        let argument = arguments[index]
        let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
        let name = argument.hasPrefix("--") ? parts[0] : argument
        let inline = argument.hasPrefix("--") && parts.count == 2 ? parts[1] : nil
        switch name {
        case "--host":
            options.host = try value(for: name, inline: inline)
        case "--port":
            options.port = try number(value(for: name, inline: inline), for: name, range: 0...65535)
        case "--rate":
            options.behavior.bytesPerSecond = try number(value(for: name, inline: inline), for: name)
        case "--burst":
            options.behavior.burstBytes = try number(value(for: name, inline: inline), for: name, range: 0...Int.max)
        case "--max-concurrent":
            options.behavior.maxConcurrentResponses = try number(value(for: name, inline: inline), for: name, range: 0...Int.max)
        case "--slow-every":
            slowEvery = try number(value(for: name, inline: inline), for: name)
        case "--slow-rate":
            slowRate = try number(value(for: name, inline: inline), for: name)
        case "--max-per-client":
            options.configuration.maxResponsesPerClient = try number(value(for: name, inline: inline), for: name, range: 0...Int.max)
        case "--link-rate":
            options.configuration.linkBytesPerSecond = try number(value(for: name, inline: inline), for: name)
        case "--latency":
            options.configuration.latency = .milliseconds(try number(value(for: name, inline: inline), for: name, range: 0...3_600_000))
        case "--rate-after":
            let text = try value(for: name, inline: inline)
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let bytes = Int(parts[0]), bytes >= 0, let rate = Int(parts[1]), rate > 0 else {
                throw UsageError(message: "\(name) needs BYTES:B/S (whole numbers, the rate positive), got '\(text)'")
            }
            options.configuration.rateChange = (afterBytes: bytes, bytesPerSecond: rate)
        case "-h", "--help":
            print(usage)
            exit(0)
        case "--":
            options.files += arguments[(index + 1)...]
            index = arguments.count
            continue
        default:
            if argument.hasPrefix("-") && argument != "-" {
                throw UsageError(message: "unknown option '\(argument)'")
            }
            options.files.append(argument)
        }
        index += 1
    }

    switch (slowEvery, slowRate) {
    case (let every?, let rate?):
        options.behavior.slowConnectionEvery = every
        options.behavior.slowBytesPerSecond = rate
    case (nil, nil):
        break
    default:
        throw UsageError(message: "--slow-every and --slow-rate go together")
    }
    guard !options.files.isEmpty else { throw UsageError(message: "no FILE given; \(usage)") }
    return options
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("vfetch-origin: \(message)\n".utf8))
    exit(2)
}

/// Returns once the process receives SIGINT or SIGTERM.
func waitForTerminationSignal() async {
    let (signals, continuation) = AsyncStream<Void>.makeStream()
    let sources = [SIGINT, SIGTERM].map { number in
        // Deliver the signal to a dispatch source instead of the default action (exit).
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.resume()
        return source
    }
    for await _ in signals { break }
    sources.forEach { $0.cancel() }
}

let options: Options
do {
    options = try parseOptions(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(error.message)
}

var published: [(path: String, bytes: [UInt8])] = []
var directories: [(path: String, url: URL)] = []
for file in options.files {
    let path = "/" + URL(fileURLWithPath: file).lastPathComponent
    guard !published.contains(where: { $0.path == path }), !directories.contains(where: { $0.path == path }) else {
        fail("two files would be served at \(path)")
    }
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), isDirectory.boolValue {
        directories.append((path, URL(fileURLWithPath: file)))
        continue
    }
    guard let data = FileManager.default.contents(atPath: file) else { fail("cannot read '\(file)'") }
    published.append((path, [UInt8](data)))
}

let origin: TestOrigin
do {
    origin = try await TestOrigin.start(host: options.host, port: options.port, configuration: options.configuration)
} catch {
    fail("cannot listen on \(options.host):\(options.port): \(error)")
}
for (path, bytes) in published {
    origin.publish(path, bytes, behavior: options.behavior)
}
for (path, url) in directories {
    do {
        try origin.publishDirectory(url, at: path, behavior: options.behavior)
    } catch {
        fail("cannot read '\(url.path)': \(error)")
    }
}
// Unbuffered, so a script reading our stdout through a pipe sees the line at once.
FileHandle.standardOutput.write(Data("listening on \(origin.url(""))\n".utf8))

await waitForTerminationSignal()
try? await origin.shutdown()
let asked = Dictionary(grouping: origin.requests, by: \.path)
for path in asked.keys.sorted() {
    FileHandle.standardError.write(Data("served \(path) \(origin.bytesServed(path)) bytes in \(asked[path]!.count) requests\n".utf8))
}
