/// How long a fragmented MP4 runs, as far as the present bytes of the file tell.
///
/// The `moov` of a fragmented file says little about its length: ffmpeg's `empty_moov` writes a
/// duration of 0, plain `frag_keyframe` the first fragment's. The length is in `mvex/mehd` when the
/// writer knew it, else it is where the last movie fragment ends: its `tfdt` (the decoding time of
/// its first sample) plus the durations of its samples, per track.
package enum MP4MovieDuration: Equatable, Sendable {
    /// No `mvex` in a present `moov`: every sample is in `moov`, whose duration holds.
    case notFragmented
    /// Fragmented, and the present bytes say how long the movie runs.
    case seconds(Double)
    /// Fragmented, but the bytes that would say how long it runs are not present.
    case unknown
}

extension MP4Boxes {
    /// How long a fragmented MP4 runs, from `mvex/mehd`, else from the end of its last `moof`.
    ///
    /// The last `moof` is the last one a walk from offset 0 finds when every top-level header is
    /// present; with only the head and the tail present, the one the movie fragment random access
    /// box (`mfra`, found through the `mfro` that ends the file) leads to. Times count from 0, the
    /// start of the media timeline. `read` is as for ``scan(length:read:)``.
    package static func movieDuration(length: Int64, read: (Int64, Int) -> [UInt8]?) -> MP4MovieDuration {
        let walk = scan(length: length, read: read)
        guard let moov = moov(in: walk.boxes), let movie = FragmentedMovie(moov: moov, read: read) else {
            return .notFragmented
        }
        if let seconds = movie.declaredSeconds { return .seconds(seconds) }
        let walkedToTheEnd = walk.stoppedAt == nil && walk.boxes.last?.range.upperBound == length
        let last =
            walkedToTheEnd
            ? walk.boxes.last(where: { $0.type == "moof" }) : lastMovieFragment(length: length, read: read)
        guard let last, let end = movie.endSeconds(of: last, read: read) else { return .unknown }
        return .seconds(end)
    }

    /// The last `moof` of a file that ends with `mfra`, when the bytes from the last fragment the
    /// `mfra` lists to the end of the file are present; nil otherwise.
    ///
    /// `mfra` lists random access points only: the walk from the last one listed finds any later fragment.
    package static func lastMovieFragment(length: Int64, read: (Int64, Int) -> [UInt8]?) -> MP4Box? {
        // mfro: size 16, "mfro", version and flags, then the size of the whole mfra box.
        guard length >= 16, let mfro = read(length - 16, 16), fourCharacterCode(mfro[4..<8]) == "mfro",
            bigEndian(mfro[0..<4]) == 16
        else { return nil }
        let mfraSize = Int64(bigEndian(mfro[12..<16]))
        let mfraStart = length - mfraSize
        guard mfraSize >= 24, mfraStart >= 0, let header = read(mfraStart, 8),
            fourCharacterCode(header[4..<8]) == "mfra", Int64(bigEndian(header[0..<4])) == mfraSize
        else { return nil }
        let tables = scan(in: mfraStart + 8..<length, read: read).boxes.filter { $0.type == "tfra" }
        guard let latest = tables.compactMap({ lastRandomAccessFragment($0, read: read) }).max(),
            latest >= 0, latest < mfraStart
        else { return nil }
        let walk = scan(in: latest..<mfraStart, read: read)
        guard walk.stoppedAt == nil, walk.boxes.first?.type == "moof", walk.boxes.last?.range.upperBound == mfraStart
        else { return nil }
        return walk.boxes.last { $0.type == "moof" }
    }

    /// The `moof` offset of a `tfra` box's last entry: its entries are in time order.
    private static func lastRandomAccessFragment(_ tfra: MP4Box, read: (Int64, Int) -> [UInt8]?) -> Int64? {
        // Full box header, track_ID, 26 reserved bits and three 2-bit field sizes, entry count.
        guard let start = contentStart(of: tfra, read: read), let fields = read(start, 16) else { return nil }
        let wide = fields[0] == 1
        let sizes = bigEndian(fields[8..<12])
        let count = Int64(bigEndian(fields[12..<16]))
        let numbers = Int64((sizes >> 4 & 3) + (sizes >> 2 & 3) + (sizes & 3) + 3)
        let entrySize = (wide ? 16 : 8) + numbers
        let entry = start + 16 + (count - 1) * entrySize
        guard count > 0, entry + entrySize <= tfra.range.upperBound else { return nil }
        guard let offset = wide ? read(entry + 8, 8) : read(entry + 4, 4) else { return nil }
        return Int64(exactly: bigEndian(offset[...]))
    }

    /// Where a box's contents start, past its 8- or 16-byte header; nil when the header is not present.
    static func contentStart(of box: MP4Box, read: (Int64, Int) -> [UInt8]?) -> Int64? {
        guard let size = read(box.range.lowerBound, 4) else { return nil }
        return box.range.lowerBound + (size == [0, 0, 0, 1] ? 16 : 8)
    }

    /// A box's contents, past its header, when they are all present. The boxes read here are small
    /// (a `trun` of a long fragment reaches a few MiB); a larger size is a damaged or hostile file.
    static func contents(of box: MP4Box, read: (Int64, Int) -> [UInt8]?) -> [UInt8]? {
        guard let start = contentStart(of: box, read: read), let count = Int(exactly: box.range.upperBound - start),
            count >= 0, count <= 16 << 20
        else { return nil }
        return read(start, count)
    }

    /// The boxes inside a container box, as far as their headers are present.
    static func children(of box: MP4Box, read: (Int64, Int) -> [UInt8]?) -> [MP4Box] {
        guard let start = contentStart(of: box, read: read), start <= box.range.upperBound else { return [] }
        return scan(in: start..<box.range.upperBound, read: read).boxes
    }
}

/// What a fragmented movie's `moov` says about time: each track's timescale and default sample
/// duration, and the whole movie's duration when `mvex/mehd` states it.
package struct FragmentedMovie: Equatable, Sendable {
    package struct Track: Equatable, Sendable {
        /// Ticks per second (`mdhd`).
        package var timescale: UInt64
        /// The sample duration fragments fall back on (`trex`); 0 when none is given.
        package var defaultSampleDuration: UInt64
    }

    /// By `track_ID`.
    package var tracks: [UInt64: Track]
    /// `mehd`'s fragment duration in seconds, when present and not 0.
    package var declaredSeconds: Double?

    /// Reads `moov`; nil unless it holds `mvex` (movie extends): the file is not fragmented.
    package init?(moov: MP4Box, read: (Int64, Int) -> [UInt8]?) {
        let children = MP4Boxes.children(of: moov, read: read)
        guard let mvex = children.first(where: { $0.type == "mvex" }) else { return nil }
        var timescales: [UInt64: UInt64] = [:]
        for trak in children where trak.type == "trak" {
            let parts = MP4Boxes.children(of: trak, read: read)
            guard
                let tkhd = parts.first(where: { $0.type == "tkhd" }).flatMap({ MP4Boxes.contents(of: $0, read: read) }),
                let id = FullBox(tkhd)?.field(at: tkhd[0] == 1 ? 16 : 8, size: 4),
                let mdia = parts.first(where: { $0.type == "mdia" }),
                let mdhd = MP4Boxes.children(of: mdia, read: read).first(where: { $0.type == "mdhd" })
                    .flatMap({ MP4Boxes.contents(of: $0, read: read) }),
                let timescale = FullBox(mdhd)?.field(at: mdhd[0] == 1 ? 16 : 8, size: 4), timescale > 0
            else { continue }
            timescales[id] = timescale
        }
        var defaults: [UInt64: UInt64] = [:]
        var declared: UInt64?
        for box in MP4Boxes.children(of: mvex, read: read) {
            guard let contents = MP4Boxes.contents(of: box, read: read), let full = FullBox(contents) else { continue }
            switch box.type {
            case "trex":
                if let id = full.field(at: 0, size: 4), let duration = full.field(at: 8, size: 4) {
                    defaults[id] = duration
                }
            case "mehd": declared = full.field(at: 0, size: full.version == 1 ? 8 : 4)
            default: break
            }
        }
        tracks = timescales.mapValues { Track(timescale: $0, defaultSampleDuration: 0) }
        for (id, duration) in defaults where tracks[id] != nil { tracks[id]?.defaultSampleDuration = duration }
        // mehd counts in the movie's timescale (mvhd).
        let mvhd = children.first { $0.type == "mvhd" }.flatMap { MP4Boxes.contents(of: $0, read: read) }
        if let declared, declared > 0, let mvhd,
            let movieScale = FullBox(mvhd)?.field(at: mvhd[0] == 1 ? 16 : 8, size: 4), movieScale > 0
        {
            declaredSeconds = Double(declared) / Double(movieScale)
        }
    }

    /// Seconds from the start of the media timeline to the end of the latest track in `moof`: per
    /// track fragment, `tfdt` plus its samples' durations (from `trun`, else `tfhd`, else `trex`).
    /// nil when a track fragment has no `tfdt`, an unknown track or unknown sample durations, or
    /// when the box is not all present.
    package func endSeconds(of moof: MP4Box, read: (Int64, Int) -> [UInt8]?) -> Double? {
        var end: Double?
        for traf in MP4Boxes.children(of: moof, read: read) where traf.type == "traf" {
            var trackID: UInt64?
            var defaultDuration: UInt64?
            var start: UInt64?
            // Sums in Double: exact to 2^53 ticks, and a damaged file cannot overflow them.
            var ticks: Double = 0
            var samplesWithoutDuration: Double = 0
            for box in MP4Boxes.children(of: traf, read: read) {
                guard ["tfhd", "tfdt", "trun"].contains(box.type) else { continue }
                guard let contents = MP4Boxes.contents(of: box, read: read), let full = FullBox(contents) else {
                    return nil
                }
                switch box.type {
                case "tfhd":
                    trackID = full.field(at: 0, size: 4)
                    // Optional fields: base data offset (8), sample description index (4), then the duration.
                    if full.flags & 0x08 != 0 {
                        let at = 4 + (full.flags & 0x01 != 0 ? 8 : 0) + (full.flags & 0x02 != 0 ? 4 : 0)
                        defaultDuration = full.field(at: at, size: 4)
                    }
                case "tfdt": start = full.field(at: 0, size: full.version == 1 ? 8 : 4)
                default:
                    guard let run = TrackRun(full) else { return nil }
                    if let sum = run.durations { ticks += sum } else { samplesWithoutDuration += Double(run.count) }
                }
            }
            guard let trackID, let track = tracks[trackID], let start else { return nil }
            if samplesWithoutDuration > 0 {
                let duration = defaultDuration ?? track.defaultSampleDuration
                guard duration > 0 else { return nil }
                ticks += samplesWithoutDuration * Double(duration)
            }
            let seconds = (Double(start) + ticks) / Double(track.timescale)
            end = max(end ?? seconds, seconds)
        }
        return end
    }
}

/// A track fragment run (`trun`): its sample count and, when each sample states it, the sum of their durations.
private struct TrackRun {
    var count: UInt64
    var durations: Double?

    init?(_ full: FullBox) {
        guard let count = full.field(at: 0, size: 4) else { return nil }
        self.count = count
        guard full.flags & 0x100 != 0 else { return }
        // Optional data offset and first sample flags, then per sample: duration, size, flags,
        // composition time offset, each 4 bytes when its flag is set.
        let first = 4 + (full.flags & 0x01 != 0 ? 4 : 0) + (full.flags & 0x04 != 0 ? 4 : 0)
        let stride = [0x100, 0x200, 0x400, 0x800].filter { full.flags & $0 != 0 }.count * 4
        guard full.fields.count >= first + Int(count) * stride else { return nil }
        var sum: Double = 0
        for sample in 0..<Int(count) {
            sum += Double(full.field(at: first + sample * stride, size: 4) ?? 0)
        }
        durations = sum
    }
}

/// The contents of a "full box": a version byte and 24 bits of flags, then the box's fields.
private struct FullBox {
    var version: UInt8
    var flags: Int
    var fields: ArraySlice<UInt8>

    init?(_ contents: [UInt8]) {
        guard contents.count >= 4 else { return nil }
        version = contents[0]
        flags = Int(contents[1]) << 16 | Int(contents[2]) << 8 | Int(contents[3])
        fields = contents[4...]
    }

    /// The big-endian unsigned integer of `size` bytes at `offset` from the start of the fields.
    func field(at offset: Int, size: Int) -> UInt64? {
        let start = fields.startIndex + offset
        guard offset >= 0, start + size <= fields.endIndex else { return nil }
        return fields[start..<start + size].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
