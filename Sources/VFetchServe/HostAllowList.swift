#if canImport(Glibc)
    import Glibc
#endif

/// The `Host` values the server answers to, on any address it listens on: its port with an IP
/// address, `localhost`, the name it was told to listen on, or this machine's name. A web page that
/// rebinds its own name to the server's address sends its own name, and gets nothing.
struct HostAllowList: Sendable, Equatable {
    /// Lowercased names allowed besides IP addresses.
    var names: Set<String>
    var port: Int

    /// Allows nothing: the server before it knows the port it is bound to.
    static let none = HostAllowList(names: [], port: -1)

    /// The names of a server listening on `host`:`port`: those, `localhost` and this machine's name.
    static func listening(on host: String, port: Int) -> HostAllowList {
        var names: Set<String> = ["localhost", host.lowercased()]
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count) == 0 {
            let machine = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
            if !machine.isEmpty { names.formUnion([machine, machine + ".local"]) }
        }
        return HostAllowList(names: names, port: port)
    }

    func allows(_ header: String?) -> Bool {
        guard let (name, port) = header.flatMap(Self.split) else { return false }
        return port == self.port && (names.contains(name) || Self.isAddress(name))
    }

    /// `name:port` or `[v6]:port`, lowercased, with the default port 80.
    private static func split(_ header: String) -> (String, Int)? {
        let value = header.lowercased()
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            let name = String(value[value.index(after: value.startIndex)..<close])
            let rest = value[value.index(after: close)...]
            if rest.isEmpty { return (name, 80) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()) else { return nil }
            return (name, port)
        }
        guard let colon = value.lastIndex(of: ":") else { return (value, 80) }
        guard let port = Int(value[value.index(after: colon)...]) else { return nil }
        return (String(value[..<colon]), port)
    }

    private static func isAddress(_ name: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}
