// The shapes are listed on the types.
extension StreamCatalogInfo: Codable {
    private enum Keys: String, CodingKey {
        case stream, live, duration, tracks
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(format, forKey: .stream)
        try json.encode(isLive, forKey: .live)
        try json.encode(duration, forKey: .duration)
        try json.encode(tracks, forKey: .tracks)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            format: try json.decode(String.self, forKey: .stream), isLive: try json.decode(Bool.self, forKey: .live),
            duration: try json.decodeIfPresent(Double.self, forKey: .duration), tracks: try json.decode([Track].self, forKey: .tracks))
    }
}

extension StreamCatalogInfo.Track: Codable {
    private enum Keys: String, CodingKey {
        case id, kind, bandwidth, width, height, codecs, language, name, segments, duration, encryption, problem
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(id, forKey: .id)
        try json.encode(kind, forKey: .kind)
        try json.encode(bandwidth, forKey: .bandwidth)
        try json.encode(width, forKey: .width)
        try json.encode(height, forKey: .height)
        try json.encode(codecs, forKey: .codecs)
        try json.encode(language, forKey: .language)
        try json.encode(name, forKey: .name)
        try json.encode(segments, forKey: .segments)
        try json.encode(seconds, forKey: .duration)
        try json.encode(encryption, forKey: .encryption)
        try json.encode(problem, forKey: .problem)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            id: try json.decode(String.self, forKey: .id), kind: try json.decode(String.self, forKey: .kind),
            bandwidth: try json.decodeIfPresent(Int.self, forKey: .bandwidth), width: try json.decodeIfPresent(Int.self, forKey: .width),
            height: try json.decodeIfPresent(Int.self, forKey: .height), codecs: try json.decode([String].self, forKey: .codecs),
            language: try json.decodeIfPresent(String.self, forKey: .language), name: try json.decodeIfPresent(String.self, forKey: .name),
            segments: try json.decodeIfPresent(Int.self, forKey: .segments),
            seconds: try json.decodeIfPresent(Double.self, forKey: .duration),
            encryption: try json.decode(String.self, forKey: .encryption),
            problem: try json.decodeIfPresent(String.self, forKey: .problem))
    }
}
