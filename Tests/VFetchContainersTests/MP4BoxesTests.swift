import Testing

@testable import VFetchContainers
@testable import VFetchCore

@Suite struct MP4BoxesTests {
    /// A box header: 32-bit size (or 1 and a 64-bit size after the type) and a type.
    private func box(_ type: String, size: UInt64, large: Bool = false) -> [UInt8] {
        let type = Array(type.utf8)
        if large {
            return [0, 0, 0, 1] + type + (0..<8).reversed().map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
        }
        return (0..<4).reversed().map { UInt8(truncatingIfNeeded: size >> (8 * $0)) } + type
    }

    /// A whole box of `size` bytes whose payload is filler.
    private func filled(_ type: String, size: Int) -> [UInt8] {
        box(type, size: UInt64(size)) + [UInt8](repeating: 0xAB, count: size - 8)
    }

    /// Reads from `bytes`, except where `missing` says the bytes are not present.
    private func reader(_ bytes: [UInt8], missing: [Range<Int64>] = []) -> (Int64, Int) -> [UInt8]? {
        { offset, count in
            let wanted = offset..<offset + Int64(count)
            guard wanted.upperBound <= Int64(bytes.count), !missing.contains(where: { $0.overlaps(wanted) }) else {
                return nil
            }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
    }

    @Test func walksThirtyTwoBitBoxes() {
        let file = filled("ftyp", size: 24) + filled("moov", size: 100) + filled("mdat", size: 1000)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(
            walk.boxes == [
                MP4Box(type: "ftyp", range: 0..<24), MP4Box(type: "moov", range: 24..<124),
                MP4Box(type: "mdat", range: 124..<1124),
            ])
        #expect(walk.stoppedAt == nil)
        #expect(MP4Boxes.moov(in: walk.boxes)?.range == 24..<124)
        #expect(MP4Boxes.isFaststart(walk.boxes) == true)
        #expect(!MP4Boxes.hasFragments(walk.boxes))
        #expect(MP4Boxes.looksLikeMP4(walk.boxes))
    }

    @Test func readsSixtyFourBitLargeSizes() {
        // An mdat over 4 GiB, told by its 16-byte header; only the headers are ever read.
        let mdatSize: UInt64 = 5 << 30
        let length = 24 + Int64(mdatSize) + 100
        var headers: [Int64: [UInt8]] = [0: filled("ftyp", size: 24), 24: box("mdat", size: mdatSize, large: true)]
        headers[24 + Int64(mdatSize)] = box("moov", size: 100)
        let walk = MP4Boxes.scan(length: length) { offset, count in
            for (start, bytes) in headers where offset >= start && offset + Int64(count) <= start + Int64(bytes.count) {
                return Array(bytes[Int(offset - start)..<Int(offset - start) + count])
            }
            return nil
        }
        #expect(walk.boxes.map(\.type) == ["ftyp", "mdat", "moov"])
        #expect(walk.boxes[1].range == 24..<24 + Int64(mdatSize))
        #expect(MP4Boxes.moov(in: walk.boxes)?.range == 24 + Int64(mdatSize)..<length)
        #expect(MP4Boxes.isFaststart(walk.boxes) == false)
        #expect(walk.stoppedAt == nil)
    }

    @Test func sizeZeroRunsToTheEndOfTheFile() {
        let file = filled("ftyp", size: 16) + box("mdat", size: 0) + [UInt8](repeating: 1, count: 500)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(walk.boxes == [MP4Box(type: "ftyp", range: 0..<16), MP4Box(type: "mdat", range: 16..<524)])
        #expect(walk.stoppedAt == nil)
    }

    @Test func stopsAtAMissingHeaderAndSaysWhere() {
        // Head present (ftyp, free, mdat header), mdat's body and the moov header missing.
        let file =
            filled("ftyp", size: 32) + filled("free", size: 8) + filled("mdat", size: 4000) + filled("moov", size: 300)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [48..<4340]))
        #expect(walk.boxes.map(\.type) == ["ftyp", "free", "mdat"])
        #expect(walk.stoppedAt == 4040)
        #expect(MP4Boxes.moov(in: walk.boxes) == nil)
        #expect(MP4Boxes.isFaststart(walk.boxes) == false)

        // With the tail present as well, the walk finds moov exactly, though mdat's body is missing.
        let headAndTail = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [48..<4040]))
        #expect(MP4Boxes.moov(in: headAndTail.boxes)?.range == 4040..<4340)
        #expect(headAndTail.stoppedAt == nil)
    }

    @Test func stopsAtAMissingLargeSize() {
        let file = filled("ftyp", size: 16) + box("mdat", size: 40, large: true) + [UInt8](repeating: 0, count: 24)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file, missing: [24..<32]))
        #expect(walk.boxes.map(\.type) == ["ftyp"])
        #expect(walk.stoppedAt == 16)
    }

    @Test func truncatedOrImpossibleHeadersEndTheWalk() {
        let ftyp = filled("ftyp", size: 16)
        // A box claiming more bytes than the file has.
        let tooLong = ftyp + box("moov", size: 1000) + [UInt8](repeating: 0, count: 100)
        let long = MP4Boxes.scan(length: Int64(tooLong.count), read: reader(tooLong))
        #expect(long.boxes.map(\.type) == ["ftyp"])
        #expect(long.stoppedAt == nil)
        // A size smaller than its header.
        let tiny = ftyp + box("free", size: 4) + [0, 0, 0, 0]
        #expect(MP4Boxes.scan(length: Int64(tiny.count), read: reader(tiny)).boxes.map(\.type) == ["ftyp"])
        // A 64-bit size smaller than its 16-byte header.
        let small = ftyp + box("mdat", size: 8, large: true)
        #expect(MP4Boxes.scan(length: Int64(small.count), read: reader(small)).boxes.map(\.type) == ["ftyp"])
        // Fewer than 8 bytes left: no header fits.
        let stub = ftyp + [0, 0, 0]
        let walk = MP4Boxes.scan(length: Int64(stub.count), read: reader(stub))
        #expect(walk.boxes.map(\.type) == ["ftyp"])
        #expect(walk.stoppedAt == nil)
        // A type that is not four printable characters: not ISO BMFF.
        let garbage: [UInt8] = [0, 0, 0, 16, 0x01, 0xFF, 0x80, 0x00] + [UInt8](repeating: 0, count: 8)
        let notMP4 = MP4Boxes.scan(length: 16, read: reader(garbage))
        #expect(notMP4.boxes.isEmpty)
        #expect(!MP4Boxes.looksLikeMP4(notMP4.boxes))
        #expect(MP4Boxes.isFaststart(notMP4.boxes) == nil)
    }

    @Test func fragmentedFilesHaveMoofBoxes() {
        let file =
            filled("ftyp", size: 24) + filled("moov", size: 64) + filled("moof", size: 40) + filled("mdat", size: 200)
            + filled("moof", size: 40) + filled("mdat", size: 200) + filled("mfra", size: 16)
        let walk = MP4Boxes.scan(length: Int64(file.count), read: reader(file))
        #expect(walk.boxes.map(\.type) == ["ftyp", "moov", "moof", "mdat", "moof", "mdat", "mfra"])
        #expect(MP4Boxes.hasFragments(walk.boxes))
        #expect(MP4Boxes.isFaststart(walk.boxes) == true)
    }

    @Test func walksChildrenOfABox() {
        let moov = box("moov", size: 8 + 16 + 24) + filled("mvhd", size: 16) + filled("mvex", size: 24)
        let walk = MP4Boxes.scan(in: 8..<Int64(moov.count), read: reader(moov))
        #expect(walk.boxes == [MP4Box(type: "mvhd", range: 8..<24), MP4Box(type: "mvex", range: 24..<48)])
    }

    @Test func emptyFileHasNoBoxes() {
        let walk = MP4Boxes.scan(length: 0, read: reader([]))
        #expect(walk.boxes.isEmpty)
        #expect(walk.stoppedAt == nil)
        let missing = MP4Boxes.scan(length: 100) { _, _ in nil }
        #expect(missing.boxes.isEmpty)
        #expect(missing.stoppedAt == 0)
    }

    // MARK: Fragmented movies

    /// `value` as `count` big-endian bytes.
    private func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// A box around `payload`.
    private func wrap(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        box(type, size: UInt64(8 + payload.count)) + payload
    }

    /// A full box: version, 24 bits of flags, then its fields.
    private func full(_ type: String, version: UInt8 = 0, flags: UInt64 = 0, _ fields: [UInt8]) -> [UInt8] {
        wrap(type, [version] + bigEndian(flags, 3) + fields)
    }

    /// A track of a fragmented movie: its ID, `mdhd` timescale and `trex` default sample duration.
    private struct Track {
        var id: UInt64
        var timescale: UInt64
        var defaultDuration: UInt64 = 0
    }

    /// A `moov` with `mvex`: `mvhd` (timescale 1000, duration 0, as ffmpeg's `empty_moov`
    /// writes), a `trak` per track, and `mehd` when given (in the movie's timescale).
    private func fragmentedMoov(_ tracks: [Track], mehd: UInt64? = nil, mvex: Bool = true) -> [UInt8] {
        let mvhd = full("mvhd", [UInt8](repeating: 0, count: 8) + bigEndian(1000, 4) + [UInt8](repeating: 0, count: 84))
        let traks = tracks.flatMap { track in
            let tkhd = full(
                "tkhd", flags: 3, bigEndian(0, 8) + bigEndian(track.id, 4) + [UInt8](repeating: 0, count: 68))
            // Version 1 mdhd: 64-bit times, the timescale after them.
            let mdhd = full("mdhd", version: 1, bigEndian(0, 16) + bigEndian(track.timescale, 4) + bigEndian(0, 12))
            return wrap("trak", tkhd + wrap("mdia", mdhd + filled("hdlr", size: 33)))
        }
        let trexes = tracks.flatMap {
            full("trex", bigEndian($0.id, 4) + bigEndian(1, 4) + bigEndian($0.defaultDuration, 4) + bigEndian(0, 8))
        }
        let extends = wrap("mvex", (mehd.map { full("mehd", version: 1, bigEndian($0, 8)) } ?? []) + trexes)
        return wrap("moov", mvhd + traks + (mvex ? extends : []))
    }

    /// One track fragment: `tfdt` (64-bit, or none), and samples whose durations are in the
    /// `trun` (`durations`), or `count` samples taking `tfhd`'s default duration, or `trex`'s.
    private struct TrackFragment {
        var id: UInt64
        var start: UInt64?
        var durations: [UInt64]? = nil
        var count: UInt64 = 0
        var defaultDuration: UInt64? = nil
    }

    private func moof(_ trafs: [TrackFragment]) -> [UInt8] {
        let parts = trafs.flatMap { traf in
            // default-base-is-moof, and a default sample duration when given.
            let tfhd = full(
                "tfhd", flags: 0x02_0000 | (traf.defaultDuration == nil ? 0 : 0x08),
                bigEndian(traf.id, 4) + (traf.defaultDuration.map { bigEndian($0, 4) } ?? []))
            let tfdt = traf.start.map { full("tfdt", version: 1, bigEndian($0, 8)) } ?? []
            let trun: [UInt8]
            if let durations = traf.durations {
                // Data offset, then a duration and a size per sample.
                trun = full(
                    "trun", flags: 0x301,
                    bigEndian(UInt64(durations.count), 4) + bigEndian(0, 4)
                        + durations.flatMap { bigEndian($0, 4) + bigEndian(100, 4) })
            } else {
                let sizes = (0..<traf.count).flatMap { _ in bigEndian(100, 4) }
                trun = full("trun", flags: 0x201, bigEndian(traf.count, 4) + bigEndian(0, 4) + sizes)
            }
            return wrap("traf", tfhd + tfdt + trun)
        }
        return wrap("moof", full("mfhd", bigEndian(1, 4)) + parts)
    }

    /// `mfra` with a `tfra` (version 1, 1-byte numbers) listing `moofs` (time, offset) for `track`,
    /// and the `mfro` that ends it.
    private func mfra(track: UInt64, _ moofs: [(time: UInt64, offset: Int)]) -> [UInt8] {
        let entries: [UInt8] = moofs.flatMap { bigEndian($0.time, 8) + bigEndian(UInt64($0.offset), 8) + [1, 1, 1] }
        let tfra = full(
            "tfra", version: 1, bigEndian(track, 4) + bigEndian(0, 4) + bigEndian(UInt64(moofs.count), 4) + entries)
        let size = 8 + tfra.count + 16
        return wrap("mfra", tfra + full("mfro", bigEndian(UInt64(size), 4)))
    }

    /// A fragmented movie of three fragments, video (12800 ticks/s, 25 fps) and audio (48 kHz,
    /// 1024 samples per frame): fragment 3 ends the video at 3 s, the audio at 145408/48000 s.
    /// Durations come from the `trun`, `tfhd` and `trex` in turn. With `mfra`, the random access
    /// table lists only the first `listed` fragments.
    private func fragmentedMovie(mfra listed: Int? = nil) -> (bytes: [UInt8], moofs: [Range<Int64>]) {
        let tracks = [Track(id: 1, timescale: 12800), Track(id: 2, timescale: 48000, defaultDuration: 1024)]
        var file = filled("ftyp", size: 24) + fragmentedMoov(tracks)
        var moofs: [Range<Int64>] = []
        let fragments = [
            moof([
                TrackFragment(id: 1, start: 0, durations: Array(repeating: 512, count: 25)),
                TrackFragment(id: 2, start: 0, count: 47),
            ]),
            moof([
                TrackFragment(id: 1, start: 12800, count: 25, defaultDuration: 512),
                TrackFragment(id: 2, start: 48128, count: 47),
            ]),
            moof([
                TrackFragment(id: 1, start: 25600, durations: Array(repeating: 512, count: 25)),
                TrackFragment(id: 2, start: 96256, durations: Array(repeating: 1024, count: 48)),
            ]),
        ]
        for fragment in fragments {
            moofs.append(Int64(file.count)..<Int64(file.count + fragment.count))
            file += fragment + filled("mdat", size: 3000)
        }
        if let listed {
            file += mfra(track: 1, moofs.prefix(listed).enumerated().map { (UInt64($0) * 12800, Int($1.lowerBound)) })
        }
        return (file, moofs)
    }

    @Test func fragmentedMovieRunsToTheEndOfItsLastFragment() {
        let movie = fragmentedMovie()
        let length = Int64(movie.bytes.count)
        // Every header is present: the walk from the start finds the last fragment.
        #expect(MP4Boxes.movieDuration(length: length, read: reader(movie.bytes)) == .seconds(145408.0 / 48000))
    }

    @Test func fragmentDurationsComeFromTrunThenTfhdThenTrex() throws {
        let tracks = [Track(id: 7, timescale: 1000, defaultDuration: 40)]
        let moov = fragmentedMoov(tracks)
        let movie = try #require(
            FragmentedMovie(moov: MP4Box(type: "moov", range: 0..<Int64(moov.count)), read: reader(moov)))
        #expect(movie.tracks == [7: FragmentedMovie.Track(timescale: 1000, defaultSampleDuration: 40)])
        #expect(movie.declaredSeconds == nil)
        func end(_ fragment: TrackFragment) -> Double? {
            let bytes = moof([fragment])
            return movie.endSeconds(of: MP4Box(type: "moof", range: 0..<Int64(bytes.count)), read: reader(bytes))
        }
        #expect(end(TrackFragment(id: 7, start: 5000, durations: [10, 20, 30])) == 5.06)
        #expect(end(TrackFragment(id: 7, start: 5000, count: 3, defaultDuration: 100)) == 5.3)
        #expect(end(TrackFragment(id: 7, start: 5000, count: 3)) == 5.12)
        // 64-bit decode times.
        #expect(end(TrackFragment(id: 7, start: 1 << 40, count: 0)) == Double(1 << 40) / 1000)
        // No tfdt, or a track moov does not know: no end time.
        #expect(end(TrackFragment(id: 7, start: nil, count: 3)) == nil)
        #expect(end(TrackFragment(id: 8, start: 0, count: 3)) == nil)
        // No sample durations anywhere.
        let bare = fragmentedMoov([Track(id: 7, timescale: 1000)])
        let bareMovie = try #require(
            FragmentedMovie(moov: MP4Box(type: "moov", range: 0..<Int64(bare.count)), read: reader(bare)))
        let bytes = moof([TrackFragment(id: 7, start: 0, count: 3)])
        let moofBox = MP4Box(type: "moof", range: 0..<Int64(bytes.count))
        #expect(bareMovie.endSeconds(of: moofBox, read: reader(bytes)) == nil)
    }

    @Test func mehdSaysHowLongTheMovieRunsWithoutAnyFragment() {
        // moov alone: the fragments are not present at all.
        let file = filled("ftyp", size: 24) + fragmentedMoov([Track(id: 1, timescale: 90000)], mehd: 300_021)
        let length = Int64(file.count) + 40_000_000
        #expect(MP4Boxes.movieDuration(length: length, read: reader(file)) == .seconds(300.021))
    }

    @Test func aMoovWithoutMvexIsNotFragmented() {
        let file =
            filled("ftyp", size: 24) + fragmentedMoov([Track(id: 1, timescale: 1000)], mvex: false)
            + filled("mdat", size: 100)
        #expect(MP4Boxes.movieDuration(length: Int64(file.count), read: reader(file)) == .notFragmented)
        // No moov present: nothing says it is fragmented.
        #expect(MP4Boxes.movieDuration(length: 1000, read: reader(filled("ftyp", size: 24))) == .notFragmented)
    }

    @Test func headAndTailFindTheLastFragmentThroughMfra() {
        let movie = fragmentedMovie(mfra: 3)
        let length = Int64(movie.bytes.count)
        // The middle fragment is missing, moof header and all: the walk from the start stops there.
        let middle = movie.moofs[1].lowerBound..<movie.moofs[2].lowerBound
        let walk = MP4Boxes.scan(length: length, read: reader(movie.bytes, missing: [middle]))
        #expect(walk.stoppedAt == middle.lowerBound)
        #expect(
            MP4Boxes.lastMovieFragment(length: length, read: reader(movie.bytes, missing: [middle]))
                == MP4Box(type: "moof", range: movie.moofs[2]))
        #expect(
            MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: [middle]))
                == .seconds(145408.0 / 48000))
    }

    @Test func fragmentsAfterTheLastRandomAccessPointAreWalkedTo() {
        // mfra lists fragments 1 and 2 only; fragment 3 follows fragment 2.
        let movie = fragmentedMovie(mfra: 2)
        let length = Int64(movie.bytes.count)
        // The first fragment's mdat is missing, header and all: the walk from the start stops there.
        let missing = [movie.moofs[0].upperBound..<movie.moofs[1].lowerBound]
        #expect(
            MP4Boxes.lastMovieFragment(length: length, read: reader(movie.bytes, missing: missing))
                == MP4Box(type: "moof", range: movie.moofs[2]))
        #expect(
            MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: missing))
                == .seconds(145408.0 / 48000))
        // With fragment 3's moof missing, the end cannot be known.
        let withoutLast = missing + [movie.moofs[2]]
        #expect(MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: withoutLast)) == .unknown)
    }

    @Test(arguments: [false, true])
    func withoutTheTailTheDurationIsUnknown(hasMfra: Bool) {
        let movie = fragmentedMovie(mfra: hasMfra ? 3 : nil)
        let length = Int64(movie.bytes.count)
        // Only the head: moov and the first fragment.
        let head = [movie.moofs[1].lowerBound..<length]
        #expect(MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: head)) == .unknown)
        // Head and tail, but without mfra nothing leads to the last fragment.
        let middle = [movie.moofs[1].lowerBound..<movie.moofs[2].lowerBound]
        #expect(
            MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: middle))
                == (hasMfra ? .seconds(145408.0 / 48000) : .unknown))
    }

    @Test func damagedMfraLeadsNowhere() {
        var movie = fragmentedMovie(mfra: 3)
        let length = Int64(movie.bytes.count)
        let middle = [movie.moofs[1].lowerBound..<movie.moofs[2].lowerBound]
        // The mfro's size no longer matches the mfra's.
        movie.bytes[movie.bytes.count - 1] &+= 1
        #expect(MP4Boxes.lastMovieFragment(length: length, read: reader(movie.bytes, missing: middle)) == nil)
        #expect(MP4Boxes.movieDuration(length: length, read: reader(movie.bytes, missing: middle)) == .unknown)
    }
}
