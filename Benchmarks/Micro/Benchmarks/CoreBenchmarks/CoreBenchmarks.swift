// Microbenchmarks of the pure-Swift hot paths in VFetchCore. See ../../README.md.
//
// Each benchmark measures a fixed batch of work per iteration (see the comment above it), with any
// setup done before `benchmark.startMeasurement()` so only the operation under test is timed and
// its allocations counted.

import Benchmark
import Foundation
import VFetchCore

/// 16 KiB: the size of the chunks libcurl hands over, so the unit of every per-chunk benchmark.
let chunk: Int64 = 16 << 10
let fourGiB: Int64 = 4 << 30

/// Tolerances used when a run is compared with the checked-in p90 values in `Thresholds/`
/// (`swift package benchmark thresholds check`) or with another baseline (`baseline check`).
///
/// - wallClock: the p90 may drift `timePercent` either way before it counts as a change; wall time
///   is noisy on shared machines, so this is loose and catches only real regressions.
/// - mallocCountTotal: deterministic for this code, so the p90 may differ by at most `mallocSlack`
///   allocations (absolute, because a relative tolerance never fires against a stored 0).
func configuration(timePercent: Double = 100, mallocSlack: Int = 2) -> Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        warmupIterations: 3,
        maxDuration: .seconds(1),
        maxIterations: 100_000,
        thresholds: [
            .wallClock: BenchmarkThresholds(relative: [.p90: timePercent]),
            .mallocCountTotal: BenchmarkThresholds(absolute: [.p90: mallocSlack]),
        ]
    )
}

/// A scheduler for a `total`-byte file with `transfers` transfers running, as the engine builds it:
/// the probe is adopted, then each free connection gets an assignment (the largest segment split).
func runningScheduler(total: Int64, transfers: Int) -> (SegmentScheduler, [TransferID]) {
    var scheduler = SegmentScheduler(total: total, rangeRequests: true)
    var ids: [TransferID] = []
    if let probe = scheduler.adopt(requestedUpTo: nil, now: 0) { ids.append(probe) }
    while ids.count < transfers, let assignment = scheduler.assign(now: 0) { ids.append(assignment.transfer) }
    precondition(ids.count == transfers, "expected \(transfers) transfers, got \(ids.count)")
    return (scheduler, ids)
}

/// A 4 GiB file's bitmap half done, in 32 runs (one per connection), as a manifest after a long download has it.
func halfDoneRanges(length: Int64, runs: Int) -> ByteRangeSet {
    let span = length / Int64(runs)
    return ByteRangeSet((0..<Int64(runs)).map { run in run * span..<(run * span + span / 2) })
}

let benchmarks: @Sendable () -> Void = {
    // MARK: ByteRangeSet

    // 4 runs (4 connections) each extended by 256 sequential 16 KiB chunks, interleaved as they arrive.
    Benchmark("ByteRangeSet.insert", configuration: configuration()) { benchmark in
        let runs: Int64 = 4
        let runSpan = fourGiB / runs
        var set = ByteRangeSet()
        benchmark.startMeasurement()
        for step in 0..<Int64(256) {
            for run in 0..<runs {
                let start = run * runSpan + step * chunk
                set.insert(start..<(start + chunk))
            }
        }
        benchmark.stopMeasurement()
        precondition(set.ranges.count == Int(runs))
        blackHole(set)
    }

    // MARK: SegmentScheduler

    // The per-chunk hot path: 32 transfers on a 4 GiB file each deliver 32 chunks of 16 KiB, round robin.
    Benchmark("SegmentScheduler.receive", configuration: configuration()) { benchmark in
        var (scheduler, ids) = runningScheduler(total: fourGiB, transfers: 32)
        benchmark.startMeasurement()
        var written: Int64 = 0
        for step in 0..<32 {
            let now = Double(step) * 0.001
            for id in ids {
                let receipt = scheduler.receive(id, count: chunk, now: now)
                written += receipt.write?.count.toInt64 ?? 0
            }
        }
        benchmark.stopMeasurement()
        precondition(written == 1024 * chunk)
        blackHole(scheduler)
    }

    // Starting a download: adopt the probe, then 31 assignments, each splitting the largest segment.
    Benchmark("SegmentScheduler.assign", configuration: configuration(mallocSlack: 10)) { benchmark in
        var scheduler = SegmentScheduler(total: fourGiB, rangeRequests: true)
        benchmark.startMeasurement()
        var started = scheduler.adopt(requestedUpTo: nil, now: 0) == nil ? 0 : 1
        while started < 32, scheduler.assign(now: 0) != nil { started += 1 }
        benchmark.stopMeasurement()
        precondition(started == 32)
        blackHole(scheduler)
    }

    // The once-a-second rate pass over 32 transfers with uneven rates (a few slow ones are flagged).
    Benchmark("SegmentScheduler.tick", configuration: configuration()) { benchmark in
        var (scheduler, ids) = runningScheduler(total: fourGiB, transfers: 32)
        _ = scheduler.tick(now: 0)
        for (index, id) in ids.enumerated() {
            // Transfers 0, 8, 16, 24 crawl; the rest deliver 4 to 11 chunks.
            let chunks = index % 8 == 0 ? 1 : 4 + index % 8
            for _ in 0..<chunks { _ = scheduler.receive(id, count: chunk, now: 0.5) }
        }
        benchmark.startMeasurement()
        let slow = scheduler.tick(now: 1)
        benchmark.stopMeasurement()
        blackHole(slow)
        blackHole(scheduler)
    }

    // MARK: BlockBitmap

    // A 4 GiB file has 256 KiB blocks (16384 of them); mark the half of them covered by 32 runs.
    let blockSize = BlockBitmap.blockSize(forLength: fourGiB)
    let halfDone = halfDoneRanges(length: fourGiB, runs: 32)
    Benchmark("BlockBitmap.mark", configuration: configuration()) { benchmark in
        var bitmap = BlockBitmap(length: fourGiB, blockSize: blockSize)
        benchmark.startMeasurement()
        bitmap.mark(coveredBy: halfDone)
        benchmark.stopMeasurement()
        precondition(bitmap.completedCount == bitmap.blockCount / 2)
        blackHole(bitmap)
    }

    // MARK: Manifest

    var blocks = BlockBitmap(length: fourGiB, blockSize: blockSize)
    blocks.mark(coveredBy: halfDone)
    let manifest = Manifest(
        url: "https://media.example.com/videos/2024/keynote-4k.mp4?token=abcdef0123456789",
        finalURL: "https://cdn-17.example.net/v/2024/keynote-4k.mp4?sig=0123456789abcdef&exp=1700000000",
        length: fourGiB, etag: "\"5f3c-1a2b3c4d5e6f\"", lastModified: "Tue, 14 Nov 2023 08:12:31 GMT",
        contentType: "video/mp4", created: Date(timeIntervalSince1970: 1_700_000_000), blocks: blocks,
        part: PartIdentity(device: 2049, inode: 1_234_567),
        tags: Dictionary(uniqueKeysWithValues: blocks.completeBlocks.map { ($0, UInt32(truncatingIfNeeded: $0 &* 2_654_435_761)) }))
    let manifestBytes = manifest.encoded()

    // Written after every flush: JSON line + SHA-256 trailer, with a 2 KiB bitmap and the complete
    // blocks' 32 KiB of tags as base64.
    Benchmark("Manifest.encoded", configuration: configuration(mallocSlack: 10)) { benchmark in
        blackHole(manifest.encoded())
    }

    // Read on resume: trailer check, SHA-256 of the line, two JSON decodes.
    Benchmark("Manifest.decoding", configuration: configuration(mallocSlack: 10)) { benchmark in
        do {
            blackHole(try Manifest(decoding: manifestBytes))
        } catch {
            fatalError("decoding failed: \(error)")
        }
    }

    // MARK: ResponseVerdict

    // Every response is checked before its first byte is written: a 206 for the range asked for.
    let remote = RemoteFile(
        length: fourGiB, acceptsRanges: true, etag: "\"5f3c-1a2b3c4d5e6f\"",
        lastModified: "Tue, 14 Nov 2023 08:12:31 GMT", contentType: "video/mp4")
    let asked: Range<Int64> = 1_073_741_824..<1_140_850_688
    let head = ResponseHead(
        status: 206,
        headers: [
            ("Date", "Tue, 14 Nov 2023 09:00:00 GMT"),
            ("Server", "nginx"),
            ("Content-Type", "video/mp4"),
            ("Content-Length", "67108864"),
            ("Last-Modified", "Tue, 14 Nov 2023 08:12:31 GMT"),
            ("Connection", "keep-alive"),
            ("ETag", "\"5f3c-1a2b3c4d5e6f\""),
            ("Content-Range", "bytes 1073741824-1140850687/4294967296"),
            ("Accept-Ranges", "bytes"),
        ])
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    precondition(ResponseVerdict.check(head, asked: asked, remote: remote, now: now) == .accept)
    Benchmark("ResponseVerdict.check", configuration: configuration()) { benchmark in
        for _ in 0..<100 {
            blackHole(ResponseVerdict.check(head, asked: asked, remote: remote, now: now))
        }
    }

    // MARK: SHA256

    // --checksum hashes every byte written: 1 MiB per iteration, fed in 16 KiB chunks.
    let data = [UInt8]((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    Benchmark("SHA256.update", configuration: configuration()) { benchmark in
        var hash = SHA256()
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let end = min(offset + Int(chunk), buffer.count)
                hash.update(UnsafeRawBufferPointer(rebasing: buffer[offset..<end]))
                offset = end
            }
        }
        blackHole(hash)
    }

    // MARK: AES128CBC

    // An HLS segment decrypted as StreamParts.seal does: 16 MiB per iteration, in place, 1 MiB steps
    // through one cipher (throughput in MiB/s = 16 / p50 seconds). Decrypting the bytes again each
    // iteration costs the same: CBC decrypts any whole blocks.
    let segment = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 20, alignment: 4096)
    for index in segment.indices { segment[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
    Benchmark("AES128CBC.decryptInPlace", configuration: configuration()) { benchmark in
        var cipher = try AES128CBC(key: [UInt8](repeating: 7, count: 16), iv: [UInt8](repeating: 9, count: 16))
        benchmark.startMeasurement()
        for start in stride(from: 0, to: segment.count, by: 1 << 20) {
            try cipher.decryptInPlace(UnsafeMutableRawBufferPointer(rebasing: segment[start..<start + (1 << 20)]))
        }
        blackHole(segment[0])
    }
}

extension Int {
    fileprivate var toInt64: Int64 { Int64(self) }
}
