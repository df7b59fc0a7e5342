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
