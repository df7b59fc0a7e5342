/// The server's open player connections, and which to close when there are too many: idle ones
/// first, longest idle first, so sockets that never send a request (slowloris) cannot keep a
/// player out. A value type; the server holds it under a lock and closes what it answers.
package struct ConnectionTable<ID: Hashable & Sendable>: Sendable {
    private struct Connection {
        var busy = false
        /// When it became idle (accepted, or its last response ended).
        var idleSince: Double
    }

    /// Connections open at most.
    package let capacity: Int
    private var connections: [ID: Connection] = [:]

    package init(capacity: Int) { self.capacity = max(1, capacity) }

    package var count: Int { connections.count }

    /// A connection was accepted at `now` (seconds); returns the connections to close: the idle ones
    /// that have waited longest, or the new one itself when every other one is busy.
    package mutating func accepted(_ id: ID, now: Double) -> [ID] {
        connections[id] = Connection(idleSince: now)
        var closing: [ID] = []
        while connections.count > capacity {
            let idle = connections.filter { !$0.value.busy && $0.key != id }
            let victim = idle.min { $0.value.idleSince < $1.value.idleSince }?.key ?? id
            connections[victim] = nil
            closing.append(victim)
            if victim == id { break }
        }
        return closing
    }

    /// A request arrived on it.
    package mutating func busy(_ id: ID) { connections[id]?.busy = true }

    /// Its response ended at `now`.
    package mutating func idle(_ id: ID, now: Double) {
        guard connections[id] != nil else { return }
        connections[id] = Connection(busy: false, idleSince: now)
    }

    package mutating func closed(_ id: ID) { connections[id] = nil }
}
