import Foundation
import VFetchCore

// The side file and its manifest: naming and locking, resuming, checkpoints, the final rename.
extension Engine {
    /// Names, locks and sizes the side file; returns the bytes an earlier run saved that may be reused.
    func openOutput(for remote: RemoteFile) throws(DownloadError) -> ByteRangeSet {
        outputPath = destination.path { FileName.choose(url: url, suggested: remote.suggestedName) }
        // A device, FIFO, directory or link is never replaced, nor a link beside it written through.
        // (`OutputFile` refuses the same at `NAME.part`.)
        for path in [outputPath, manifestPath] { try OutputFile.refuseIrregular(path) }
        if FileSystem.exists(outputPath), !options.overwrite {
            if OutputFile.isFinishedCopy(at: outputPath, of: remote) { throw .alreadyComplete(outputPath) }
            switch options.existingOutput {
            case .refuse: throw .outputExists(outputPath)
            case .keep: throw .alreadyComplete(outputPath)
            case .rename:
                outputPath = FileSystem.freeName(for: outputPath)
                for path in [outputPath, manifestPath] { try OutputFile.refuseIrregular(path) }
            }
        }
        let part = try OutputFile(
            path: SideFiles(output: outputPath).part, mode: options.privateOutput ? 0o600 : 0o644, naming: outputPath)
        file = part
        var resumed = ByteRangeSet()
        var created = Date()
        var previousTags: (blockSize: Int64, tags: [Int: UInt32])?
        if FileSystem.exists(manifestPath), !options.restart {
            switch previousRun(for: remote, in: part) {
            case .success(let previous):
                resumed = previous.savedRanges
                created = previous.created
                previousTags = (previous.blocks.blockSize, previous.tags)
            case .failure(let reason):
                events.yield(.notice("\(reason); starting over"))
            }
        }
        if resumed.isEmpty, let adopted = options.adoptedPrefix, !options.restart, let length = remote.length, remote.acceptsRanges,
            adopted <= length
        {
            resumed = ByteRangeSet([0..<adopted])
        }
        if resumed.isEmpty {
            // The old manifest goes before its bytes do: a crash in between must not leave it vouching for zeros.
            if FileSystem.exists(manifestPath) {
                do { try FileSystem.removeDurably(manifestPath) } catch { throw .forOutput(error) }
            }
            try part.setLength(0, preallocate: false)
        }
        try part.setLength(remote.length ?? 0, preallocate: options.preallocate)
        part.assumeWritten(resumed)
        resumedBytes = resumed.count
        guard let length = remote.length, remote.acceptsRanges else {
            // Without ranges there is nothing to resume from: no manifest.
            try? FileSystem.remove(manifestPath)
            return ByteRangeSet()
        }
        var blocks = BlockBitmap(length: length, blockSize: BlockBitmap.blockSize(forLength: length))
        blocks.mark(coveredBy: resumed)
        // The partial blocks saved before (checked already) are tagged again: a few small reads.
        var partialBlocks: [PartialBlock] = []
        for range in blocks.incompleteParts(of: resumed).prefix(Manifest.partialBlockLimit) {
            partialBlocks.append(PartialBlock(range: range, tag: try part.tag(of: range)))
        }
        var fresh = Manifest(
            url: url, finalURL: requestURL, length: length, etag: remote.etag, lastModified: remote.lastModified,
            contentType: remote.contentType, created: created, blocks: blocks, part: try part.identity(),
            tags: previousTags?.blockSize == blocks.blockSize ? previousTags?.tags ?? [:] : [:],
            partialBlocks: partialBlocks)
        // Blocks a version 1 manifest vouched for have no tags yet: they are read once, here.
        try fresh.tagCompleteBlocks { (range) throws(DownloadError) in try part.tag(of: range) }
        if let ifRange = fresh.ifRange, !resumed.isEmpty {
            segmentHeaders = HeaderList(requestsFor: options, ifRange: ifRange)
        }
        try startJournal(fresh)
        return resumed
    }

    /// Writes `manifest` as a snapshot and keeps it as the journal that checkpoints append to.
    func startJournal(_ manifest: Manifest) throws(DownloadError) {
        var journal = ManifestJournal(manifest)
        let manifestFile = ManifestFile(path: manifestPath)
        try manifestFile.write(.replace(journal.snapshot()))
        self.journal = journal
        self.manifestFile = manifestFile
        lastCheckpoint = (now, bytesReceived, 0)
    }

    /// Where the first probe asks the file from: the first byte the manifest beside the output says is
    /// missing, so a resumed download does not fetch the start of the file again only to drop it (an
    /// origin may send megabytes before the answer is read); the last byte when none is (the answer only
    /// says whether the file is still the same). 0 without a manifest of this URL. Only a hint:
    /// `previousRun` judges the manifest once the answer is in, and a probe whose bytes are not wanted stops.
    func probeStart() -> Int64 {
        if let adopted = options.adoptedPrefix, !options.restart { return adopted }  // `Download` found the file longer
        guard case .file(let path) = destination, !options.restart,
            let data = try? FileSystem.contents(at: SideFiles(output: path).manifest),
            let previous = try? Manifest(decoding: data), demand != nil || previous.url == url,
            let first = previous.savedRanges.ranges.first, first.lowerBound == 0
        else { return 0 }
        return min(first.upperBound, previous.length - 1)
    }

    /// The manifest an earlier run left, if its bytes are this remote file's and still in `part`
    /// (less any blocks that are not); otherwise why not.
    func previousRun(for remote: RemoteFile, in part: OutputFile) -> Result<Manifest, DiscardReason> {
        guard let data = try? FileSystem.contents(at: manifestPath) else {
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
        guard part.size == previous.length else {
            return .failure(DiscardReason("\(SideFiles(output: outputPath).part) is not the size the manifest says"))
        }
        return checkBlocks(of: previous, in: part).map { checkPartialBlocks(of: $0, in: part) }
    }

    /// `previous` without the blocks whose bytes in `part` are not the ones it recorded.
    ///
    /// The part it names gets a sample of its blocks read (`Manifest.blocksToCheck`); another file
    /// (a copy, a replacement), or a sample with a few differences, gets every block read, and what
    /// differs is fetched again. A sample with more differences than that keeps nothing.
    func checkBlocks(of previous: Manifest, in part: OutputFile) -> Result<Manifest, DiscardReason> {
        let partPath = SideFiles(output: outputPath).part
        let saved = previous.blocks.completedCount
        guard let identity = previous.part else {
            events.yield(
                .notice(
                    "\(manifestPath) was written by an earlier vfetch, without block tags: its \(saved) saved blocks are trusted this once")
            )
            return .success(previous)
        }
        func differing(_ blocks: [Int]) -> [Int] {
            blocks.filter { block in !previous.matches(block: block, tag: try? part.tag(of: previous.blocks.range(of: block))) }
        }
        var bad: [Int]
        if (try? part.identity()) == identity {
            var generator = SystemRandomNumberGenerator()
            let sample = previous.blocksToCheck(using: &generator)
            bad = differing(sample)
            if bad.isEmpty { return .success(previous) }
            if bad.count > Manifest.damagedSampleLimit {
                return .failure(
                    DiscardReason("\(bad.count) of \(sample.count) sampled blocks of \(partPath) differ from what \(manifestPath) recorded")
                )
            }
            if sample.count < saved {
                events.yield(
                    .notice(
                        "\(bad.count) of \(sample.count) sampled blocks of \(partPath) differ from what \(manifestPath) recorded; checking all \(saved)"
                    ))
                bad = differing(previous.blocks.completeBlocks)
            }
        } else {
            events.yield(
                .notice(
                    "\(partPath) is not the file \(manifestPath) was written for (copied or replaced); checking its \(saved) saved blocks"))
            bad = differing(previous.blocks.completeBlocks)
        }
        if bad.isEmpty { return .success(previous) }
        if bad.count == saved {
            return .failure(DiscardReason("all \(saved) saved blocks of \(partPath) differ from what \(manifestPath) recorded"))
        }
        events.yield(
            .notice("\(bad.count) of \(saved) saved blocks of \(partPath) differ from what \(manifestPath) recorded; fetching them again"))
        var kept = previous
        for block in bad { kept.forget(block: block) }
        return .success(kept)
    }

    /// `previous` without the partial blocks whose bytes in `part` are not the ones it recorded. They
    /// are few and small (8 KiB read each at most), so every one is read.
    func checkPartialBlocks(of previous: Manifest, in part: OutputFile) -> Manifest {
        var kept = previous
        kept.forgetPartialBlocks { (try? part.tag(of: $0.range)) != $0.tag }
        let differing = previous.partialBlocks.count - kept.partialBlocks.count
        if differing > 0 {
            events.yield(
                .notice(
                    "\(differing) of \(previous.partialBlocks.count) partial blocks of \(SideFiles(output: outputPath).part) differ from what \(manifestPath) recorded; fetching them again"
                ))
        }
        return kept
    }

    /// Makes what was received durable, then records it: data synced, then the blocks completed and
    /// the partial blocks appended to the manifest (or the manifest replaced whole, as its journal says).
    /// Runs as `CheckpointPacing` says, its syncs on `checkpointSync`'s thread while the transfers go on;
    /// when forced, on this one, after the last, leaving the manifest one snapshot.
    func checkpoint(force: Bool = false) throws(DownloadError) {
        guard var journal, let manifestFile, let file else { return }
        // The last checkpoint's syncs: what they cost, and a failure the journal must know of.
        var failure: DownloadError?
        if let ended = force ? checkpointSync.wait() : checkpointSync.takeOutcome() {
            lastCheckpoint.cost = ended.seconds
            if let error = ended.error {
                journal.writeFailed()
                self.journal = journal
                failure = error
            }
        }
        if let failure, !force { throw failure }
        guard force || !checkpointSync.isBusy else { return }
        let pacing = CheckpointPacing(interval: options.checkpointInterval, bytes: options.checkpointBytes)
        let due = pacing.isDue(
            seconds: now - lastCheckpoint.time, received: bytesReceived - lastCheckpoint.bytes, cost: lastCheckpoint.cost)
        guard force || due else { return }
        // A buffer that cannot be written (disk full) must not keep what did reach the file unrecorded.
        do { try flushWriteBuffers() } catch { failure = failure ?? error }
        lastCheckpoint.time = now
        lastCheckpoint.bytes = bytesReceived
        let recorded = journal.manifest
        var blocks = recorded.blocks
        blocks.mark(coveredBy: file.written)
        let completed = blocks.blocksCompleted(since: recorded.blocks)
        let partial = Array(blocks.incompleteParts(of: file.written).prefix(Manifest.partialBlockLimit))
        let syncsData = !completed.isEmpty || partial != recorded.partialBlocks.map(\.range)
        var write: ManifestJournal.Write?
        if syncsData {
            // A tag states what the sync makes durable: these bytes were just written and are not written
            // again, so they read the same now, from the page cache. A partial block unchanged keeps its tag.
            var update = Manifest.Update()
            for block in completed { update.completedBlocks[block] = try file.tag(of: blocks.range(of: block)) }
            let known = Dictionary(recorded.partialBlocks.map { ($0.range, $0.tag) }) { first, _ in first }
            for range in partial {
                let tag = if let tag = known[range] { tag } else { try file.tag(of: range) }
                update.partialBlocks.append(PartialBlock(range: range, tag: tag))
            }
            write = journal.record(update)
        }
        if force, journal.hasUpdates { write = .replace(journal.snapshot()) }
        self.journal = journal
        guard syncsData || write != nil else {
            if let failure { throw failure }
            return
        }
        let syncs = { () throws(DownloadError) in
            if syncsData { try file.sync() }
            if let write { try manifestFile.write(write) }
        }
        guard force else { return checkpointSync.start(syncs) }
        let started = ContinuousClock.now
        do { try syncs() } catch {
            self.journal?.writeFailed()
            throw error
        }
        lastCheckpoint.cost = started.secondsAgo
        if let failure { throw failure }
    }

    /// Writes what every transfer's buffer holds to the file.
    func flushWriteBuffers() throws(DownloadError) {
        for transfer in transfers { try transfer.sink?.flush() }
    }

    func finish() throws(DownloadError) -> DownloadSummary {
        guard let file, let scheduler else { throw .transferFailed("nothing downloaded") }
        let total = scheduler.total ?? scheduler.completed.count
        // The sync below covers what a checkpoint's was syncing; a manifest it failed to write is replaced or removed.
        if checkpointSync.wait()?.error != nil { journal?.writeFailed() }
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
            if journal == nil, let remote {
                var blocks = BlockBitmap(length: total, blockSize: BlockBitmap.blockSize(forLength: total))
                blocks.mark(coveredBy: ByteRangeSet([0..<total]))
                var complete = Manifest(
                    url: url, finalURL: requestURL, length: total, etag: remote.etag, lastModified: remote.lastModified,
                    contentType: remote.contentType, created: Date(), blocks: blocks, part: try file.identity())
                try complete.tagCompleteBlocks { (range) throws(DownloadError) in try file.tag(of: range) }
                try startJournal(complete)
            }
            try checkpoint(force: true)
        } else {
            file.stamp(lastModified: remote?.lastModified)
            try file.move(to: outputPath)
            manifestFile?.remove()
            FileSystem.syncDirectory(of: outputPath)
        }
        reportProgress(force: true)
        let summary = DownloadSummary(
            path: outputPath, bytes: total, seconds: now, connections: driver.connectionsOpened,
            peakConnections: driver.peakTransfers, retries: scheduler.retries, sha256: digest, resumedBytes: resumedBytes,
            duplicateBytes: duplicateBytes, sources: bytesBySource(fetched: total - resumedBytes))
        events.yield(.finished(summary))
        return summary
    }

    func sha256(of file: OutputFile, length: Int64) throws(DownloadError) -> String {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)  // page-aligned: reads into it 3x cheaper
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
