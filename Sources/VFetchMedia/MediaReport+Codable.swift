import VFetchCore

// The shape is listed on the type.
extension MediaReport: Codable {
    private enum Keys: String, CodingKey {
        case container, duration, bitRate = "bit_rate", streams, faststart, fragmented, length, downloaded, complete
        case present, playable, needs, fetchedBytes = "fetched_bytes", requests
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(container, forKey: .container)
        try json.encode(info?.duration, forKey: .duration)
        try json.encode(info?.bitRate, forKey: .bitRate)
        try json.encode(info?.streams ?? [], forKey: .streams)
        try json.encode(faststart, forKey: .faststart)
        try json.encode(info?.fragmented, forKey: .fragmented)
        try json.encode(length, forKey: .length)
        try json.encode(downloaded, forKey: .downloaded)
        try json.encode(isComplete, forKey: .complete)
        try json.encode(pairs: present, forKey: .present)
        try json.encode(pairs: playable, forKey: .playable)
        try json.encode(pair: needs, forKey: .needs)
        try json.encode(fetchedBytes, forKey: .fetchedBytes)
        try json.encode(requests, forKey: .requests)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        let container = try json.decodeIfPresent(String.self, forKey: .container)
        let faststart = try json.decodeIfPresent(Bool.self, forKey: .faststart)
        let duration = try json.decodeIfPresent(Double.self, forKey: .duration)
        let bitRate = try json.decodeIfPresent(Int64.self, forKey: .bitRate)
        let streams = try json.decode([MediaStream].self, forKey: .streams)
        let fragmented = try json.decodeIfPresent(Bool.self, forKey: .fragmented)
        var info: MediaInfo?
        if let container, duration != nil || bitRate != nil || fragmented != nil || !streams.isEmpty {
            info = MediaInfo(
                container: container, duration: duration, bitRate: bitRate, streams: streams, faststart: faststart,
                fragmented: fragmented)
        }
        self.init(
            info: info, length: try json.decode(Int64.self, forKey: .length), downloaded: try json.decode(Double.self, forKey: .downloaded),
            present: try json.decodePairs(Range<Int64>.self, forKey: .present),
            playable: try json.decodePairs(ClosedRange<Double>.self, forKey: .playable),
            needs: try json.decodePairIfPresent(Range<Int64>.self, forKey: .needs), container: container, faststart: faststart,
            fetchedBytes: try json.decodeIfPresent(Int64.self, forKey: .fetchedBytes),
            requests: try json.decodeIfPresent(Int.self, forKey: .requests))
    }
}
