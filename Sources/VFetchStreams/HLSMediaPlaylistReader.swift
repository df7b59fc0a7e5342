import Foundation

/// Reads a media playlist line by line into its segments.
///
/// Tags before a URI line describe that one segment (`EXTINF`, `EXT-X-BYTERANGE`,
/// `EXT-X-DISCONTINUITY`, `EXT-X-GAP`); `EXT-X-KEY` and `EXT-X-MAP` hold until the next of their
/// kind. A segment marked `EXT-X-GAP` is left out, and the one after it marked as a discontinuity:
/// a gap has no media to fetch (a client must not load it), and the model has no place for a
/// segment without bytes; sequence numbers and the list's duration still count it.
///
/// Lenient where hls.js and ffmpeg are and the meaning is clear: a line that is neither a tag nor the
/// URI of an `EXTINF` (stray text between segments) is ignored; a live list's last `EXTINF` whose URI
/// is not written yet is dropped; an IPTV `#EXTINF:-1 tvg-id="…",Name` is an entry of unknown length;
/// `EXT-X-MEDIA-SEQUENCE` may be negative. Strict where it is not: a URI that has a segment's tags but
/// no `EXTINF`, two `EXTINF`s in a row, a finished list that ends in an `EXTINF`.
///
/// LL-HLS: the `EXT-X-PART`s before a segment's URI are its parts; those after the last URI are the
/// parts of the segment still being written (`SegmentList.partial`). Preload hints, rendition reports
/// and server control say nothing a recording needs.
struct HLSMediaPlaylistReader {
    let url: URL
    private var segments: [MediaSegment] = []
    /// Segments read so far, gaps included: the next one's offset from `EXT-X-MEDIA-SEQUENCE`.
    private var position = 0
    private var mediaSequence = (line: 0, value: 0)
    private var targetDuration: Double?
    private var hasEndList = false
    private var isVOD = false

    // What the tags since the last URI line say about the next segment.
    private var pendingDuration: (line: Int, seconds: Double)?
    private var pendingByteRange: (line: Int, length: Int64, offset: Int64?)?
    private var pendingDiscontinuity = false
    private var pendingGap = false
    /// A tag of the next segment's own came (BYTERANGE, GAP, DISCONTINUITY): a URI now is that segment.
    private var pendingSegmentTag = false
    /// `EXT-X-PART`s since the last URI line: the next segment's parts.
    private var pendingParts: [MediaSegment] = []
    /// Where the last part's byte range of each resource ended, for a part's `BYTERANGE` without an offset.
    private var partRangeEnds: [URL: Int64] = [:]
    /// The first line that looked like a URI but followed no `EXTINF`, for the error of a list with no segments.
    private var strayLine: Int?
    private var gapSeconds = 0.0
    private var hasUnknownDuration = false

    // What holds until the next tag of its kind.
    private var initialization: MediaResource?
    private var initializationEncryption: SegmentEncryption = .none
    private var encryption: SegmentEncryption = .none
    /// Whether a segment came since the last `EXT-X-KEY`: consecutive keys are one segment's, a key
    /// per KEYFORMAT (Widevine, PlayReady, FairPlay, and sometimes a clear AES-128 key among them).
    private var segmentSinceKey = false
    /// The line of the key in force when it is AES-128 with no IV: its IV is the segment's sequence number.
    private var sequenceIVKeyLine: Int?
    /// The first segment whose IV is its sequence number: its position, and its key's line.
    private var firstSequenceIV: (position: Int, keyLine: Int)?

    /// Where the last byte range of each resource ended, for an `EXT-X-BYTERANGE` without an offset.
    private var rangeEnds: [URL: Int64] = [:]
    /// The last URI resolved: a single-file playlist names one resource a thousand times.
    private var lastResolved: (uri: Substring, url: URL)?
    private var budget: SegmentBudget

    init(url: URL, budget: SegmentBudget) {
        self.url = url
        self.budget = budget
    }

    mutating func read(_ line: HLSLine) throws(StreamParseError) {
        let number = line.number
        switch line.content {
        case .tag("EXTINF", let value):
            if let pendingDuration { throw HLSPlaylist.failure(pendingDuration.line, "#EXTINF has no URI after it") }
            // The duration ends at the comma, or at the space before IPTV attributes (`-1 tvg-id="…",Name`).
            let end = value.utf8.firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            let text = value[..<(end ?? value.endIndex)]
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0 || seconds == -1 else {
                throw HLSPlaylist.failure(number, "#EXTINF duration \"\(text.prefix(40))\" is not a non-negative number")
            }
            pendingDuration = (number, seconds)
        case .tag("EXT-X-BYTERANGE", let value):
            guard let range = Self.byteRange(value) else { throw Self.badByteRange(value, line: number) }
            pendingByteRange = (number, range.length, range.offset)
            pendingSegmentTag = true
        case .tag("EXT-X-TARGETDURATION", let value):
            guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else {
                throw HLSPlaylist.failure(number, "#EXT-X-TARGETDURATION \"\(value.prefix(40))\" is not a number")
            }
            targetDuration = seconds
        case .tag("EXT-X-MEDIA-SEQUENCE", let value):
            // Negative ones are written too (hls.js reads them); segments are numbered from it all the same.
            guard let sequence = Int(value) else {
                throw HLSPlaylist.failure(number, "#EXT-X-MEDIA-SEQUENCE \"\(value.prefix(40))\" is not a sequence number")
            }
            mediaSequence = (number, sequence)
        case .tag("EXT-X-DISCONTINUITY", _):
            pendingDiscontinuity = true
            pendingSegmentTag = true
        case .tag("EXT-X-GAP", _):
            pendingGap = true
            pendingSegmentTag = true
        case .tag("EXT-X-ENDLIST", _):
            hasEndList = true
        case .tag("EXT-X-PART", let value):
            try readPart(HLSAttributes(value), line: number)
        case .tag("EXT-X-PLAYLIST-TYPE", let value):
            isVOD = value == "VOD"
        case .tag("EXT-X-MAP", let value):
            initialization = try map(HLSAttributes(value), line: number)
            // The key in force at the map encrypts it too; whole-file AES-128 of an init section has no
            // sequence number to stand in for a missing IV (hls.js guesses 0, which silently garbles it).
            if encryption.takesSequenceIV {
                throw HLSPlaylist.failure(number, "#EXT-X-MAP is encrypted with AES-128 by a key with no IV, which RFC 8216 requires")
            }
            initializationEncryption = encryption
        case .tag("EXT-X-KEY", let value):
            let key = try HLSPlaylist.key(HLSAttributes(value), tag: "EXT-X-KEY", against: url, line: number, budget: &budget)
            // Of one segment's keys, a clear key vfetch can use wins over DRM listed beside it, else
            // the first that is not NONE. Kept as each key is read: 400,000 keys, each compared with
            // all those before it, took a minute.
            if segmentSinceKey || encryption.yields(to: key) {
                encryption = key
                sequenceIVKeyLine = encryption.takesSequenceIV ? number : nil
            }
            segmentSinceKey = false
        case .tag, .blank:
            // EXT-X-DISCONTINUITY-SEQUENCE and EXT-X-PROGRAM-DATE-TIME say nothing the model keeps.
            break
        case .uri(let uri):
            try readSegment(uri, line: number)
        }
    }

    /// The segment list, once every line has been read.
    func finish(lastLine: Int) throws(StreamParseError) -> SegmentList {
        // A live list read while the server wrote it may end in an EXTINF whose URI is still to come.
        if let pendingDuration, hasEndList || isVOD {
            throw HLSPlaylist.failure(pendingDuration.line, "#EXTINF has no URI after it")
        }
        guard !segments.isEmpty else {
            if let strayLine { throw HLSPlaylist.failure(strayLine, "a URI with no #EXTINF before it") }
            throw HLSPlaylist.failure(lastLine, "the media playlist has no segments")
        }
        // Sequence numbers are positions until now: EXT-X-MEDIA-SEQUENCE may come late in the text.
        guard mediaSequence.value.addingReportingOverflow(position - 1).overflow == false else {
            throw HLSPlaylist.failure(mediaSequence.line, "#EXT-X-MEDIA-SEQUENCE \(mediaSequence.value) is too large")
        }
        if let first = firstSequenceIV, mediaSequence.value + first.position < 0 {
            throw HLSPlaylist.failure(
                mediaSequence.line,
                "#EXT-X-MEDIA-SEQUENCE \(mediaSequence.value) makes a segment's number negative, and an AES-128 key with no IV"
                    + " (line \(first.keyLine)) needs it as the IV")
        }
        var list = SegmentList(
            segments: segments, isComplete: hasEndList || isVOD, targetDuration: targetDuration, gapSeconds: gapSeconds,
            hasUnknownDuration: hasUnknownDuration)
        if !list.isComplete { list.partial = pendingParts }
        for index in list.segments.indices {
            list.segments[index].sequence += mediaSequence.value
            for part in list.segments[index].parts.indices { list.segments[index].parts[part].sequence += mediaSequence.value }
        }
        for index in list.partial.indices { list.partial[index].sequence += mediaSequence.value }
        return list
    }

    private mutating func readSegment(_ uri: Substring, line: Int) throws(StreamParseError) {
        guard let duration = pendingDuration else {
            // Stray text between segments, as hls.js and ffmpeg ignore it; but a URI that has a segment's
            // own tags is a segment whose duration is missing, and leaving it out would lose media.
            guard !pendingSegmentTag else {
                throw HLSPlaylist.failure(line, "a URI with no #EXTINF before it")
            }
            strayLine = strayLine ?? line
            return
        }
        // Gaps count: each is a line read and a sequence number.
        guard budget.takeSegments(1) else {
            throw HLSPlaylist.failure(line, "more than \(budget.maxSegments) segments")
        }
        let resource = try resolve(uri, line: line)
        var byteRange: Range<Int64>?
        if let range = pendingByteRange {
            // Without an offset, a range starts where the previous range of the resource ended (RFC 8216 4.3.2.2).
            guard let start = range.offset ?? rangeEnds[resource] else {
                throw HLSPlaylist.failure(range.line, "#EXT-X-BYTERANGE has no offset and follows no range of \(uri.prefix(200))")
            }
            let (end, overflow) = start.addingReportingOverflow(range.length)
            guard !overflow else { throw Self.badByteRange("\(range.length)@\(start)", line: range.line) }
            byteRange = start..<end
            rangeEnds[resource] = end
        }
        if pendingGap {
            pendingDiscontinuity = true
            gapSeconds += max(0, duration.seconds)
        } else {
            if duration.seconds < 0 { hasUnknownDuration = true }
            if let sequenceIVKeyLine, firstSequenceIV == nil { firstSequenceIV = (position, sequenceIVKeyLine) }
            segments.append(
                MediaSegment(
                    resource: MediaResource(url: resource, byteRange: byteRange), duration: max(0, duration.seconds),
                    sequence: position, initialization: initialization, initializationEncryption: initializationEncryption,
                    encryption: encryption,
                    discontinuity: pendingDiscontinuity, parts: pendingParts
                )
            )
            pendingDiscontinuity = false
        }
        pendingParts = []
        position += 1
        pendingDuration = nil
        pendingByteRange = nil
        pendingGap = false
        pendingSegmentTag = false
        segmentSinceKey = true
    }

    /// `EXT-X-PART:DURATION=…,URI=…[,BYTERANGE=…][,GAP=YES]`: a part of the next segment. The parts of an
    /// encrypted segment are not kept: AES-128-CBC runs across the whole segment, which is fetched instead.
    private mutating func readPart(_ attributes: HLSAttributes, line: Int) throws(StreamParseError) {
        guard let uri = attributes["URI"], let text = attributes["DURATION"] else {
            throw HLSPlaylist.failure(line, "#EXT-X-PART needs a URI and a DURATION")
        }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
            throw HLSPlaylist.failure(line, "#EXT-X-PART duration \"\(text.prefix(40))\" is not a non-negative number")
        }
        guard budget.takeSegments(1) else { throw HLSPlaylist.failure(line, "more than \(budget.maxSegments) segments") }
        let resource = try resolve(uri, line: line)
        var byteRange: Range<Int64>?
        if let text = attributes["BYTERANGE"] {
            guard let range = Self.byteRange(text), let start = range.offset ?? partRangeEnds[resource],
                case (let end, false) = start.addingReportingOverflow(range.length)
            else { throw Self.badByteRange(text, line: line) }
            byteRange = start..<end
            partRangeEnds[resource] = end
        }
        guard attributes["GAP"] != "YES", encryption == .none else { return }
        pendingParts.append(
            MediaSegment(
                resource: MediaResource(url: resource, byteRange: byteRange), duration: seconds, sequence: position,
                initialization: initialization, initializationEncryption: initializationEncryption,
                discontinuity: pendingDiscontinuity && pendingParts.isEmpty))
    }

    private mutating func resolve(_ uri: Substring, line: Int) throws(StreamParseError) -> URL {
        if let lastResolved, lastResolved.uri == uri { return lastResolved.url }
        let resolved = try HLSPlaylist.resolve(uri, against: url, line: line, budget: &budget)
        lastResolved = (uri, resolved)
        return resolved
    }

    /// `EXT-X-MAP`: the initialization section of the following segments.
    private mutating func map(_ attributes: HLSAttributes, line: Int) throws(StreamParseError) -> MediaResource {
        guard let uri = attributes["URI"] else { throw HLSPlaylist.failure(line, "#EXT-X-MAP has no URI") }
        let resource = try resolve(uri, line: line)
        guard let text = attributes["BYTERANGE"] else { return MediaResource(url: resource) }
        // Without an offset a map's range starts at 0: there is no earlier range for it to continue.
        guard let range = Self.byteRange(text) else { throw Self.badByteRange(text, line: line) }
        let start = range.offset ?? 0
        let (end, overflow) = start.addingReportingOverflow(range.length)
        guard !overflow else { throw Self.badByteRange(text, line: line) }
        return MediaResource(url: resource, byteRange: start..<end)
    }

    /// A byte range as HLS writes it, `<length>[@<offset>]`, with a positive length.
    private static func byteRange(_ text: Substring) -> (length: Int64, offset: Int64?)? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let length = Int64(parts[0]), length > 0 else { return nil }
        guard parts.count == 2 else { return (length, nil) }
        guard let offset = Int64(parts[1]), offset >= 0 else { return nil }
        return (length, offset)
    }

    private static func badByteRange(_ text: some StringProtocol, line: Int) -> StreamParseError {
        HLSPlaylist.failure(line, "bad byte range \"\(text.prefix(60))\": expected <length>[@<offset>] within 2^63 bytes")
    }
}

extension SegmentEncryption {
    /// Whether `key`, listed beside this one for the same media, is the one to use: the first that is not
    /// NONE, unless a clear key vfetch can use comes after DRM.
    func yields(to key: SegmentEncryption) -> Bool {
        self == .none || (key.isClearKey && !isClearKey)
    }

    /// AES-128 with a key vfetch fetches: encryption it can undo.
    private var isClearKey: Bool {
        if case .aes128 = self { true } else { false }
    }

    /// AES-128 whose IV is each segment's sequence number (no IV attribute).
    fileprivate var takesSequenceIV: Bool {
        if case .aes128(_, nil) = self { true } else { false }
    }
}
