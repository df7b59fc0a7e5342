import Foundation
import VFetchCache
import VFetchCore
import VFetchEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The player cache server running on a cache directory, as its `server.json` names it: how `vfetch play`,
/// `vfetch add` and the cache commands, or another program, find the server of a cache directory.
public struct RunningServer: Sendable, Equatable {
    /// "http://HOST:PORT".
    public var url: String
    /// The port it listens on.
    public var port: Int
    /// The process serving it.
    public var pid: Int32

    /// The server running on `cacheDirectory`, if its record names one that proves it is this cache's
    /// server (it answers a challenge only the holder of the cache's token can); the token is sent to
    /// nothing else. After a kill -9 the record stays, and another program may listen there: that is
    /// ``Impostor``.
    public static func find(cacheDirectory: String) throws(Impostor) -> RunningServer? {
        let path = recordPath(cacheDirectory)
        guard let data = FileManager.default.contents(atPath: path),
            let record = try? JSONDecoder().decode(Record.self, from: data),
            let pid = pid_t(exactly: record.pid), pid > 0, kill(pid, 0) == 0 || errno == EPERM,
            let token = CacheDirectory.readToken(cacheDirectory: cacheDirectory), canConnect(host: record.host, port: record.port)
        else { return nil }
        let nonce = ServerProof.nonce()
        let answer = try? LocalRequest.send("GET", record.url + "/api/proof?nonce=" + nonce, token: nil, timeout: 5)
        let proof = answer.flatMap { try? JSONDecoder().decode(Proof.self, from: Data($0.body)) }?.proof
        guard proof == ServerProof.answer(token: token, nonce: nonce, port: record.port) else {
            throw Impostor(
                description: "\(record.host):\(record.port), named in \(path), is not this cache's server; its token was not sent")
        }
        return RunningServer(url: record.url, port: record.port, pid: pid)
    }

    /// What listens where a cache directory's record says its server does is not that server.
    public struct Impostor: Error, CustomStringConvertible {
        /// Where, and that its token was not sent.
        public let description: String
    }

    /// `server.json`, private as the cache's other files.
    private struct Record: Codable {
        var url: String
        var host: String
        var port: Int
        var pid: Int
    }

    private struct Proof: Decodable {
        var proof: String
    }

    static func recordPath(_ cacheDirectory: String) -> String { cacheDirectory + "/server.json" }

    /// Says that this process serves `cacheDirectory` at `url`.
    static func record(cacheDirectory: String, url: String, host: String, port: Int) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(Record(url: url, host: host, port: port, pid: Int(getpid()))) else { return }
        try? FileReplacement.write([UInt8](data), to: recordPath(cacheDirectory))
    }

    /// This process no longer serves `cacheDirectory`.
    static func forget(cacheDirectory: String) { try? FileManager.default.removeItem(atPath: recordPath(cacheDirectory)) }

    /// Whether something accepts TCP connections at host:port (a quick local check).
    private static func canConnect(host: String, port: Int) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0
    }
}
