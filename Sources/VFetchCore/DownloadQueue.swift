/// The background downloads of `vfetch serve`: their order, their states, and which of them run.
///
/// A value-type state machine: the daemon tells it what the user asked and what ended, and does
/// the actions it answers (start or stop a download), so the queue's rules are tested without
/// sockets. It is saved as it is and, after a restart, `recover()` resumes it in order; a saved queue
/// whose numbers or requests it could never have made itself does not decode (see `init(from:)`).
package struct DownloadQueue: Codable, Sendable, Equatable {
    /// How many downloads may run at once: `max_concurrent`, `--max-downloads`.
    package static let concurrencyRange = 1...64
    /// The overall speed limit in bytes per second: at least 1, at most 1 TiB/s.
    package static let speedRange: ClosedRange<Int64> = 1...(1 << 40)
    /// The highest number an ID may have: JSON numbers are exact up to here, and no queue counts that far.
    package static let maxNumber = 1 << 53

    package enum State: String, Codable, Sendable {
        case queued, running, paused, done, failed
    }

    /// What to download, as the client asked.
    package struct Request: Codable, Sendable, Equatable {
        package var url: String
        /// An absolute path to write to, or a directory to write into under the server's file name.
        package var output: String
        package var outputIsDirectory: Bool
        package var connections: Int?
        package var headers: [String]
        /// `sha256=HEX` to verify the finished file.
        package var checksum: String?
        /// HLS/DASH: which tracks, as `get --format` takes them.
        package var format: String?
        /// Other URLs of the same file, as `get --mirror` takes them (`DownloadOptions.mirrors`); nil: none
        /// (and in a queue saved before there were any).
        package var mirrors: [String]?

        package init(
            url: String, output: String, outputIsDirectory: Bool, connections: Int? = nil, headers: [String] = [],
            checksum: String? = nil, format: String? = nil, mirrors: [String]? = nil
        ) {
            self.url = url
            self.output = output
            self.outputIsDirectory = outputIsDirectory
            self.connections = connections
            self.headers = headers
            self.checksum = checksum
            self.format = format
            self.mirrors = mirrors
        }

        /// Connections per download, as on the command line.
        package static let connectionRange = 1...256
        /// Mirrors per download at most: as many as a Metalink file's URLs vfetch reads.
        package static let maxMirrors = 64

        /// What is wrong with the request, naming the field; nil when it can be queued.
        package var problem: String? {
            if !isFetchableURL(url) { return "url must be an http or https URL" }
            if !output.hasPrefix("/") || output.contains("\0") { return "output must be an absolute path" }
            if let connections, !Self.connectionRange.contains(connections) { return "connections must be between 1 and 256" }
            for (index, header) in headers.enumerated() {
                if let problem = RequestHeader.problem(header) { return "headers[\(index)] \(problem)" }
            }
            if let checksum, sha256Digest(fromChecksum: checksum) == nil {
                return "checksum must be sha256= followed by 64 hex digits"
            }
            if let mirrors {
                if mirrors.count > Self.maxMirrors { return "mirrors must be at most \(Self.maxMirrors) URLs" }
                if let index = mirrors.firstIndex(where: { !isFetchableURL($0) }) {
                    return "mirrors[\(index)] must be an http or https URL"
                }
            }
            return nil
        }
    }

    package struct Item: Codable, Sendable, Equatable {
        package var id: String
        package var request: Request
        package var state: State
        /// Why it failed.
        package var error: String?
        /// The file's path, once the download knows it.
        package var path: String?
    }

    package enum Action: Equatable, Sendable {
        case start(String)
        /// Stop a running download; its data and manifest stay for a resume.
        case stop(String)
    }

    package private(set) var items: [Item] = []
    package private(set) var maxConcurrent = 3
    /// Overall limit in bytes per second, shared by the running downloads; nil: none.
    package var maxBytesPerSecond: Int64?
    private var nextNumber = 1

    package init() {}

    enum CodingKeys: String, CodingKey {
        case items, maxConcurrent, maxBytesPerSecond, nextNumber
    }

    /// Decodes a saved queue, refusing one it could not have saved: a counter out of range or not past every
    /// ID (the next add would overflow or give an ID twice), limits out of range, or a request the API would
    /// refuse (such as a header with a line break). The caller sets such a queue aside.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([Item].self, forKey: .items)
        maxConcurrent = try container.decode(Int.self, forKey: .maxConcurrent)
        maxBytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond)
        nextNumber = try container.decode(Int.self, forKey: .nextNumber)
        if let damage {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: damage))
        }
    }

    /// Why this queue cannot have been saved by `DownloadQueue`, or nil.
    private var damage: String? {
        guard (1...Self.maxNumber).contains(nextNumber) else { return "nextNumber \(nextNumber) is out of range" }
        guard Self.concurrencyRange.contains(maxConcurrent) else { return "maxConcurrent \(maxConcurrent) is out of range" }
        if let limit = maxBytesPerSecond, !Self.speedRange.contains(limit) {
            return "maxBytesPerSecond \(limit) is out of range"
        }
        var seen: Set<String> = []
        for item in items {
            guard seen.insert(item.id).inserted else { return "ID \(item.id) appears twice" }
            if let number = Int(item.id), number >= nextNumber { return "ID \(item.id) is not below nextNumber \(nextNumber)" }
            if let problem = item.request.problem { return "download \(item.id): \(problem)" }
        }
        return nil
    }

    package func item(_ id: String) -> Item? { items.first { $0.id == id } }

    package var running: [String] { items.filter { $0.state == .running }.map(\.id) }

    /// Appends a download; returns its ID and what to do. (The counter starts at most at `maxNumber`, 2^53:
    /// no queue adds the 2^63 - 2^53 downloads it would take to overflow it.)
    package mutating func add(_ request: Request) -> (id: String, actions: [Action]) {
        let id = String(nextNumber)
        nextNumber += 1
        items.append(Item(id: id, request: request, state: .queued))
        return (id, schedule())
    }

    /// Pauses a queued or running download; nil for an unknown ID.
    package mutating func pause(_ id: String) -> [Action]? {
        guard let index = items.firstIndex(where: { $0.id == id }) else { return nil }
        let wasRunning = items[index].state == .running
        guard [.queued, .running].contains(items[index].state) else { return [] }
        items[index].state = .paused
        return (wasRunning ? [.stop(id)] : []) + schedule()
    }

    /// Queues a paused or failed download again; nil for an unknown ID.
    package mutating func resume(_ id: String) -> [Action]? {
        guard let index = items.firstIndex(where: { $0.id == id }) else { return nil }
        guard [.paused, .failed].contains(items[index].state) else { return [] }
        items[index].state = .queued
        items[index].error = nil
        return schedule()
    }

    /// Forgets a download, stopping it if it runs; nil for an unknown ID.
    package mutating func remove(_ id: String) -> [Action]? {
        guard let index = items.firstIndex(where: { $0.id == id }) else { return nil }
        let wasRunning = items[index].state == .running
        items.remove(at: index)
        return (wasRunning ? [.stop(id)] : []) + schedule()
    }

    /// A running download learned where its file goes.
    package mutating func located(_ id: String, path: String) {
        guard let index = items.firstIndex(where: { $0.id == id }) else { return }
        items[index].path = path
    }

    /// A download ended by itself: done (even if it was being paused or requeued just then: its file
    /// is complete), or, when it was running, failed with `error`.
    package mutating func ended(_ id: String, error: String?) -> [Action] {
        guard let index = items.firstIndex(where: { $0.id == id }), items[index].state != .done else { return [] }
        if error != nil, items[index].state != .running { return [] }
        items[index].state = error == nil ? .done : .failed
        items[index].error = error
        return schedule()
    }

    /// At most `count` downloads run at once (clamped to `concurrencyRange`); the latest started stop first.
    package mutating func setMaxConcurrent(_ count: Int) -> [Action] {
        maxConcurrent = min(max(count, Self.concurrencyRange.lowerBound), Self.concurrencyRange.upperBound)
        return schedule()
    }

    /// After a restart: what was running is queued again, in its place, and the queue starts.
    package mutating func recover() -> [Action] {
        for index in items.indices where items[index].state == .running { items[index].state = .queued }
        return schedule()
    }

    /// Starts queued downloads in order while there is room; stops the last running beyond the limit.
    private mutating func schedule() -> [Action] {
        var actions: [Action] = []
        var running = items.indices.filter { items[$0].state == .running }
        while running.count > maxConcurrent, let last = running.popLast() {
            items[last].state = .queued
            actions.append(.stop(items[last].id))
        }
        for index in items.indices where items[index].state == .queued && running.count < maxConcurrent {
            items[index].state = .running
            running.append(index)
            actions.append(.start(items[index].id))
        }
        return actions
    }
}
