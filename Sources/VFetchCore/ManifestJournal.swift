/// A manifest as its writer keeps the file: a snapshot (the whole manifest) followed by updates,
/// each sealed with a digest chained to the record before it, so a checkpoint writes only what
/// changed. When the updates outgrow the snapshot, the next checkpoint writes a new snapshot.
///
/// It decides what to write; the download writes it (`ManifestFile`), and says when a write failed.
package struct ManifestJournal: Sendable {
    /// What the file needs next.
    package enum Write: Equatable, Sendable {
        /// Replace the file with these bytes: a snapshot.
        case replace([UInt8])
        /// Append these bytes to the file as last written: an update.
        case append([UInt8])
    }

    /// The manifest with every update applied.
    package private(set) var manifest: Manifest
    /// The digest of the last record written, which the next update's trailer covers; nil when the
    /// file may not hold what this journal wrote (nothing yet, or a write failed).
    private var chain: [UInt8]?
    private var snapshotBytes = 0
    private var updateBytes = 0

    /// Updates are folded into a new snapshot once they pass the snapshot's size, or this when it is
    /// smaller: so the file stays within about twice the manifest's size, and rewriting it whole
    /// costs each update no more than its own size.
    package static let minimumUpdateBytes = 64 << 10

    /// A journal whose first write will be a snapshot of `manifest`.
    package init(_ manifest: Manifest) {
        self.manifest = manifest
    }

    /// Whether the file holds updates after its snapshot, or may not hold the manifest at all: what
    /// a snapshot would tidy up.
    package var hasUpdates: Bool { chain == nil || updateBytes > 0 }

    /// Applies `update` (`Manifest.normalized` first) and says what to write: an update, or a
    /// snapshot when the file needs one.
    package mutating func record(_ update: Manifest.Update) -> Write {
        let update = manifest.normalized(update)
        manifest.apply(update)
        guard let chain, updateBytes < max(snapshotBytes, Self.minimumUpdateBytes) else { return .replace(snapshot()) }
        let record = update.encodedRecord(after: chain)
        self.chain = record.digest
        updateBytes += record.bytes.count
        return .append(record.bytes)
    }

    /// The whole manifest as a snapshot, to replace the file with; updates chain to it from now on.
    package mutating func snapshot() -> [UInt8] {
        let record = manifest.encodedSnapshot()
        chain = record.digest
        snapshotBytes = record.bytes.count
        updateBytes = 0
        return record.bytes
    }

    /// The last write did not complete: the file may hold anything, so the next one is a snapshot.
    package mutating func writeFailed() {
        chain = nil
    }
}
