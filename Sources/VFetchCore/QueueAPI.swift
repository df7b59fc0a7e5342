import Foundation

/// The JSON answers of serve's background-download API (`/api/…`), typed: the server encodes them and
/// the `vfetch` commands that call it (`add`, `ls`, `wait`, …) decode them, so the two cannot drift.
/// Keys are snake_case; a value that is not known is `null`, never left out. A new download is sent as
/// the queue's own `DownloadQueue.Request`.
package enum QueueAPI {
    /// One download, as `GET /api/downloads/ID` and the event stream show it.
    package struct Item: Codable, Sendable, Equatable {
        package var id: String
        /// Without its password.
        package var url: String
        package var state: DownloadQueue.State
        package var output: String
        /// The file it writes, once known.
        package var path: String?
        package var error: String?
        package var bytesDone: Int64?
        package var length: Int64?
        /// Bytes per second, while it runs.
        package var rate: Double?
        /// Seconds left at that rate.
        package var eta: Double?

        package init(id: String, url: String, state: DownloadQueue.State, output: String, path: String? = nil, error: String? = nil) {
            self.id = id
            self.url = url
            self.state = state
            self.output = output
            self.path = path
            self.error = error
        }

        enum CodingKeys: String, CodingKey {
            case id, url, state, output, path, error, bytesDone = "bytes_done", length, rate, eta
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(url, forKey: .url)
            try container.encode(state, forKey: .state)
            try container.encode(output, forKey: .output)
            try container.encode(path, forKey: .path)
            try container.encode(error, forKey: .error)
            try container.encode(bytesDone, forKey: .bytesDone)
            try container.encode(length, forKey: .length)
            try container.encode(rate, forKey: .rate)
            try container.encode(eta, forKey: .eta)
        }

        /// Whether it has yet to end: queued or running.
        package var isActive: Bool { state == .queued || state == .running }
    }

    /// `GET /api/downloads`: every download, in queue order.
    package struct Items: Codable, Sendable, Equatable {
        package var downloads: [Item]
        package init(downloads: [Item]) { self.downloads = downloads }
    }

    /// `GET` and `PUT /api/settings`.
    package struct Settings: Codable, Sendable, Equatable {
        package var maxConcurrent: Int
        /// nil: no limit.
        package var maxBytesPerSecond: Int64?

        package init(maxConcurrent: Int, maxBytesPerSecond: Int64?) {
            self.maxConcurrent = maxConcurrent
            self.maxBytesPerSecond = maxBytesPerSecond
        }

        enum CodingKeys: String, CodingKey {
            case maxConcurrent = "max_concurrent", maxBytesPerSecond = "max_bytes_per_second"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(maxConcurrent, forKey: .maxConcurrent)
            try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond)
        }
    }

    /// The answer to `POST /api/downloads`.
    package struct Created: Codable, Sendable, Equatable {
        package var id: String
        package init(id: String) { self.id = id }
    }

    /// The answer to `DELETE /api/downloads/ID`.
    package struct Removed: Codable, Sendable, Equatable {
        package var removed: String
        package init(removed: String) { self.removed = removed }
    }

    /// The answer to `DELETE /api/cache?entry=NAME`: the IDs of the cache entries removed.
    package struct CacheRemoved: Codable, Sendable, Equatable {
        package var removed: [String]
        package init(removed: [String]) { self.removed = removed }
    }

    /// A download's notice on the event stream (such as a wait for the origin's `Retry-After`).
    package struct Notice: Codable, Sendable, Equatable {
        package var id: String
        package var message: String
        package init(id: String, message: String) {
            self.id = id
            self.message = message
        }
    }

    /// Any refusal: 4xx and 5xx answers carry one line saying why.
    package struct Failure: Codable, Sendable, Equatable {
        package var error: String
        package init(error: String) { self.error = error }
    }
}

extension QueueAPI {
    /// Keys sorted, so an answer reads the same every time; snake_case, as the API spells them
    /// (`DownloadQueue.Request` names its fields in Swift's case).
    package static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }
}
