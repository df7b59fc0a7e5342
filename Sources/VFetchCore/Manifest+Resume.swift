extension Manifest {
    /// Why the bytes this manifest vouches for cannot be reused for `remote` at `url`, or nil when they can.
    ///
    /// A strong ETag must be equal; without one, Last-Modified and length must be; with neither,
    /// only `trustLength` lets the length alone decide. A weak ETag proves nothing, but a new one is a change.
    package func reasonToDiscard(for remote: RemoteFile, url: String, trustLength: Bool) -> String? {
        if self.url != url { return "the manifest belongs to another URL (\(self.url))" }
        guard let remoteLength = remote.length, remote.acceptsRanges else {
            return "the server no longer serves byte ranges"
        }
        if length != remoteLength { return "the remote file changed: length \(length) → \(remoteLength)" }
        if hasStrongETag {
            return remote.etag == etag ? nil : "the remote file changed: ETag \(etag ?? "") → \(remote.etag ?? "none")"
        }
        if let etag, remote.etag != etag {
            return "the remote file changed: ETag \(etag) → \(remote.etag ?? "none")"
        }
        if let lastModified {
            return remote.lastModified == lastModified
                ? nil : "the remote file changed: Last-Modified \(lastModified) → \(remote.lastModified ?? "none")"
        }
        return trustLength ? nil : "the server gives no ETag or Last-Modified to prove the file is unchanged"
    }

    /// The `If-Range` value for requests that continue this download: a strong ETag, else the date.
    package var ifRange: String? { hasStrongETag ? etag : lastModified }
}

extension Manifest {
    /// How many complete blocks a resume reads to check their tags (plus the last complete one).
    package static let blocksSampled = 64
    /// More sampled blocks than this disagreeing with their tags means the part is broadly damaged:
    /// nothing in it is kept. Fewer, and every block is checked.
    package static let damagedSampleLimit = 4

    /// The complete blocks a resume checks against their tags: all of them when there are few,
    /// otherwise `blocksSampled` chosen at random and the last complete block (a file's tail is
    /// what a crash most often leaves unwritten).
    package func blocksToCheck(using generator: inout some RandomNumberGenerator) -> [Int] {
        let complete = blocks.completeBlocks
        guard complete.count > Self.blocksSampled + 1, let last = complete.last else { return complete }
        var chosen = Set([last])
        while chosen.count <= Self.blocksSampled {
            chosen.insert(complete[Int.random(in: 0..<(complete.count - 1), using: &generator)])
        }
        return chosen.sorted()
    }

    /// Whether `block`'s bytes, read now, have the tag they had when the block was recorded.
    /// False for a block without a tag: nothing vouches for it.
    package func matches(block: Int, tag: UInt32?) -> Bool {
        guard let tag, let recorded = tags[block] else { return false }
        return tag == recorded
    }
}
