/// Where the media bytes come from: a file that may have holes.
///
/// `MediaProbe` calls `read` from the thread it runs on; a source may block there until bytes
/// arrive, and answers `.aborted` to make the probe give up.
public protocol MediaByteSource: AnyObject {
    /// The length of the whole file, present or not.
    var length: Int64 { get }
    /// Reads up to `buffer.count` bytes at `offset`. Must return only present bytes.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead
}

/// The answer of a ``MediaByteSource`` to one read.
public enum MediaRead: Equatable, Sendable {
    /// This many bytes were copied into the buffer: at least one, unless the buffer is empty.
    case bytes(Int)
    /// The offset is at or past the end of the file.
    case endOfFile
    /// The bytes at the offset are not present: the missing run starting at the offset, up to the
    /// next present byte or the end of the file.
    case missing(Range<Int64>)
    /// The reader must give up (the download was cancelled, the source failed).
    case aborted
}
