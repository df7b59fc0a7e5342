import Foundation
import VFetchEngine
import VFetchStreams

// Metalink v4 (RFC 5854): one file from several URLs at once, its size and SHA-256 checked. A document
// fetched by URL (`Download.runMetalink`) and a local one (`init(metalinkFile:)`) become the same settings.
extension Download {
    /// A download of the file the local Metalink v4 file at `path` (`.meta4`) describes: from its URLs
    /// at once (the first as the primary, the others and `options.mirrors` as mirrors), into its name
    /// when `destination` is a directory (made if missing), its size and SHA-256 checked.
    ///
    /// - Throws: `DownloadError.badManifest` for a file that cannot be read or is not a Metalink file;
    ///   `DownloadError.checksumMismatch` when `options.sha256` is not the file's hash.
    public convenience init(
        metalinkFile path: String, to destination: Destination, options: DownloadOptions = DownloadOptions()
    ) throws(DownloadError) {
        let document: MetalinkDocument
        do {
            document = try MetalinkDocument.parse(try Self.head(of: path, atMost: MetalinkDocument.maxBytes + 1))
        } catch {
            throw .badManifest("\(path): \(error)")
        }
        try Self.makeDirectory(of: destination)
        let target: Destination = if case .directory = destination { .file(destination.path { document.name }) } else { destination }
        self.init(url: document.urls[0], to: target, options: try options.following(document))
    }

    /// The first `limit` bytes of a local file (or all, if fewer): a hostile path (a device, a huge file) costs no more.
    private static func head(of path: String, atMost limit: Int) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw StreamParseError("cannot read the file") }
        defer { try? handle.close() }
        return [UInt8](try handle.read(upToCount: limit) ?? Data())
    }
}

extension DownloadOptions {
    /// These options for the file `document` describes: its other URLs as mirrors (before those given),
    /// its size expected, its SHA-256 checked; a SHA-256 asked for that is not the document's is a
    /// mismatch found before any byte is fetched.
    func following(_ document: MetalinkDocument) throws(DownloadError) -> DownloadOptions {
        var options = self
        options.mirrors = Array(document.urls.dropFirst()) + mirrors
        options.expectedLength = document.size
        if let sha256 = document.sha256 {
            if let asked = self.sha256?.lowercased(), asked != sha256 {
                throw .checksumMismatch(expected: asked, actual: sha256 + " (the Metalink file's)")
            }
            options.sha256 = sha256
        }
        return options
    }
}
