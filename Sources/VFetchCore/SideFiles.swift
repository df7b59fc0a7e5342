import Foundation

/// The files vfetch keeps beside an output path, and the one place their names are spelled.
///
/// A download to `NAME` writes its bytes into `NAME.part` and records them in `NAME.vfetch` (see
/// docs/MANIFEST.md); a stream's segments wait in the folder `NAME.parts/` (one file per fetch, its
/// `manifest` and a `lock`); a file replaced whole is first written as `NAME.tmp` beside it, so the
/// rename over it stays on one file system.
package struct SideFiles: Sendable, Equatable {
    /// The path the finished file gets.
    package let output: String

    package init(output: String) {
        self.output = output
    }

    private static let partSuffix = ".part"
    private static let manifestSuffix = ".vfetch"
    private static let segmentsSuffix = ".parts"
    private static let temporarySuffix = ".tmp"
    private static let playlistSuffix = ".playlist"

    /// The unfinished download's bytes, at their final offsets (sparse).
    package var part: String { output + Self.partSuffix }

    /// Its manifest: which bytes of `part` are durable.
    package var manifest: String { output + Self.manifestSuffix }

    /// The player cache's kept copy of a playlist (`KeptPlaylist`), when `output` names a playlist's entry.
    package var keptPlaylist: String { output + Self.playlistSuffix }

    /// The output whose kept playlist `path` is, or nil when `path` is not named like one.
    package static func output(ofKeptPlaylist path: String) -> String? {
        path.hasSuffix(playlistSuffix) ? String(path.dropLast(playlistSuffix.count)) : nil
    }

    /// A stream's folder of fetched segments, kept until the remux.
    package var segments: String { output + Self.segmentsSuffix }

    /// Every file an unfinished download may leave: the part, its manifest, and the manifest's
    /// temporary file that a crash during a snapshot leaves behind.
    package var unfinished: [String] { [part, manifest, Self.temporary(for: manifest)] }

    /// Where a file is written before it is renamed over `path`: beside it, so the rename is atomic.
    package static func temporary(for path: String) -> String { path + temporarySuffix }

    /// The lock file of a folder vfetch owns (the player cache, a stream's segments folder).
    package static func lock(in folder: String) -> String { folder + "/lock" }

    /// The output whose part `path` is, or nil when `path` is not named like one.
    package static func output(ofPart path: String) -> String? {
        path.hasSuffix(partSuffix) ? String(path.dropLast(partSuffix.count)) : nil
    }

    /// The output whose part or manifest `path` names, or nil when it names neither (the suffix
    /// alone is no output).
    package static func output(ofSideFile path: String) -> String? {
        for suffix in [partSuffix, manifestSuffix] where path.hasSuffix(suffix) && path.count > suffix.count {
            return String(path.dropLast(suffix.count))
        }
        return nil
    }

    /// The longest name vfetch adds beside an output, in UTF-8 bytes: `NAME.vfetch.tmp` while the
    /// manifest is replaced.
    package static let longestSuffixBytes = (manifestSuffix + temporarySuffix).utf8.count
}

// A stream's segments folder (`NAME.parts/`).
extension SideFiles {
    /// The segments folder `path` names: `path` itself when it is one, else its output's.
    package static func segments(named path: String) -> String {
        path.hasSuffix(segmentsSuffix) ? path : SideFiles(output: path).segments
    }

    /// The manifest of the fetches kept in a segments folder.
    package static func segmentsManifest(in folder: String) -> String { folder + "/manifest" }

    /// The file that holds fetch number `fetch` in a segments folder (`000042`).
    package static func segment(_ fetch: Int, in folder: String) -> String {
        folder + "/" + String(format: "%06d", fetch)
    }
}
