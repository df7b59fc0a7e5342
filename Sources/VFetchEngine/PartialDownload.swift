import Foundation
import VFetchCore

/// What the manifest of an unfinished download says, for `vfetch status`.
public struct PartialDownload: Sendable, Equatable {
    public var outputPath: String
    public var url: String
    public var finalURL: String
    public var length: Int64
    /// Bytes saved durably (complete blocks and partial ones).
    public var bytesDone: Int64
    public var blockSize: Int64
    public var etag: String?
    public var lastModified: String?
    public var contentType: String?
    public var created: Date
    private var saved: ByteRangeSet
    private var manifest: Manifest

    /// Reads `<outputPath>.vfetch`.
    public init(outputPath: String) throws(DownloadError) {
        let path = SideFiles(output: outputPath).manifest
        let data: [UInt8]
        do {
            data = try FileSystem.contents(at: path)
        } catch {
            // Never a FIFO (whose read would block), a device or a link in its place.
            throw error.errno != nil ? .noDownload(outputPath) : .badManifest(error.description)
        }
        let manifest: Manifest
        do {
            manifest = try Manifest(decoding: data)
        } catch {
            throw .badManifest("\(path): \(error)")
        }
        self.outputPath = outputPath
        url = manifest.url
        finalURL = manifest.finalURL
        length = manifest.length
        saved = manifest.savedRanges
        bytesDone = saved.count
        blockSize = manifest.blocks.blockSize
        etag = manifest.etag
        lastModified = manifest.lastModified
        contentType = manifest.contentType
        created = manifest.created
        self.manifest = manifest
    }

    /// Why the manifest cannot say which bytes of the part file open at `descriptor` are saved, or
    /// nil when it can (`Manifest.reasonNotToTrust`).
    package func reasonNotToTrust(partAt descriptor: Int32) -> String? {
        do {
            let status = try FileSystem.status(of: descriptor)
            return manifest.reasonNotToTrust(part: PartIdentity(device: status.device, inode: status.inode), size: status.size)
        } catch {
            return "cannot read the part's size: \(error)"
        }
    }

    /// The byte ranges saved in `<outputPath>.part`.
    public var presentRanges: [Range<Int64>] { saved.ranges }

    /// A map of `width` characters: █ done, ▓ half or more, ░ started, · not yet.
    public func map(width: Int) -> String { saved.map(total: length, width: width) }
}

extension RemoteInfo {
    /// What the manifest of a finished cache entry says of its file; nil unless every block is saved.
    package init?(finishedAt outputPath: String) {
        guard let partial = try? PartialDownload(outputPath: outputPath), partial.bytesDone == partial.length else {
            return nil
        }
        self.init(
            url: partial.url, finalURL: partial.finalURL, length: partial.length, acceptsRanges: true, etag: partial.etag,
            lastModified: partial.lastModified, contentType: partial.contentType, outputPath: outputPath,
            resumedBytes: partial.length)
    }
}
