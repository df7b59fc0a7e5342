// The shapes are listed on the types.
extension ProbeResult: Codable {
    private enum Keys: String, CodingKey {
        case tracks, segmentsKept = "segments_kept"
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .media(let report): try report.encode(to: encoder)
        case .stream(let catalog): try catalog.encode(to: encoder)
        case .unfinishedStream(let parts): try parts.encode(to: encoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        if json.contains(.tracks) {
            self = .stream(try StreamCatalogInfo(from: decoder))
        } else if json.contains(.segmentsKept) {
            self = .unfinishedStream(try UnfinishedStream(from: decoder))
        } else {
            self = .media(try MediaReport(from: decoder))
        }
    }
}

extension UnfinishedStream: Codable {
    private enum Keys: String, CodingKey {
        case stream, complete, segments, segmentsKept = "segments_kept", bytesKept = "bytes_kept"
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(source, forKey: .stream)
        try json.encode(false, forKey: .complete)
        try json.encode(segments, forKey: .segments)
        try json.encode(segmentsKept, forKey: .segmentsKept)
        try json.encode(bytesKept, forKey: .bytesKept)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        source = try json.decode(String.self, forKey: .stream)
        segments = try json.decode(Int.self, forKey: .segments)
        segmentsKept = try json.decode([Int].self, forKey: .segmentsKept)
        bytesKept = try json.decode(Int64.self, forKey: .bytesKept)
    }
}
