import Foundation
import VFetchCore

/// What a stream download has kept so far, beside its parts, so that a run killed at any moment resumes
/// without fetching a kept segment again.
///
/// It is bound to the exact list of fetches (the `fingerprint` of every URL and byte range, in order):
/// when the playlist changed, or another variant was chosen, nothing is reused. Each kept fetch records its
/// size and a tag of its bytes, checked against the part on disk before it is trusted. A fetch still
/// arriving is recorded at checkpoints as `Held`: the bytes of it already synced, so that a kill costs
/// only what arrived since.
///
/// On disk it is a JSON header line, then one line per kept fetch (`fetch size tag`), appended as each
/// fetch is kept, and one per held fetch at each checkpoint (`h fetch length validator runs`, the latest
/// counting): a segment costs a few short appends, however long the stream. A torn last line (a crash
/// mid-append) is ignored.
package struct StreamManifest: Equatable, Sendable {
    /// Version 2 added held fetches; a version 1 manifest reads as one with none.
    package static let currentVersion = 2
    /// The largest manifest read back: a million segments fit.
    package static let maxEncodedSize = 64 << 20

    package struct Kept: Equatable, Sendable {
        package var fetch: Int
        package var size: Int64
        package var tag: UInt32

        package init(fetch: Int, size: Int64, tag: UInt32) {
            self.fetch = fetch
            self.size = size
            self.tag = tag
        }
    }

    /// The bytes of a fetch not kept yet that a checkpoint found synced to its part, each run of them with
    /// the `BlockTag` of its sampled bytes (`BlockTag.sampled`). They came with `validator` (a strong ETag,
    /// else `Last-Modified`): the rest is asked for with it as `If-Range`, so that another version of the
    /// segment is never spliced in.
    package struct Held: Equatable, Sendable {
        package struct Run: Equatable, Sendable {
            package var range: Range<Int64>
            package var tag: UInt32

            package init(range: Range<Int64>, tag: UInt32) {
                self.range = range
                self.tag = tag
            }
        }

        package var fetch: Int
        /// The fetch's whole length.
        package var length: Int64
        package var validator: String
        /// Sorted, disjoint, each within `0..<length` and not empty.
        package var runs: [Run]

        package init(fetch: Int, length: Int64, validator: String, runs: [Run]) {
            self.fetch = fetch
            self.length = length
            self.validator = validator
            self.runs = runs
        }

        /// The bytes held, as a set.
        package var bytes: ByteRangeSet { ByteRangeSet(runs.map(\.range)) }
    }

    package var version: Int
    /// The URL the user asked for.
    package var source: String
    /// SHA-256 over the fetches' URLs and ranges, in order (`fingerprint(of:)`).
    package var fingerprint: String
    package var fetches: Int
    package var kept: [Kept]
    /// Fetches not kept, by fetch: what of each the latest checkpoint found on disk.
    package var held: [Int: Held]

    package init(source: String, fingerprint: String, fetches: Int, kept: [Kept] = [], held: [Int: Held] = [:]) {
        version = Self.currentVersion
        self.source = source
        self.fingerprint = fingerprint
        self.fetches = fetches
        self.kept = kept
        self.held = held
    }

    /// Identifies a list of fetches: two lists with the same fingerprint name the same bytes in the same order.
    package static func fingerprint(of resources: [MediaResource]) -> String {
        var hash = SHA256()
        for resource in resources {
            let range = resource.byteRange.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "all"
            hash.update(Array("\(resource.url.absoluteString) \(range)\n".utf8))
        }
        return hash.finalize()
    }

    private struct Header: Codable {
        var version: Int
        var source: String
        var fingerprint: String
        var fetches: Int
    }

    /// The whole manifest: the header line, a line per kept fetch, then one per held fetch.
    package func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let header = Header(version: version, source: source, fingerprint: fingerprint, fetches: fetches)
        var bytes = Array((try? encoder.encode(header)) ?? Data()) + [0x0A]
        for entry in kept { bytes += Self.line(entry) }
        for fetch in held.keys.sorted() { bytes += Self.line(held[fetch]!) }
        return bytes
    }

    /// The line that records one kept fetch, appended to an encoded manifest.
    package static func line(_ entry: Kept) -> [UInt8] { Array("\(entry.fetch) \(entry.size) \(entry.tag)\n".utf8) }

    /// Whether a validator can be recorded and read back: printable ASCII, at most 512 bytes (an ETag may be
    /// longer or hold other bytes; such a fetch is not recorded, and starts over after a kill).
    package static func canRecord(validator: String) -> Bool {
        !validator.isEmpty && validator.utf8.count <= 512 && validator.utf8.allSatisfy { (0x20..<0x7F).contains($0) }
    }

    /// The line that withdraws what was held of `fetch` (it started over): `h fetch`.
    package static func forgetting(_ fetch: Int) -> [UInt8] { Array("h \(fetch)\n".utf8) }

    /// The line that records what is held of a fetch. The validator is hex (a date has spaces).
    package static func line(_ entry: Held) -> [UInt8] {
        let validator = entry.validator.utf8.map { String(format: "%02x", $0) }.joined()
        let runs = entry.runs.map { "\($0.range.lowerBound)-\($0.range.upperBound)-\($0.tag)" }.joined(separator: ",")
        return Array("h \(entry.fetch) \(entry.length) \(validator) \(runs)\n".utf8)
    }

    /// Reads a manifest; nil when its header is damaged, too large or of another version. Entry lines stop at
    /// the first that is torn or impossible (a fetch it cannot have, a negative size).
    package static func decode(_ bytes: [UInt8]) -> StreamManifest? {
        guard bytes.count <= maxEncodedSize, let newline = bytes.firstIndex(of: 0x0A),
            let header = try? JSONDecoder().decode(Header.self, from: Data(bytes[..<newline])),
            (1...currentVersion).contains(header.version), header.fetches >= 0
        else { return nil }
        var manifest = StreamManifest(source: header.source, fingerprint: header.fingerprint, fetches: header.fetches)
        // Only whole lines: the last may have been cut by a crash.
        let body = bytes[(newline + 1)...]
        let complete = body.lastIndex(of: 0x0A).map { body[..<$0] } ?? []
        var keptFetches = Set<Int>()
        for line in complete.split(separator: 0x0A) {
            let fields = line.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
            if fields.first == "h" {
                // What cannot be read is not held: the fetch starts over, and the lines after it still count.
                if fields.count == 2, let fetch = Int(fields[1]) {
                    manifest.held[fetch] = nil
                } else if let held = Self.held(fields, fetches: header.fetches), !keptFetches.contains(held.fetch) {
                    manifest.held[held.fetch] = held
                }
                continue
            }
            guard fields.count == 3, let fetch = Int(fields[0]), let size = Int64(fields[1]), let tag = UInt32(fields[2]),
                (0..<header.fetches).contains(fetch), size >= 0
            else { break }
            manifest.kept.append(Kept(fetch: fetch, size: size, tag: tag))
            keptFetches.insert(fetch)
            manifest.held[fetch] = nil
        }
        return manifest
    }

    /// A held line's fields, or nil when any is impossible: runs out of order, overlapping, empty or past the length.
    private static func held(_ fields: [String], fetches: Int) -> Held? {
        guard fields.count == 5, let fetch = Int(fields[1]), (0..<fetches).contains(fetch), let length = Int64(fields[2]), length > 0,
            let validator = hexText(fields[3]), !validator.isEmpty
        else { return nil }
        var runs: [Held.Run] = []
        for run in fields[4].split(separator: ",") {
            let numbers = run.split(separator: "-", omittingEmptySubsequences: false)
            guard numbers.count == 3, let lower = Int64(numbers[0]), let upper = Int64(numbers[1]), let tag = UInt32(numbers[2]),
                lower >= (runs.last?.range.upperBound ?? 0), lower < upper, upper <= length
            else { return nil }
            runs.append(Held.Run(range: lower..<upper, tag: tag))
        }
        guard !runs.isEmpty else { return nil }
        return Held(fetch: fetch, length: length, validator: validator, runs: runs)
    }

    /// Text written as hex digits, two per byte; nil for anything else or for bytes that are not UTF-8 text.
    private static func hexText(_ hex: String) -> String? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0, digits.count <= 2 * 512 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return canRecord(validator: text) ? text : nil
    }
}
