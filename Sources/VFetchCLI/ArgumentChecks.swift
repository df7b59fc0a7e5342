import ArgumentParser
import VFetchCore
import VFetchEngine
import VFetchStreams

extension TrackSelection {
    /// Refuses, as bad usage, a `--format` selector that does not parse.
    static func validate(_ selector: String?) throws {
        guard let selector else { return }
        do { _ = try TrackSelection(selector) } catch { throw ValidationError(error.description) }
    }
}

/// Stops with one line and exit code 3 at the first URL that is not http or https.
func requireFetchable(_ urls: [String]) throws {
    for url in urls where !isFetchableURL(url) {
        writeStandardError("vfetch: bad URL: \(redactedURL(url))\n")
        throw ExitCode(ExitStatus.badURL.rawValue)
    }
}

/// Makes `path` and the directories above it (as aria2c's and wget's `-d`), or stops with one line
/// and exit code 7.
func makeDirectories(_ path: String) throws {
    do throws(Errno) { try FileSystem.makeDirectories(path) } catch {
        writeStandardError("vfetch: cannot create directory \(path): \(error)\n")
        throw ExitCode(ExitStatus.outputNotWritable.rawValue)
    }
}
