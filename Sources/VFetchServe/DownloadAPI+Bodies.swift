import Foundation
import VFetchCore

// The JSON bodies the API accepts, decoded into types: a value of the wrong type, a number out of range
// or a field the API does not know is answered with 400 naming the field, never coerced or ignored.
extension DownloadAPI {
    /// The body of `POST /api/downloads`. Optional fields may be left out or null.
    struct NewDownload: Decodable {
        var url: String
        var output: String
        var outputIsDirectory: Bool?
        var connections: Int?
        var headers: [String]?
        var checksum: String?
        var format: String?
        var mirrors: [String]?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case url, output, outputIsDirectory = "output_is_directory", connections, headers, checksum, format, mirrors
        }

        /// What each field must be, for the answer to a value that is not.
        static let expected: [String: String] = [
            "url": "an http or https URL", "output": "an absolute path", "output_is_directory": "true or false",
            "connections": "an integer between 1 and 256", "headers": "a list of 'Name: value' strings",
            "checksum": "sha256= followed by 64 hex digits", "format": "a --format selector such as 720p or best",
            "mirrors": "a list of http or https URLs of the same file",
        ]

        init(from decoder: any Decoder) throws {
            try refuseUnknownKeys(decoder, CodingKeys.self)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.field(String.self, .url)
            output = try container.field(String.self, .output)
            outputIsDirectory = try container.optionalField(Bool.self, .outputIsDirectory)
            connections = try container.optionalField(Int.self, .connections)
            headers = try container.optionalField([String].self, .headers)
            checksum = try container.optionalField(String.self, .checksum)
            format = try container.optionalField(String.self, .format)
            mirrors = try container.optionalField([String].self, .mirrors)
        }

        var request: DownloadQueue.Request {
            DownloadQueue.Request(
                url: url, output: output, outputIsDirectory: outputIsDirectory ?? false, connections: connections,
                headers: headers ?? [], checksum: checksum, format: format, mirrors: mirrors)
        }
    }

    /// The body of `PUT /api/settings`: what it leaves out stays as it is.
    struct SettingsChange: Decodable {
        var maxConcurrent: Int?
        /// `.some(nil)`: `null`, no limit any more.
        var maxBytesPerSecond: Int64??

        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxConcurrent = "max_concurrent", maxBytesPerSecond = "max_bytes_per_second"
        }

        static let expected: [String: String] = [
            "max_concurrent":
                "an integer between \(DownloadQueue.concurrencyRange.lowerBound) and \(DownloadQueue.concurrencyRange.upperBound)",
            "max_bytes_per_second": "an integer between 1 and \(DownloadQueue.speedRange.upperBound), or null",
        ]

        init(from decoder: any Decoder) throws {
            try refuseUnknownKeys(decoder, CodingKeys.self)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if container.contains(.maxConcurrent) { maxConcurrent = try container.field(Int.self, .maxConcurrent) }
            if container.contains(.maxBytesPerSecond) {
                maxBytesPerSecond = .some(try container.optionalField(Int64.self, .maxBytesPerSecond))
            }
        }

        /// The first field out of range, named.
        var problem: String? {
            if let count = maxConcurrent, !DownloadQueue.concurrencyRange.contains(count) {
                return "max_concurrent must be \(Self.expected["max_concurrent"]!)"
            }
            if case .some(.some(let limit)) = maxBytesPerSecond, !DownloadQueue.speedRange.contains(limit) {
                return "max_bytes_per_second must be \(Self.expected["max_bytes_per_second"]!)"
            }
            return nil
        }
    }

    /// A body decoded as `Body`, or the one-line reason it is not one, naming the field.
    static func decode<Body: Decodable>(_ type: Body.Type, from body: [UInt8], expected: [String: String]) -> Result<Body, Refusal> {
        do {
            return .success(try JSONDecoder().decode(type, from: Data(body)))
        } catch let error as DecodingError {
            return .failure(Refusal(describe(error, expected: expected)))
        } catch {
            return .failure(Refusal("the body must be a JSON object"))
        }
    }

    static func describe(_ error: DecodingError, expected: [String: String]) -> String {
        let path: [any CodingKey]
        switch error {
        case .keyNotFound(let key, let context):
            if context.codingPath.isEmpty { return "\(key.stringValue) is missing: it must be \(expected[key.stringValue] ?? "given")" }
            path = context.codingPath + [key]
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        @unknown default:
            return "the body must be a JSON object"
        }
        guard let field = path.first?.stringValue else { return "the body must be a JSON object" }
        guard let what = expected[field] else { return "unknown field '\(field)'" }
        return "\(field) must be \(what)"
    }
}

extension KeyedDecodingContainer {
    /// The value of `key`; every failure names the key (Foundation's decoder reports a fraction, or a number
    /// too large for an integer, as invalid JSON with no key).
    fileprivate func field<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        do {
            return try decode(type, forKey: key)
        } catch {
            throw DecodingError.typeMismatch(type, DecodingError.Context(codingPath: codingPath + [key], debugDescription: "\(error)"))
        }
    }

    /// The same, nil when the key is missing or null.
    fileprivate func optionalField<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        try !contains(key) || decodeNil(forKey: key) ? nil : field(type, key)
    }
}

/// Throws for a key of the object that `Keys` does not name: a misspelt field would otherwise be ignored
/// without a word.
private func refuseUnknownKeys<Keys: CodingKey & CaseIterable>(_ decoder: any Decoder, _: Keys.Type) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    let known = Set(Keys.allCases.map(\.stringValue))
    if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
        throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [unknown], debugDescription: "unknown field"))
    }
}

/// Any key of a JSON object.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
