import Foundation
import VFetchCore

// The side file and its manifest: naming and locking, resuming, checkpoints, the final rename.
extension Engine {
    /// Names, locks and sizes the side file; returns the bytes an earlier run saved that may be reused.
    func openOutput(for remote: RemoteFile) throws(DownloadError) -> ByteRangeSet {
        switch destination {
        case .file(let path):
            outputPath = path
        case .directory(let directory):
            let name = FileName.choose(url: url, suggested: remote.suggestedName)
            outputPath = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        }
        // A device, FIFO, directory or link is never replaced, nor a link beside it written through.
        // (`OutputFile` refuses the same at `NAME.part`.)
        for path in [outputPath, manifestPath] { try OutputFile.refuseIrregular(path) }
        if OutputFile.exists(outputPath), !options.overwrite { throw .outputExists(outputPath) }
        let part = try OutputFile(path: outputPath + ".part")
        file = part
        var resumed = ByteRangeSet()
        var created = Date()
        if OutputFile.exists(manifestPath), !options.restart {
            switch previousRun(for: remote, partSize: part.size) {
            case .success(let previous):
                resumed = previous.blocks.completedRanges
                created = previous.created
            case .failure(let reason):
                events.yield(.notice("\(reason); starting over"))
            }
        }
        if resumed.isEmpty {
            // The old manifest goes before its bytes do: a crash in between must not leave it vouching for zeros.
            if OutputFile.exists(manifestPath) {
                try OutputFile.removeDurably(manifestPath)
            }
            try part.setLength(0, preallocate: false)
        }
        try part.setLength(remote.length ?? 0, preallocate: options.preallocate)
        part.assumeWritten(resumed)
        resumedBytes = resumed.count
        guard let length = remote.length, remote.acceptsRanges else {
            // Without ranges there is nothing to resume from: no manifest.
            OutputFile.remove(manifestPath)
            return ByteRangeSet()
        }
        var blocks = BlockBitmap(length: length, blockSize: BlockBitmap.blockSize(forLength: length))
        blocks.mark(coveredBy: resumed)
        let fresh = Manifest(
            url: url, finalURL: requestURL, length: length, etag: remote.etag, lastModified: remote.lastModified,
            contentType: remote.contentType, created: created, blocks: blocks)
        manifest = fresh
        if let ifRange = fresh.ifRange, !resumed.isEmpty {
            segmentHeaders = HeaderList(requestsFor: options, ifRange: ifRange)
        }
        try OutputFile.replaceDurably(manifestPath, with: fresh.encoded())
        lastCheckpoint = (now, bytesReceived)
        return resumed
    }

    /// The manifest an earlier run left, if its bytes are this remote file's; otherwise why not.
    func previousRun(for remote: RemoteFile, partSize: Int64) -> Result<Manifest, DiscardReason> {
        guard let data = try? RegularFile.contents(at: manifestPath) else {
            return .failure(DiscardReason("cannot read \(manifestPath)"))
        }
        let previous: Manifest
        do {
            previous = try Manifest(decoding: data)
        } catch {
            return .failure(DiscardReason("\(manifestPath): \(error)"))
        }
        // A cache entry is named by its key: a signed URL may differ from read to read.
        let identity = demand == nil ? url : previous.url
        if let reason = previous.reasonToDiscard(for: remote, url: identity, trustLength: options.trustLength) {
            return .failure(DiscardReason(reason))
        }
        guard partSize == previous.length else {
            return .failure(DiscardReason("\(outputPath).part is not the size the manifest says"))
        }
        return .success(previous)
    }

    /// Makes what was received durable, then records it: data synced, then the manifest replaced atomically.
    /// Runs at least every `checkpointInterval` seconds and `checkpointBytes` bytes, and when forced.
    func checkpoint(force: Bool = false) throws(DownloadError) {
        guard var manifest, let file else { return }
        let due =
            now - lastCheckpoint.time >= options.checkpointInterval
            || bytesReceived - lastCheckpoint.bytes >= options.checkpointBytes
        guard force || due else { return }
        // A buffer that cannot be written (disk full) must not keep what did reach the file unrecorded.
        var flushError: DownloadError?
        do { try flushWriteBuffers() } catch { flushError = error }
        lastCheckpoint = (now, bytesReceived)
        var blocks = manifest.blocks
        blocks.mark(coveredBy: file.written)
        if blocks != manifest.blocks {
            try file.sync()
            manifest.blocks = blocks
            try OutputFile.replaceDurably(manifestPath, with: manifest.encoded())
            self.manifest = manifest
        }
        if let flushError { throw flushError }
    }

    /// Writes what every transfer's buffer holds to the file.
    func flushWriteBuffers() throws(DownloadError) {
        guard let file else { return }
        for transfer in transfers.values { try transfer.pending.flush(to: file) }
    }

    func finish() throws(DownloadError) -> DownloadSummary {
        guard let file, let scheduler else { throw .transferFailed("nothing downloaded") }
        let total = scheduler.total ?? scheduler.completed.count
        if remote?.length == nil { try file.setLength(total, preallocate: false) }
        try file.sync()
        var digest: String?
        if let expected = options.sha256?.lowercased() {
            let actual = try sha256(of: file, length: total)
            guard actual == expected else { throw .checksumMismatch(expected: expected, actual: actual) }
            digest = actual
        }
        if demand != nil {
            // The player cache keeps a finished entry where it is, its manifest saying it is complete.
            if manifest == nil, let remote {
                var blocks = BlockBitmap(length: total, blockSize: BlockBitmap.blockSize(forLength: total))
                blocks.mark(coveredBy: ByteRangeSet([0..<total]))
                manifest = Manifest(
                    url: url, finalURL: requestURL, length: total, etag: remote.etag, lastModified: remote.lastModified,
                    contentType: remote.contentType, created: Date(), blocks: blocks)
            }
            try checkpoint(force: true)
        } else {
            try file.move(to: outputPath)
            if manifest != nil { OutputFile.remove(manifestPath) }
            OutputFile.syncDirectory(of: outputPath)
        }
        reportProgress(force: true)
        let summary = DownloadSummary(
            path: outputPath, bytes: total, seconds: now, connections: connectionsOpened,
            peakConnections: peakConnections, retries: scheduler.retries, sha256: digest, resumedBytes: resumedBytes,
            duplicateBytes: duplicateBytes)
        events.yield(.finished(summary))
        return summary
    }

    func sha256(of file: OutputFile, length: Int64) throws(DownloadError) -> String {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let count = try file.read(into: buffer, at: offset)
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return hasher.finalize()
    }
}

/// Why an earlier run's bytes are not reused.
struct DiscardReason: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
