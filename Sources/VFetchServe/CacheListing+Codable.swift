// The shapes are listed on the types.
extension CacheListing.Entry: Codable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .file(let file): try file.encode(to: encoder)
        case .stream(let stream): try stream.encode(to: encoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        switch try EntryKind.of(decoder) {
        case .file: self = .file(try CacheListing.File(from: decoder))
        case .stream: self = .stream(try CacheListing.Stream(from: decoder))
        }
    }
}

extension CacheListing.File: Codable {
    private enum Keys: String, CodingKey {
        case kind, id, url, key, length, bytesCached = "bytes_cached", bytesOnDisk = "bytes_on_disk", complete, state, error
        case lastAccess = "last_access"
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(EntryKind.file, forKey: .kind)
        try json.encode(id, forKey: .id)
        try json.encode(url, forKey: .url)
        try json.encode(key, forKey: .key)
        try json.encode(length, forKey: .length)
        try json.encode(bytesCached, forKey: .bytesCached)
        try json.encode(bytesOnDisk, forKey: .bytesOnDisk)
        try json.encode(isComplete, forKey: .complete)
        try json.encode(state, forKey: .state)
        try json.encode(error, forKey: .error)
        try json.encode(lastAccess, forKey: .lastAccess)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            id: try json.decode(String.self, forKey: .id), url: try json.decode(String.self, forKey: .url),
            key: try json.decode(String.self, forKey: .key), length: try json.decodeIfPresent(Int64.self, forKey: .length),
            bytesCached: try json.decode(Int64.self, forKey: .bytesCached), bytesOnDisk: try json.decode(Int64.self, forKey: .bytesOnDisk),
            isComplete: try json.decode(Bool.self, forKey: .complete), state: try json.decode(String.self, forKey: .state),
            error: try json.decodeIfPresent(String.self, forKey: .error), lastAccess: try json.decode(Double.self, forKey: .lastAccess))
    }
}

extension CacheListing.Stream: Codable {
    private enum Keys: String, CodingKey {
        case kind, id, url, state, complete, variants, variantsRead = "variants_read", segments, segmentsCached = "segments_cached"
        case bytesCached = "bytes_cached", bytesOnDisk = "bytes_on_disk", lastAccess = "last_access", parts
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(EntryKind.stream, forKey: .kind)
        try json.encode(id, forKey: .id)
        try json.encode(url, forKey: .url)
        try json.encode(state, forKey: .state)
        try json.encode(isComplete, forKey: .complete)
        try json.encode(variants, forKey: .variants)
        try json.encode(variantsRead, forKey: .variantsRead)
        try json.encode(segments, forKey: .segments)
        try json.encode(segmentsCached, forKey: .segmentsCached)
        try json.encode(bytesCached, forKey: .bytesCached)
        try json.encode(bytesOnDisk, forKey: .bytesOnDisk)
        try json.encode(lastAccess, forKey: .lastAccess)
        try json.encode(parts, forKey: .parts)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            id: try json.decode(String.self, forKey: .id), url: try json.decode(String.self, forKey: .url),
            state: try json.decode(String.self, forKey: .state), isComplete: try json.decode(Bool.self, forKey: .complete),
            variants: try json.decode([String].self, forKey: .variants),
            variantsRead: try json.decode([String].self, forKey: .variantsRead), segments: try json.decode(Int.self, forKey: .segments),
            segmentsCached: try json.decode(Int.self, forKey: .segmentsCached),
            bytesCached: try json.decode(Int64.self, forKey: .bytesCached), bytesOnDisk: try json.decode(Int64.self, forKey: .bytesOnDisk),
            lastAccess: try json.decode(Double.self, forKey: .lastAccess), parts: try json.decode([CacheListing.File].self, forKey: .parts))
    }
}

/// An entry's `kind` in JSON, which tells a file's object from a stream's.
enum EntryKind: String, Encodable {
    case file, stream

    private enum Keys: String, CodingKey { case kind }

    /// The `kind` of the object `decoder` holds.
    static func of(_ decoder: any Decoder) throws -> EntryKind {
        let json = try decoder.container(keyedBy: Keys.self)
        let name = try json.decode(String.self, forKey: .kind)
        guard let kind = EntryKind(rawValue: name) else {
            throw DecodingError.dataCorruptedError(forKey: .kind, in: json, debugDescription: "no entry kind named \(name)")
        }
        return kind
    }
}
