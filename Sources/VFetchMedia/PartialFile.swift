import VFetchCore
import VFetchEngine

/// A file on disk of which only some byte ranges are present, such as a download's sparse
/// `NAME.part` file: reads answer present bytes and report the missing run otherwise.
public final class PartialFile: MediaByteSource, Sendable {
    public let path: String
    public let length: Int64
    /// The present byte ranges, sorted, merged, and clipped to the file's length.
    public let present: [Range<Int64>]
    private let descriptor: Int32

    /// Opens `path` for reading; `length` is the whole file's length (present or not), `present`
    /// the byte ranges that hold data. Anything but a regular file (a FIFO, whose open would block,
    /// a device, a directory) is refused.
    public convenience init(path: String, length: Int64, present: [Range<Int64>]) throws(MediaError) {
        let descriptor: Int32
        do {
            descriptor = try FileSystem.open(path, .read, followingLinks: true)
        } catch {
            throw .invalidData(error.errno != nil ? "cannot open \(error)" : error.description)
        }
        self.init(descriptor: descriptor, path: path, length: length, present: present)
    }

    /// Reads through `descriptor`, an open regular file it now owns; `path` names it in messages.
    package init(descriptor: Int32, path: String, length: Int64, present: [Range<Int64>]) {
        self.path = path
        self.length = max(0, length)
        self.present = ByteRangeSet(present.map { $0.clamped(to: 0..<max(0, length)) }).ranges
        self.descriptor = descriptor
    }

    /// Opens a complete file: every byte up to its current size is present.
    public convenience init(path: String) throws(MediaError) {
        let length: Int64
        do { length = try FileSystem.status(at: path, followingLinks: true).size } catch {
            throw .invalidData("cannot open \(path): \(error)")
        }
        try self.init(path: path, length: length, present: [0..<length])
    }

    deinit {
        FileSystem.close(descriptor)
    }

    /// Reads present bytes at `offset` with `pread`, never past the present run that holds it.
    /// Answers `.aborted` when the disk fails or holds fewer bytes than `present` claims.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        guard offset < length else { return .endOfFile }
        guard offset >= 0 else { return .aborted }
        guard !buffer.isEmpty else { return .bytes(0) }
        let next = firstRun(endingAfter: offset)
        guard next < present.count, present[next].lowerBound <= offset else {
            return .missing(offset..<(next < present.count ? present[next].lowerBound : length))
        }
        let count = Int(min(Int64(buffer.count), present[next].upperBound - offset))
        let read = try? FileSystem.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), at: offset)
        guard let read, read > 0 else { return .aborted }
        return .bytes(read)
    }

    /// The index of the first present run that ends after `offset`.
    private func firstRun(endingAfter offset: Int64) -> Int {
        var low = 0
        var high = present.count
        while low < high {
            let middle = (low + high) / 2
            if present[middle].upperBound <= offset { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
