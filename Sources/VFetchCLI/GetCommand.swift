import ArgumentParser
import Foundation
import VFetch
import VFetchCore
import VFetchEngine
import VFetchStreams

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download a file over many connections at once.",
        discussion: "Exit codes: 0 done, 1 transfer failed, 3 bad URL, 4 DNS/connect failure, 5 HTTP error status, "
            + "6 remote file changed, 7 output not writable, not a regular file or exists, 8 disk full, 9 checksum mismatch, "
            + "10 bad response, 11 another vfetch is writing the same file, 13 a stream's segment unavailable, "
            + "14 a stream encrypted with DRM, 15 no track matches --format or the container cannot hold it, 64 bad usage, "
            + "130 interrupted (run again to resume; "
            + "a live recording stopped by Ctrl-C is saved, 0).\n\n"
            + "An HLS playlist (.m3u8) or DASH manifest (.mpd) is saved as one file: the best variant with its audio "
            + "(or --format), its segments fetched in parallel and remuxed without re-encoding; -o's extension "
            + "(.mp4, .mkv, .ts) picks the container."
    )

    @Argument(help: "The http:// or https:// URLs to download.")
    var urls: [String] = []

    @Option(
        name: [.customShort("i"), .customLong("input-file")],
        help: "Download the URLs in this file too, one per line (# comments and blank lines skipped; - reads stdin), as aria2c and wget.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("max-downloads")], help: "With several URLs: how many download at once (1-64).")
    var maxDownloads = 5

    @Option(
        help: "Another URL of the same file (repeatable): segments come from all at once, each mirror once a sample of its bytes matches.")
    var mirror: [String] = []

    @Option(help: "Download the file a Metalink v4 file (.meta4) describes, from its URLs at once, and check its SHA-256.")
    var metalink: String?

    /// The one URL of a single download.
    var url: String { urls[0] }

    @Option(name: .shortAndLong, help: "Write to this path; - (or /dev/stdout): to standard output, in order, as curl does.")
    var output: String?

    @Option(
        name: [.customShort("d"), .long],
        help: "Write into this directory (made if missing), named after the URL or the server's file name.")
    var directory: String?

    @Option(name: [.customShort("c"), .long], help: "Parallel connections at most (1-256).")
    var connections = DownloadOptions().connections

    @OptionGroup var request: RequestOptions

    @Option(name: .customLong("max-speed"), help: "Overall speed limit in bytes per second (K, M, G suffixes).")
    var maxSpeed: ByteCount?

    @Flag(name: .customLong("http1.1"), help: "Use HTTP/1.1, one connection per segment.")
    var http11 = false

    @Flag(name: .customLong("http2"), help: "Use HTTP/2 where an https server offers it, even where HTTP/1.1 would measure faster.")
    var http2 = false

    @Option(help: "Verify the finished file: sha256=HEX.")
    var checksum: String?

    @Option(help: "Retries per segment after failures without progress.")
    var retries = DownloadOptions().retries

    @Option(
        name: .customLong("max-retry-wait"),
        help: "Wait at most this many seconds for a server's Retry-After (0-86400); a longer one fails the download (exit code 5).")
    var maxRetryWait = DownloadOptions().maxRetryWait

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for a connection.")
    var connectTimeout = DownloadOptions().connectTimeout

    @Option(name: .customLong("stall-timeout"), help: "Retry a connection that receives nothing for this many seconds.")
    var stallTimeout = DownloadOptions().stallTimeout

    @Option(name: .customLong("min-split"), help: "Do not split segments below this size (K, M suffixes).")
    var minSplit: ByteCount?

    @Flag(help: "Allocate the whole file on disk before downloading.")
    var preallocate = false

    @Flag(help: "Overwrite an existing file at the output path.")
    var force = false

    @Flag(name: .customLong("create-dirs"), help: "Make the directories -o names that are not there (as curl's; -d always makes its own).")
    var createDirectories = false

    @Flag(name: .customLong("no-clobber"), help: "Leave a file already at the output path and download nothing (wget -nc).")
    var noClobber = false

    @Flag(
        name: .customLong("auto-rename"), help: "Save beside a file already at the output path as NAME.1.EXT, NAME.2.EXT, … (aria2c, wget)."
    )
    var autoRename = false

    @Option(
        name: .customLong("checkpoint-interval"),
        help: "Save resume state at least every this many seconds (and every 8 MiB received); 0: only when stopping.")
    var checkpointInterval = DownloadOptions().checkpointInterval

    @Flag(
        name: [.customLong("playback-order"), .customLong("stream")],
        help: "Playback first: head and tail at once, then in order, so a player can start early (--stream: its old name).")
    var playbackOrder = false

    @Flag(
        name: .customLong("continue"),
        help: "Continue a partial file another program left at the output (wget -c, curl -C -), if its last bytes are the remote file's.")
    var continuePartialFile = false

    @Flag(help: "Ignore what an earlier, interrupted run saved and start from zero.")
    var restart = false

    @Flag(
        name: .customLong("trust-length"), help: "Resume even if the server gives no ETag or Last-Modified, when the length is unchanged.")
    var trustLength = false

    @Option(
        help:
            "HLS/DASH: which variant: best (default), worst, 720p, height<=720, bandwidth<=2M, codec=avc1, lang=en (repeat or lang=all for several audio tracks), sub=en or sub=all (subtitles), id=ID; terms joined by commas all hold."
    )
    var format: String?

    @Flag(
        name: [.customShort("F"), .customLong("list-formats")],
        help: "List what the URL offers, as `vfetch info URL` does (a stream's tracks, for --format), and download nothing.")
    var listFormats = false

    @Flag(
        name: .customLong("skip-unavailable"),
        help: "HLS/DASH: leave out segments that fail after retries, and say which, instead of failing.")
    var skipUnavailable = false

    @Flag(
        name: .customLong("keep-segments"),
        help: "HLS/DASH: keep the fetched segments in \(SideFiles(output: "NAME").segments)/ after the remux.")
    var keepSegments = false

    @Option(help: "Live HLS/DASH: stop recording after this many seconds of media (otherwise at Ctrl-C or the stream's end).")
    var duration: Double?

    @Flag(name: .shortAndLong, help: "Print nothing but errors.")
    var quiet = false

    @Flag(help: "Print one JSON object per line on stdout: progress events and a final summary.")
    var json = false

    func validate() throws {
        try validateMirrors()
        if urls.isEmpty, inputFile == nil, metalink == nil { throw ValidationError("give a URL to download, or -i FILE") }
        if urls.count > 1 || inputFile != nil {
            if output != nil { throw ValidationError("-o takes one URL; use -d for several") }
            if listFormats { throw ValidationError("-F takes one URL") }
        }
        if !(1...64).contains(maxDownloads) { throw ValidationError("--max-downloads must be between 1 and 64") }
        if output != nil, directory != nil { throw ValidationError("use either -o or -d, not both") }
        if listFormats, metalinkFile != nil { throw ValidationError("-F lists the formats of a URL, not of a Metalink file") }
        if let output, Self.namesStandardOutput(output), json {
            throw ValidationError("--json prints on standard output, where -o \(output) writes the file")
        }
        if !(1...256).contains(connections) { throw ValidationError("--connections must be between 1 and 256") }
        if http11, http2 { throw ValidationError("use either --http1.1 or --http2") }
        if [force, noClobber, autoRename].filter({ $0 }).count > 1 {
            throw ValidationError("use one of --force, --no-clobber and --auto-rename")
        }
        if continuePartialFile, force || restart { throw ValidationError("--continue keeps a partial file; --force and --restart do not") }
        if let checksum, sha256Digest(fromChecksum: checksum) == nil {
            throw ValidationError("--checksum must be sha256= followed by 64 hex digits")
        }
        try validateMaxRetryWait(maxRetryWait)
        if let duration, !(duration > 0 && duration <= 7 * 86400) {
            throw ValidationError("--duration must be between 0 and 604800 seconds")
        }
        try TrackSelection.validate(format)
    }

    var downloadOptions: DownloadOptions {
        var options = DownloadOptions()
        options.connections = connections
        request.apply(to: &options)
        options.maxBytesPerSecond = maxSpeed?.bytes
        options.httpVersion = http11 ? .http1_1 : http2 ? .http2 : .automatic
        options.sha256 = checksum.flatMap(sha256Digest(fromChecksum:))
        options.retries = max(0, retries)
        options.maxRetryWait = maxRetryWait
        options.connectTimeout = connectTimeout
        options.stallTimeout = stallTimeout
        if let minSplit { options.minSplitSize = minSplit.bytes }
        options.preallocate = preallocate
        options.overwrite = force
        options.existingOutput = noClobber ? .keep : autoRename ? .rename : .refuse
        options.restart = restart
        options.continuePartialFile = continuePartialFile
        options.playbackOrder = playbackOrder
        if checkpointInterval <= 0 {
            options.checkpointInterval = .infinity
            options.checkpointBytes = .max
        } else {
            options.checkpointInterval = checkpointInterval
        }
        options.trustLength = trustLength
        options.recordDuration = duration
        options.format = format
        options.skipUnavailableSegments = skipUnavailable
        options.keepSegments = keepSegments
        options.mirrors = mirror
        return options
    }

    func makeReporter() -> any ProgressReporter {
        if json { return JSONReporter() }
        if quiet { return SilentReporter() }
        return isatty(2) == 1 ? TerminalReporter() : LineReporter()
    }

    func run() async throws {
        if urls.count > 1 || inputFile != nil { return try await runSeveral() }
        if listFormats {
            var info = InfoCommand()
            (info.target, info.json, info.request) = (url, json, request)
            return try await info.run()
        }
        // As aria2c and wget: `-d` makes its directory, and those above it; `-o` with --create-dirs, as curl.
        let parent = output.flatMap { createDirectories && $0.contains("/") ? String($0[..<$0.lastIndex(of: "/")!]) : nil }
        if let made = directory ?? parent, !made.isEmpty { try makeDirectories(made) }
        let toStandardOutput = output.map(Self.namesStandardOutput) ?? false
        let destination: Destination =
            toStandardOutput ? .descriptor(STDOUT_FILENO) : output.map { .file($0) } ?? .directory(directory ?? ".")
        let reporter = makeReporter()
        let download: Download
        do throws(DownloadError) {
            if let metalinkFile {
                download = try Download(metalinkFile: metalinkFile, to: destination, options: downloadOptions)
            } else {
                download = Download(url: url, to: destination, options: downloadOptions)
            }
        } catch {
            reporter.failed(error)
            throw ExitCode(ExitStatus(error).rawValue)
        }
        if toStandardOutput { return try await runToStandardOutput(download, reporter: reporter) }
        Interrupts.onInterrupt { download.cancel() }
        defer { Interrupts.onInterrupt(nil) }
        let printing = Task {
            var output: String?
            for await event in download.events {
                reporter.report(event)
                if case .started(let info) = event { output = info.outputPath }
            }
            return output
        }
        do {
            _ = try await download.run()
            _ = await printing.value
        } catch .alreadyComplete(let path) {
            _ = await printing.value
            writeStandardError("vfetch: \(DownloadError.alreadyComplete(path))\n")
        } catch {
            let output = await printing.value
            reporter.failed(error, detail: error == .interrupted ? output.flatMap(Self.resumeHint) : nil)
            throw ExitCode(ExitStatus(error).rawValue)
        }
    }

    /// What an interrupted download kept, from its manifest, and how to go on:
    /// `4.1 MiB of 8 MiB saved (51.3%) in NAME.part; run the same command again to resume`.
    static func resumeHint(output: String) -> String? {
        guard let saved = try? PartialDownload(outputPath: output), saved.bytesDone > 0 else { return nil }
        let percent = String(format: "%.1f%%", Double(saved.bytesDone) * 100 / Double(max(1, saved.length)))
        return "\(Format.size(saved.bytesDone)) of \(Format.size(saved.length)) saved (\(percent)) in "
            + "\(SideFiles(output: output).part); run the same command again to resume"
    }
}
