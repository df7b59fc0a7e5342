import VFetchCore

// The shapes are listed on the types.
extension CacheStatus: Codable {
    private enum Keys: String, CodingKey {
        case entries, bytesCached = "bytes_cached", readers
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(entries, forKey: .entries)
        try json.encode(bytesCached, forKey: .bytesCached)
        try json.encode(readers, forKey: .readers)
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            entries: try json.decode([Entry].self, forKey: .entries), bytesCached: try json.decode(Int64.self, forKey: .bytesCached),
            readers: try json.decode(Int.self, forKey: .readers))
    }
}

extension CacheStatus.Entry: Codable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .file(let file): try file.encode(to: encoder)
        case .stream(let stream): try stream.encode(to: encoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        switch try EntryKind.of(decoder) {
        case .file: self = .file(try CacheStatus.File(from: decoder))
        case .stream: self = .stream(try CacheStatus.Stream(from: decoder))
        }
    }
}

extension CacheStatus.File: Codable {
    private enum Keys: String, CodingKey {
        case kind, id, url, key, length, bytesCached = "bytes_cached", bytesOnDisk = "bytes_on_disk", complete, state
        case lastAccess = "last_access", readers, downloading, playable
    }

    public func encode(to encoder: any Encoder) throws {
        var json = encoder.container(keyedBy: Keys.self)
        try json.encode(EntryKind.file, forKey: .kind)
        try json.encode(id, forKey: .id)
        try json.encode(url, forKey: .url)
        try json.encode(key, forKey: .key)
        try json.encodeIfPresent(length, forKey: .length)
        try json.encode(bytesCached, forKey: .bytesCached)
        try json.encode(bytesOnDisk, forKey: .bytesOnDisk)
        try json.encode(isComplete, forKey: .complete)
        try json.encode(state, forKey: .state)
        try json.encode(lastAccess, forKey: .lastAccess)
        try json.encode(readers, forKey: .readers)
        try json.encode(isDownloading, forKey: .downloading)
        if let playable { try json.encode(pairs: playable, forKey: .playable) }
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: Keys.self)
        self.init(
            id: try json.decode(String.self, forKey: .id), url: try json.decode(String.self, forKey: .url),
            key: try json.decode(String.self, forKey: .key), length: try json.decodeIfPresent(Int64.self, forKey: .length),
            bytesCached: try json.decode(Int64.self, forKey: .bytesCached), bytesOnDisk: try json.decode(Int64.self, forKey: .bytesOnDisk),
            isComplete: try json.decode(Bool.self, forKey: .complete), state: try json.decode(String.self, forKey: .state),
            lastAccess: try json.decode(Double.self, forKey: .lastAccess), readers: try json.decode(Int.self, forKey: .readers),
            isDownloading: try json.decode(Bool.self, forKey: .downloading),
            playable: try json.contains(.playable) ? json.decodePairs(ClosedRange<Double>.self, forKey: .playable) : nil)
    }
}

extension CacheStatus.Stream: Codable {
    private enum Keys: String, CodingKey {
        case kind, id, url, state, complete, variants, variantsRead = "variants_read", segments, segmentsCached = "segments_cached"
        case bytesCached = "bytes_cached", bytesOnDisk = "bytes_on_disk", lastAccess = "last_access", parts, readers, downloading
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
        try json.encode(readers, forKey: .readers)
        try json.encode(isDownloading, forKey: .downloading)
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
            lastAccess: try json.decode(Double.self, forKey: .lastAccess), parts: try json.decode([CacheStatus.File].self, forKey: .parts),
            readers: try json.decode(Int.self, forKey: .readers), isDownloading: try json.decode(Bool.self, forKey: .downloading))
    }
}
