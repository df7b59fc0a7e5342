import VFetchContainers
import VFetchCore

/// What the element headers of a Matroska or WebM file say about its layout: the DocType, where
/// the `Cues` (the index, usually at the end) are, and, walking the present bytes, its clusters.
///
/// libavformat reads `Cues` only when asked to seek and does not say where they are. This reads
/// the `SeekHead` that points at them, so the probe knows whether its index is complete and which
/// bytes to ask for when it is not; and without `Cues`, the clusters stand in for them.
struct MatroskaLayout {
    /// One `Cluster`: its bytes, header included, its time, and whether its first block is a
    /// keyframe of the primary track.
    struct Cluster: Equatable {
        var range: Range<Int64>
        var seconds: Double
        var startsWithKeyframe: Bool
    }

    /// "matroska" or "webm".
    var docType: String?
    /// The `Cues` element, header included. When its header is not present: from its start to
    /// the end of the missing run there.
    var cues: Range<Int64>?
    /// Where the segment's data starts; positions in `SeekHead` and `Cues` count from here.
    private var segmentStart: Int64?
    private var segmentEnd: Int64 = 0
    /// Where the first `Cluster` starts, if the walk of the head got there.
    private var firstCluster: Int64?
    /// The track whose keyframes start a playable stretch: the first video track, else the first audio track.
    private(set) var primaryTrack: UInt64?
    /// Nanoseconds per unit of cluster and block timestamps (`TimestampScale`, default 1 ms).
    private var timestampScale: UInt64 = 1_000_000

    /// Walks the level-1 elements up to the first cluster (`SeekHead`, `Info`, `Tracks`, …).
    init(source: any MediaByteSource) {
        let length = source.length
        var offset: Int64 = 0
        guard let ebml = Self.header(at: offset, source: source), ebml.id == EBMLReader.ebmlHeader,
            let ebmlSize = ebml.size
        else { return }
        let ebmlData = offset + ebml.length
        if let data = source.bytes(at: ebmlData, count: Int(min(ebmlSize, 1024))) {
            var reader = EBMLReader(bytes: data)
            while let element = reader.header(), let size = element.size, reader.offset + size <= data.count {
                if element.id == EBMLReader.docType {
                    docType = String(
                        decoding: data[reader.offset..<reader.offset + size].prefix { $0 != 0 }, as: UTF8.self)
                }
                reader.offset += size
            }
        }
        offset = ebmlData + ebmlSize
        guard let segment = Self.header(at: offset, source: source), segment.id == EBMLReader.segment else { return }
        let segmentStart = offset + segment.length
        self.segmentStart = segmentStart
        segmentEnd = segment.size.map { min(length, segmentStart + $0) } ?? length
        offset = segmentStart
        var cuesPosition: Int64?
        for _ in 0..<64 {
            guard offset < segmentEnd, let element = Self.header(at: offset, source: source) else { break }
            let data = offset + element.length
            switch element.id {
            case EBMLReader.cluster:
                firstCluster = offset
            case EBMLReader.cues:
                cues = element.size.map { offset..<data + $0 }
            case EBMLReader.seekHead:
                if let size = element.size, let bytes = source.bytes(at: data, count: Int(min(size, 64 << 10))) {
                    cuesPosition = cuesPosition ?? EBMLReader.cuesPosition(inSeekHead: bytes)
                }
            case EBMLReader.tracks:
                if let size = element.size, let bytes = source.bytes(at: data, count: Int(min(size, 256 << 10))) {
                    primaryTrack = Self.primaryTrack(in: bytes)
                }
            case EBMLReader.info:
                if let size = element.size, let bytes = source.bytes(at: data, count: Int(min(size, 64 << 10))) {
                    timestampScale = Self.timestampScale(in: bytes) ?? timestampScale
                }
            default:
                break
            }
            guard firstCluster == nil, let size = element.size else { break }
            offset = data + size
        }
        if cues == nil, let cuesPosition {
            cues = Self.element(at: segmentStart + cuesPosition, source: source)
        }
        // A damaged size can run past the end of the file; the Cues cannot, and bytes past it
        // can never be fetched.
        cues = cues?.clamped(to: 0..<length)
    }

    /// Bytes of a cluster's start searched for the primary track's first block.
    static let clusterHeadLength: Int64 = 8 << 10

    /// Walks the clusters from the first one while their headers are present. Returns the
    /// clusters and whether the walk reached the segment's end.
    func clusters(source: any MediaByteSource) -> (clusters: [Cluster], complete: Bool) {
        guard let first = firstCluster else { return ([], false) }
        var clusters: [Cluster] = []
        var offset = first
        while offset < segmentEnd {
            guard let element = Self.header(at: offset, source: source), let size = element.size else {
                return (clusters, false)
            }
            let data = offset + element.length
            let end = data + Int64(size)
            guard end <= segmentEnd else { return (clusters, false) }
            if element.id == EBMLReader.cluster {
                let head = source.presentPrefix(at: data, count: Int(min(Self.clusterHeadLength, Int64(size))))
                guard let (timestamp, keyframe) = Self.clusterHead(head, keyframeTrack: primaryTrack) else {
                    return (clusters, false)
                }
                let seconds = Double(timestamp) * Double(timestampScale) / 1e9
                clusters.append(Cluster(range: offset..<end, seconds: seconds, startsWithKeyframe: keyframe))
            }
            offset = end
        }
        return (clusters, true)
    }

    // MARK: Elements

    /// The header of the element at `offset`: its ID, data size, and header length.
    private static func header(at offset: Int64, source: any MediaByteSource) -> (
        id: UInt32, size: Int64?, length: Int64
    )? {
        let bytes = source.presentPrefix(at: offset, count: Int(min(12, source.length - offset)))
        var reader = EBMLReader(bytes: bytes)
        guard let element = reader.header() else { return nil }
        return (element.id, element.size.map(Int64.init), Int64(reader.offset))
    }

    /// The `Cues` element at `offset`, header included; when its header is not present, the
    /// missing run there.
    private static func element(at offset: Int64, source: any MediaByteSource) -> Range<Int64>? {
        guard offset < source.length else { return nil }
        if let element = header(at: offset, source: source) {
            guard element.id == EBMLReader.cues, let size = element.size else { return nil }
            return offset..<offset + element.length + size
        }
        var probeOffset = offset
        while probeOffset < min(source.length, offset + 12) {
            if case .missing(let run) = source.probe(at: probeOffset) { return offset..<run.upperBound }
            probeOffset += 1
        }
        return nil
    }

    /// `TimestampScale` from an `Info` element's data.
    private static func timestampScale(in data: [UInt8]) -> UInt64? {
        var reader = EBMLReader(bytes: data)
        while let element = reader.header(), let size = element.size {
            if element.id == EBMLReader.timestampScale {
                return reader.unsigned(size: size).flatMap { $0 > 0 ? $0 : nil }
            }
            reader.offset += size
        }
        return nil
    }

    /// The number of the first video track, else of the first audio track, from a `Tracks` element's data.
    private static func primaryTrack(in data: [UInt8]) -> UInt64? {
        var reader = EBMLReader(bytes: data)
        var firstAudio: UInt64?
        while let entry = reader.header(), let entrySize = entry.size {
            let entryEnd = reader.offset + entrySize
            if entry.id == EBMLReader.trackEntry {
                var number: UInt64?
                var type: UInt64?
                while reader.offset < entryEnd, let child = reader.header(), let childSize = child.size {
                    switch child.id {
                    case EBMLReader.trackNumber: number = reader.unsigned(size: childSize)
                    case EBMLReader.trackType: type = reader.unsigned(size: childSize)
                    default: reader.offset += childSize
                    }
                }
                if type == 1, let number { return number }
                if type == 2, firstAudio == nil { firstAudio = number }
            }
            reader.offset = entryEnd
        }
        return firstAudio
    }

    /// A cluster's `Timestamp`, and whether the first block of `keyframeTrack` (any track when
    /// nil) in the cluster's first bytes is a keyframe.
    private static func clusterHead(_ data: [UInt8], keyframeTrack: UInt64?) -> (UInt64, Bool)? {
        var reader = EBMLReader(bytes: data)
        var timestamp: UInt64?
        while let element = reader.header(), let size = element.size {
            let end = reader.offset + size
            switch element.id {
            case EBMLReader.timestamp:
                timestamp = reader.unsigned(size: size)
            case EBMLReader.simpleBlock:
                // Track number, 16-bit relative timestamp, flags (0x80: keyframe).
                guard let timestamp, let track = reader.number(), reader.offset + 3 <= data.count else {
                    return timestamp.map { ($0, false) }
                }
                if keyframeTrack == nil || keyframeTrack == track {
                    return (timestamp, data[reader.offset + 2] & 0x80 != 0)
                }
            case EBMLReader.blockGroup:
                // A Block is a keyframe when its group has no ReferenceBlock.
                var track: UInt64?
                var referenced = false
                while reader.offset < min(end, data.count), let child = reader.header(), let childSize = child.size {
                    let childEnd = reader.offset + childSize
                    if child.id == EBMLReader.block { track = reader.number() }
                    if child.id == EBMLReader.referenceBlock { referenced = true }
                    reader.offset = childEnd
                }
                guard let timestamp, let track, end <= data.count else { return timestamp.map { ($0, false) } }
                if keyframeTrack == nil || keyframeTrack == track { return (timestamp, !referenced) }
            default:
                break
            }
            reader.offset = end
        }
        return timestamp.map { ($0, false) }
    }
}
