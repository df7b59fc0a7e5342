import ArgumentParser
import Foundation
import VFetchCore
import VFetchEngine
import VFetchStreams

// `--mirror` and Metalink files: one file from several URLs at once (`MirrorSet` decides which bytes each gives).
extension GetCommand {
    /// The Metalink file to read: `--metalink FILE`, or the one argument when it names a local `.meta4` file.
    var metalinkFile: String? {
        if let metalink { return metalink }
        guard urls.count == 1, inputFile == nil, !urls[0].contains("://"), urls[0].lowercased().hasSuffix(".meta4") else { return nil }
        return urls[0]
    }

    func validateMirrors() throws {
        guard !mirror.isEmpty || metalink != nil else { return }
        if urls.count + (metalink == nil ? 0 : 1) > 1 || inputFile != nil {
            throw ValidationError("--mirror and --metalink are for one file; give one URL")
        }
        for url in mirror where !isFetchableURL(url) { throw ValidationError("--mirror takes an http:// or https:// URL") }
    }
}
