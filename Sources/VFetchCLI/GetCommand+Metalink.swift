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

    /// Downloads the file `path` describes from its URLs (the first as the primary, the others as mirrors)
    /// into its name, checking its SHA-256; a file that cannot be read stops with one line and exit code 1.
    func runMetalink(_ path: String) async throws {
        let document: MetalinkDocument
        do {
            document = try MetalinkDocument.parse(try Self.read(path, atMost: MetalinkDocument.maxBytes + 1))
        } catch {
            writeStandardError("vfetch: \(path): \(error)\n")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        var get = self
        get.metalink = nil
        get.urls = [document.urls[0]]
        get.mirror = Array(document.urls.dropFirst()) + mirror
        if output == nil {
            get.output = directory.map { $0.hasSuffix("/") ? $0 + document.name : $0 + "/" + document.name } ?? document.name
        }
        get.directory = nil
        get.expectedLength = document.size
        if let sha256 = document.sha256 {
            if let checksum, sha256Digest(fromChecksum: checksum) != sha256 {
                writeStandardError("vfetch: --checksum differs from the Metalink file's sha-256\n")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
            get.checksum = "sha256=" + sha256
        }
        if let directory { try makeDirectories(directory) }
        try await get.run()
    }

    /// The first `limit` bytes of a local file (or all, if fewer): a hostile path (a device, a huge file) costs no more.
    private static func read(_ path: String, atMost limit: Int) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw StreamParseError("cannot read the file") }
        defer { try? handle.close() }
        return [UInt8](try handle.read(upToCount: limit) ?? Data())
    }
}
