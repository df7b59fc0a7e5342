import VFetchCore

/// Why a partial media file could not be probed, or segment files not remuxed.
public enum MediaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing can be said until these bytes are present (for an MP4, the whole `moov` box).
    case needsBytes(Range<Int64>)
    /// The bytes are not media libavformat can read: garbage, truncated, or an unreadable file.
    case invalidData(String)
    /// The byte source gave up.
    case aborted
    /// The output file could not be written (full disk, no permission, not a regular file).
    case cannotWrite(String)

    public var description: String {
        switch self {
        case .needsBytes(let range):
            "needs bytes \(range.lowerBound)..<\(range.upperBound) (\(humanSize(Int64(range.count)))) before the media can be read"
        case .invalidData(let message): "not readable media: \(message)"
        case .aborted: "the read was aborted"
        case .cannotWrite(let message): "cannot write \(message)"
        }
    }
}
