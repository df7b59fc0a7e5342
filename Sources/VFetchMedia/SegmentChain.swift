import VFetchContainers
import VFetchCore
import VFetchEngine

/// The files of one track of a segmented stream (an initialization section, then its segments in
/// play order) read as one byte stream, as a demuxer expects them: no concatenated copy is made.
///
/// Holds one file open at a time, so a track of thousands of segments needs one descriptor.
/// Confined to the thread that remuxes.
final class SegmentChain: MediaByteSource {
    let paths: [String]
    /// Where each file starts in the chain, then the chain's length: file i is `starts[i]..<starts[i + 1]`.
    private let starts: [Int64]
    /// The file being read and its descriptor.
    private var current: (index: Int, descriptor: Int32)?
    /// Why the last read gave up (a file shrank or could not be read), for the error.
    private(set) var failure: String?

    /// Bytes read at a time by `checkFraming`.
    private static let chunkSize = 1 << 20

    /// Takes the files' sizes now; every path must name a regular file (a link is not followed).
    init(paths: [String]) throws(MediaError) {
        guard !paths.isEmpty else { throw .invalidData("a track with no files") }
        var starts: [Int64] = [0]
        starts.reserveCapacity(paths.count + 1)
        for path in paths {
            let size = try Self.size(of: path)
            guard case (let end, false) = starts[starts.count - 1].addingReportingOverflow(size) else {
                throw .invalidData("the files of a track add up to more bytes than a file can hold")
            }
            starts.append(end)
        }
        self.paths = paths
        self.starts = starts
    }

    deinit {
        if let current { FileSystem.close(current.descriptor) }
    }

    var length: Int64 { starts[starts.count - 1] }

    /// The file that holds byte `offset` of the chain (the last one for the end).
    func fileIndex(at offset: Int64) -> Int {
        // The last start not after `offset`, skipping empty files.
        var low = 0
        var high = paths.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// "file 3 of 10 (path)", for messages.
    func describe(file index: Int) -> String {
        "file \(index + 1) of \(paths.count) (\(paths[index]))"
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> MediaRead {
        guard offset >= 0 else { return .aborted }
        guard offset < length else { return .endOfFile }
        guard !buffer.isEmpty else { return .bytes(0) }
        let index = fileIndex(at: offset)
        guard let descriptor = open(index) else { return .aborted }
        let within = offset - starts[index]
        let want = Int(min(Int64(buffer.count), starts[index + 1] - offset))
        do {
            let count = try FileSystem.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: within)
            if count > 0 { return .bytes(count) }
            failure = "\(describe(file: index)) became shorter while it was read"
        } catch {
            failure = "cannot read \(describe(file: index)): \(error)"
        }
        return .aborted
    }

    /// Checks that every file is whole and framed as the first one is (MPEG-TS packets or MP4
    /// boxes), reading each once; files of a framing that cannot be checked pass.
    func checkFraming() throws(MediaError) {
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        let first = chunk.withUnsafeMutableBytes { read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<8]), at: 0) }
        guard case .bytes(let count) = first, let framing = SegmentFraming.detect(firstBytes: chunk[0..<count]) else {
            if let failure { throw .invalidData(failure) }
            return
        }
        for index in paths.indices {
            var check = SegmentFraming.Check(framing)
            var offset = starts[index]
            while offset < starts[index + 1] {
                let want = Int(min(Int64(chunk.count), starts[index + 1] - offset))
                let answer = chunk.withUnsafeMutableBytes { buffer in
                    let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
                    let answer = read(into: part, at: offset)
                    if case .bytes(let count) = answer { check.feed(UnsafeRawBufferPointer(rebasing: part[0..<count])) }
                    return answer
                }
                guard case .bytes(let count) = answer else { throw .invalidData(failure ?? "cannot read \(describe(file: index))") }
                offset += Int64(count)
            }
            do {
                try check.finish()
            } catch {
                let kind = framing == .transportStream ? "MPEG-TS" : "MP4"
                throw .invalidData("\(describe(file: index)) is not whole \(kind) as the track's first file is: \(error)")
            }
        }
    }

    /// The open descriptor of file `index`, closing the one open before.
    private func open(_ index: Int) -> Int32? {
        if let current, current.index == index { return current.descriptor }
        if let current { FileSystem.close(current.descriptor) }
        current = nil
        do {
            let descriptor = try FileSystem.open(paths[index], .read)
            current = (index, descriptor)
            return descriptor
        } catch {
            failure = "cannot open \(describe(file: index)): \(error)"
            return nil
        }
    }

    private static func size(of path: String) throws(MediaError) -> Int64 {
        let descriptor: Int32
        do {
            descriptor = try FileSystem.open(path, .read)
        } catch {
            throw .invalidData("cannot open \(error)")
        }
        defer { FileSystem.close(descriptor) }
        do { return try FileSystem.status(of: descriptor).size } catch {
            throw .invalidData("cannot read \(path): \(error)")
        }
    }
}

@available(*, unavailable)
extension SegmentChain: Sendable {}
