import CAVFormat
import VFetchContainers
import VFetchCore
import VFetchEngine

/// Copies the streams of a downloaded segmented stream (HLS or DASH) into one media file, as
/// `ffmpeg -c copy` does: no re-encoding, packets interleaved by decoding time, timestamps moved
/// to start at zero and made to grow, and the bitstream filters the container needs (ADTS AAC in
/// MPEG-TS becomes MP4's AudioSpecificConfig, Annex B H.264 becomes length-prefixed) inserted by
/// libavformat.
///
/// Blocking: run it on a thread of its own, never on Swift's cooperative pool.
public enum StreamRemuxer {
    /// The URL libavformat is given for a track, as in `MediaProbe`: not a plain path.
    static let inputURL = "vfetch:segments"
    static let bufferSize = 256 << 10
    /// Bytes and microseconds of packets `avformat_find_stream_info` may read: ffmpeg's defaults.
    static let probeSize: Int64 = 5 << 20
    static let analyzeDuration: Int64 = 5_000_000
    /// More streams than any real stream has; a hostile playlist's file cannot make thousands.
    static let maxStreams = 64

    /// Writes the streams `tracks` keep into `output`, the container chosen by its extension
    /// (see ``containerName(forPath:)``).
    ///
    /// Each track's files are checked to be whole first (MPEG-TS packets, MP4 boxes): a segment
    /// cut short or replaced by an error page is an error, never a silent hole. The output is
    /// written as `output + ".tmp"` and renamed over `output` once complete and on disk; on any
    /// error nothing is left at either name. Throws `.invalidData` for files that are not
    /// readable media and `.cannotWrite` for an output that cannot be written or a codec the
    /// container cannot hold.
    ///
    /// Returns the seconds taken from every timestamp so the output starts at zero: what a file kept
    /// beside it (subtitles) must be moved by to stay in step.
    @discardableResult
    public static func remux(tracks: [RemuxTrack], to output: String) throws(MediaError) -> Double {
        guard !tracks.isEmpty else { throw .invalidData("nothing to remux: no tracks") }
        _ = LibAV.silenced
        if let unavailable = LibAV.unavailable { throw .invalidData(unavailable) }
        var inputs: [RemuxInput] = []
        for (index, track) in tracks.enumerated() {
            inputs.append(try RemuxInput(track: track, number: index + 1))
        }
        guard let formatName = containerName(forPath: output) else {
            throw .cannotWrite("\(output): a stream is saved as \(OutputContainer.extensions)")
        }
        let file = try RemuxFile(path: output)
        let context: OutputFormatContext
        do {
            context = try OutputFormatContext(formatName: formatName, io: try WritingIOContext(file: file))
        } catch {
            throw .cannotWrite("\(output): \(error)")
        }
        let start = try addStreams(from: inputs, to: context, formatName: formatName, output: output)
        do {
            try context.writeHeader()
        } catch {
            throw failure(error, file: file, what: "cannot start a \(formatName) file with these streams")
        }
        for input in inputs { input.takeOutputTimeBases(context) }
        try copyPackets(from: inputs, to: context, file: file)
        do {
            try context.writeTrailer()
        } catch {
            throw failure(error, file: file, what: "cannot finish the \(formatName) file")
        }
        if let code = file.writeError { throw .cannotWrite("\(output): \(Errno(rawValue: code))") }
        try file.commit()
        return Double(start) / 1e6
    }

    /// The muxer for an output path's extension (case-insensitive, see `OutputContainer`): `mp4` for
    /// a name without one; nil for an extension no container is written under.
    public static func containerName(forPath path: String) -> String? { OutputContainer(path: path)?.muxer }

    /// Adds an output stream for every kept input stream, refusing codecs the container cannot
    /// hold (subtitles in a track that keeps other kinds too are left out instead), and moves
    /// every track's timestamps so the earliest stream starts at zero, keeping the tracks in sync.
    /// Returns that earliest start, in microseconds.
    private static func addStreams(
        from inputs: [RemuxInput], to context: OutputFormatContext, formatName: String, output: String
    ) throws(MediaError) -> Int64 {
        var earliest: Int64?
        for input in inputs {
            for (stream, kind) in try input.keptStreams() {
                let codec = stream.pointee.codecpar.pointee.codec_id
                // MP4 holds no WebVTT: its cues become timed text, as `ffmpeg -c:s mov_text` makes them.
                let toMovText = codec == AV_CODEC_ID_WEBVTT && !context.canHold(codec) && context.canHold(AV_CODEC_ID_MOV_TEXT)
                guard toMovText || context.canHold(codec) else {
                    if kind == .subtitles, input.streams != .subtitles {
                        stream.pointee.discard = AVDISCARD_ALL
                        continue
                    }
                    throw .cannotWrite(
                        "\(output): a \(formatName) file cannot hold \(LibAV.codecName(codec)) (track \(input.number))")
                }
                guard context.streams.count < maxStreams else {
                    throw .invalidData("more than \(maxStreams) streams to keep")
                }
                let added: UnsafeMutablePointer<AVStream>
                do {
                    added = try context.addStream(copying: stream)
                    if toMovText { try context.makeMovText(added) }
                } catch {
                    throw .cannotWrite("\(output): \(error)")
                }
                if let language = input.language.flatMap({ LanguageCode.iso639_2($0, bibliographic: !context.isMP4) }) {
                    LibAV.setEntry("language", to: language, in: &added.pointee.metadata)
                }
                input.route(stream, to: added.pointee.index, isVideo: kind == .video, toMovText: toMovText)
                let start = stream.pointee.start_time
                if start != LibAV.noTimestamp {
                    let microseconds = LibAV.rescale(start, from: stream.pointee.time_base, to: microsecond)
                    earliest = min(earliest ?? microseconds, microseconds)
                }
            }
        }
        guard !context.streams.isEmpty else { throw .invalidData("no stream to keep") }
        for input in inputs { input.offset = -(earliest ?? 0) }
        return earliest ?? 0
    }

    /// Reads every track to its end and hands each packet to the muxer, always the one of the
    /// track that is furthest behind, so the muxer's queue stays short.
    private static func copyPackets(from inputs: [RemuxInput], to context: OutputFormatContext, file: RemuxFile)
        throws(MediaError)
    {
        let strict = !context.acceptsEqualTimestamps
        while true {
            for input in inputs where !input.hasPacket && !input.isFinished {
                try input.readNext()
            }
            let waiting = inputs.filter(\.hasPacket)
            guard let next = waiting.min(by: { $0.packetTime < $1.packetTime }) else { break }
            guard next.prepare(strict: strict) else {
                next.dropPacket()
                continue
            }
            do {
                try next.convertToMovText()
                try context.write(next.packet)
            } catch {
                throw failure(error, file: file, what: "cannot write a packet of track \(next.number)")
            }
            next.hasPacket = false
        }
        guard inputs.contains(where: { $0.packetsWritten > 0 }) else { throw .invalidData("no packets to copy") }
    }

    /// A libavformat failure as a ``MediaError``: `.cannotWrite` when writing the file failed.
    private static func failure(_ error: AVFormatError, file: RemuxFile, what: String) -> MediaError {
        if let code = file.writeError { return .cannotWrite("\(file.path): \(Errno(rawValue: code))") }
        return .invalidData("\(what): \(error)")
    }
}

/// `AV_TIME_BASE_Q`: microseconds.
let microsecond = AVRational(num: 1, den: AV_TIME_BASE)

/// One track being read: its chain of files, the demuxer over it, and where its kept streams go.
/// Confined to the thread that remuxes.
final class RemuxInput {
    /// 1-based, for messages.
    let number: Int
    let streams: StreamKinds
    /// The track's language (BCP 47), written on each of its streams.
    let language: String?
    let chain: SegmentChain
    let context: FormatContext
    /// The packet read last, until it is written or dropped.
    let packet: Packet
    var hasPacket = false
    private(set) var isFinished = false
    private(set) var packetsWritten = 0
    /// Added to every timestamp, in microseconds: first minus the earliest start of all tracks,
    /// then moved at each jump of an MPEG-TS clock.
    var offset: Int64 = 0
    /// The kept streams by input stream index.
    private var routes: [Int32: RemuxRoute] = [:]
    /// The output streams whose WebVTT cues are written as `mov_text` samples.
    private var movTextOutputs: Set<Int32> = []

    /// A jump of the clock by more than this between packets (microseconds) is a discontinuity,
    /// in containers whose clock may jump (MPEG-TS): ffmpeg's `-dts_delta_threshold`.
    static let discontinuityThreshold: Int64 = 10_000_000

    /// Opens the track's files as one stream, checked whole first, and reads its stream information.
    init(track: RemuxTrack, number: Int) throws(MediaError) {
        self.number = number
        streams = track.streams
        language = track.language
        do {
            chain = try SegmentChain(paths: track.files)
            try chain.checkFraming()
        } catch {
            throw Self.inTrack(number, error)
        }
        let io: IOContext
        do {
            packet = try Packet()
            io = try IOContext(source: chain, bufferSize: StreamRemuxer.bufferSize)
        } catch {
            throw .invalidData("track \(number): \(error)")
        }
        do {
            context = try FormatContext(
                io: io, url: StreamRemuxer.inputURL, formats: InputFormats.segments, probeSize: StreamRemuxer.probeSize,
                analyzeDuration: StreamRemuxer.analyzeDuration)
        } catch {
            throw .invalidData("track \(number): \(chain.failure ?? io.io.refusal ?? error.description)")
        }
        do {
            try context.findStreamInfo()
        } catch {
            if let failure = chain.failure { throw .invalidData("track \(number): \(failure)") }
            // What the header says may be enough to copy packets; the muxer says if it is not.
        }
        if let refusal = io.io.refusal { throw .invalidData("track \(number): \(refusal)") }
    }

    private static func inTrack(_ number: Int, _ error: MediaError) -> MediaError {
        if case .invalidData(let message) = error { return .invalidData("track \(number): \(message)") }
        return error
    }

    /// The streams of the kinds the track keeps, with their kinds; every other stream is
    /// discarded, so the demuxer does not even return its packets. Throws when a kind asked for
    /// by name is missing.
    func keptStreams() throws(MediaError) -> [(UnsafeMutablePointer<AVStream>, StreamKinds)] {
        var kept: [(UnsafeMutablePointer<AVStream>, StreamKinds)] = []
        for stream in context.streams {
            let parameters = stream.pointee.codecpar.pointee
            var kind: StreamKinds?
            switch parameters.codec_type {
            case AVMEDIA_TYPE_VIDEO where stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0: kind = .video
            case AVMEDIA_TYPE_AUDIO: kind = .audio
            case AVMEDIA_TYPE_SUBTITLE: kind = .subtitles
            default: kind = nil
            }
            if let kind, streams.contains(kind), parameters.codec_id != AV_CODEC_ID_NONE {
                kept.append((stream, kind))
            } else {
                stream.pointee.discard = AVDISCARD_ALL
            }
        }
        let found = StreamKinds(kept.map(\.1))
        if streams == .all {
            if kept.isEmpty { throw .invalidData("track \(number) (\(context.formatName)) has no video, audio or subtitles") }
        } else if !found.isSuperset(of: streams) {
            throw .invalidData(
                "track \(number) (\(context.formatName)) has no \(streams.subtracting(found)) stream")
        }
        return kept
    }

    /// Sends the packets of input stream `stream` to output stream `output`.
    func route(_ stream: UnsafeMutablePointer<AVStream>, to output: Int32, isVideo: Bool, toMovText: Bool = false) {
        if toMovText { movTextOutputs.insert(output) }
        routes[stream.pointee.index] = RemuxRoute(
            output: output, inputTimeBase: stream.pointee.time_base, outputTimeBase: stream.pointee.time_base,
            isVideo: isVideo)
    }

    /// Learns the time bases the muxer chose in its header.
    func takeOutputTimeBases(_ context: OutputFormatContext) {
        let streams = context.streams
        for (index, route) in routes where Int(route.output) < streams.count {
            routes[index]?.outputTimeBase = streams[Int(route.output)].pointee.time_base
        }
    }

    /// Reads the next packet of a kept stream into `packet`, or notes the end of the track.
    func readNext() throws(MediaError) {
        while true {
            let code = LibAV.readFrame(context.raw, into: packet.raw)
            // libavformat may report the refused read as the end of the file.
            if let refusal = context.io.io.refusal {
                let at = chain.describe(file: chain.fileIndex(at: context.io.io.position))
                throw .invalidData("track \(number), \(at): \(refusal)")
            }
            if code == LibAV.errorEndOfFile {
                isFinished = true
                return
            }
            guard code >= 0 else {
                let at = chain.describe(file: chain.fileIndex(at: context.io.io.position))
                throw .invalidData(
                    "track \(number), \(at): \(chain.failure ?? AVFormatError(code: code, call: "av_read_frame").description)")
            }
            if routes[packet.raw.pointee.stream_index] != nil {
                hasPacket = true
                return
            }
            packet.clear()
        }
    }

    /// The held packet's decoding time on the output's clock, in seconds, for choosing which
    /// track's packet goes next; a packet with no time at all goes at once.
    var packetTime: Double {
        let raw = packet.raw.pointee
        let time = raw.dts != LibAV.noTimestamp ? raw.dts : raw.pts
        guard time != LibAV.noTimestamp, let route = routes[raw.stream_index], route.inputTimeBase.den > 0 else {
            return -.infinity
        }
        return Double(time) * Double(route.inputTimeBase.num) / Double(route.inputTimeBase.den) + Double(offset) / 1e6
    }

    /// Readies the held packet for the muxer as `ffmpeg -c copy` does; false when it is to be
    /// dropped (video before the first keyframe, which no decoder can show; a packet with no
    /// timestamp to place it by; timestamps out of range).
    func prepare(strict: Bool) -> Bool {
        let raw = packet.raw
        guard var route = routes[raw.pointee.stream_index] else { return false }
        defer { routes[raw.pointee.stream_index] = route }
        if route.isVideo, !route.seenKeyframe {
            guard raw.pointee.flags & AV_PKT_FLAG_KEY != 0 else { return false }
            route.seenKeyframe = true
        }
        let base = route.inputTimeBase
        let none = LibAV.noTimestamp
        let shift = LibAV.rescale(offset, from: microsecond, to: base)
        var dts = raw.pointee.dts
        var pts = raw.pointee.pts
        if dts != none {
            guard case (let moved, false) = dts.addingReportingOverflow(shift) else { return false }
            dts = moved
        }
        if pts != none {
            guard case (let moved, false) = pts.addingReportingOverflow(shift) else { return false }
            pts = moved
        }
        if dts == none { dts = route.nextDTS.map { LibAV.rescale($0, from: microsecond, to: base) } ?? pts }
        guard dts != none else { return false }
        if pts == none { pts = dts }

        // An MPEG-TS clock that jumps (an HLS discontinuity, a wrap the demuxer missed) is followed
        // as one timeline, as ffmpeg does for formats flagged `AVFMT_TS_DISCONT`.
        var at = LibAV.rescale(dts, from: base, to: microsecond)
        if context.clockMayJump, let next = route.nextDTS, let last = route.lastDTS {
            let (delta, overflow) = at.subtractingReportingOverflow(next)
            if overflow || delta < -Self.discontinuityThreshold || delta > Self.discontinuityThreshold
                || at < last.subtractingReportingOverflow(100_000).partialValue
            {
                guard !overflow, case (let moved, false) = offset.subtractingReportingOverflow(delta) else { return false }
                offset = moved
                let ticks = LibAV.rescale(delta, from: microsecond, to: base)
                guard case (let newDTS, false) = dts.subtractingReportingOverflow(ticks),
                    case (let newPTS, false) = pts.subtractingReportingOverflow(ticks)
                else { return false }
                (dts, pts) = (newDTS, newPTS)
                at = LibAV.rescale(dts, from: base, to: microsecond)
            }
        }
        route.lastDTS = at
        let duration = raw.pointee.duration > 0 ? LibAV.rescale(raw.pointee.duration, from: base, to: microsecond) : 0
        route.nextDTS = at.addingReportingOverflow(duration).overflow ? at : at + duration

        raw.pointee.dts = dts
        raw.pointee.pts = pts
        LibAV.rescaleTimestamps(raw, from: base, to: route.outputTimeBase)
        let fixed = route.order.fix(pts: raw.pointee.pts, dts: raw.pointee.dts, strict: strict)
        (raw.pointee.pts, raw.pointee.dts) = fixed
        raw.pointee.stream_index = route.output
        raw.pointee.pos = -1
        packetsWritten += 1
        return true
    }

    /// Rewrites the held, prepared packet's WebVTT cue as a `mov_text` sample when its output stream is one.
    func convertToMovText() throws(AVFormatError) {
        let raw = packet.raw
        guard movTextOutputs.contains(raw.pointee.stream_index) else { return }
        let cue = raw.pointee.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(raw.pointee.size))) } ?? []
        try LibAV.replaceData(of: raw, with: MovText.sample(fromWebVTT: cue))
    }

    /// Releases the held packet unwritten.
    func dropPacket() {
        packet.clear()
        hasPacket = false
    }
}

@available(*, unavailable)
extension RemuxInput: Sendable {}

extension FormatContext {
    /// Whether the demuxer's clock may jump (`AVFMT_TS_DISCONT`: MPEG-TS).
    var clockMayJump: Bool {
        guard let format = raw.pointee.iformat else { return false }
        return format.pointee.flags & AVFMT_TS_DISCONT != 0
    }
}

/// Where one kept input stream goes, and what its timestamps were so far.
struct RemuxRoute {
    let output: Int32
    let inputTimeBase: AVRational
    var outputTimeBase: AVRational
    let isVideo: Bool
    var seenKeyframe = false
    /// The decoding time the next packet should have (microseconds, on the output's clock).
    var nextDTS: Int64?
    /// The last packet's decoding time (microseconds, on the output's clock).
    var lastDTS: Int64?
    /// The timestamps handed to the muxer so far, in the output's time base.
    var order = MonotonicTimestamps()
}
