import NIOCore
import NIOHTTP1
import NIOPosix
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The body of a `/media` answer: the bytes of a range of a cache file, sent as the entry's download
/// writes them. Each step of 256 KiB is read on the cache's disk threads and sent after the previous
/// one was written to the socket, so a paused player holds nothing up; at a missing byte it waits for
/// the download (`CacheEntry.whenPresent`). Only bytes the running download reported as written are
/// sent, and the answer ends short when another download of the entry starts (it may be another file).
///
/// On the connection's event loop only; while it runs the entry counts it as a reader at its offset.
final class CacheFileBody {
    /// Bytes read from the cache file and written per step.
    private static let chunkSize: Int64 = 256 << 10

    private let exchange: Exchange
    private let entry: CacheEntry
    /// The entry's download version the answer's headers describe.
    private let version: Int
    private let reader: Int
    /// The cache file, open for reading; closed by `stop`.
    private let file: Int32
    private let disk: NIOThreadPool
    private var offset: Int64
    private let end: Int64
    private var stopped = false

    init(exchange: Exchange, entry: CacheEntry, version: Int, file: Int32, range: Range<Int64>, disk: NIOThreadPool) {
        self.exchange = exchange
        self.entry = entry
        self.version = version
        self.file = file
        self.disk = disk
        offset = range.lowerBound
        end = range.upperBound
        reader = entry.join(at: range.lowerBound)
    }

    /// Sends the answer's head, then the bytes.
    func start(_ status: HTTPResponseStatus, headers: HTTPHeaders) {
        exchange.begin(status, headers: headers) { [self] in stop() }
        pump()
    }

    /// Sends what is on disk from `offset`, one step at a time, and waits for the download at a missing byte.
    private func pump() {
        guard !stopped else { return }
        if offset == end {
            stop()
            return exchange.finish()
        }
        // Another download of the entry started (it may be another file): this answer ends here.
        guard entry.version == version else { return abort() }
        let available = entry.presentBytes(from: offset)
        guard available > 0 else {
            entry.whenPresent(offset, on: exchange.eventLoop).assumeIsolated().whenComplete { result in
                guard !self.stopped, self.exchange.isCurrent else { return }
                // The origin failed mid-answer: the player sees a short body and asks again.
                if case .failure = result { self.abort() } else { self.pump() }
            }
            return
        }
        let count = Int(min(available, end - offset, Self.chunkSize))
        let (file, offset, allocator) = (file, offset, exchange.allocator)
        disk.runIfActive(eventLoop: exchange.eventLoop) { () throws -> ByteBuffer in
            var buffer = allocator.buffer(capacity: count)
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                (try? FileSystem.read(file, into: UnsafeMutableRawBufferPointer(rebasing: pointer[..<count]), at: offset)) ?? 0
            }
            guard read == count else { throw IOError(errnoCode: EIO, reason: "short read of the cache file") }
            return buffer
        }.assumeIsolated().whenComplete { result in
            guard !self.stopped, self.exchange.isCurrent else { return }
            guard case .success(let buffer) = result, self.entry.version == self.version else { return self.abort() }
            self.offset += Int64(count)
            self.entry.move(self.reader, to: self.offset)
            self.exchange.write(buffer).assumeIsolated().whenComplete { written in
                guard !self.stopped, self.exchange.isCurrent else { return }
                if case .failure = written { self.abort() } else { self.pump() }
            }
        }
    }

    /// Ends the answer short: the connection closes.
    private func abort() {
        stop()
        exchange.close()
    }

    /// Leaves the entry and closes the file: at the end, or when the connection goes first.
    func stop() {
        guard !stopped else { return }
        stopped = true
        let file = file
        // A close may wait on the disk: on the disk threads (at once, here, once they are stopped).
        disk.submit { _ in FileSystem.close(file) }
        entry.leave(reader)
    }
}
