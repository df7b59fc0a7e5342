import Foundation
import TestOrigin
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a hostile client of the JSON API, a hostile origin or a damaged queue can do to `vfetch serve`
/// and `vfetch get`: each is refused in one line, never a crash, an endless wait or a header passed on.
@Suite struct HostileAPITests {
    /// One API request through curl: the status and the `error` of the answer.
    func api(_ server: ServerProcess, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws
        -> (status: Int, error: String)
    {
        var arguments = ["-s", "-X", method, "-H", "Authorization: Bearer \(try server.token())", "-w", "\n%{http_code}"]
        if let body { arguments += ["--data-binary", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)] }
        let answer = try await run("/usr/bin/curl", arguments + [server.base + path])
        var lines = answer.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        let status = lines.popLast().flatMap { Int($0) } ?? 0
        let object = try? JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8)) as? [String: Any]
        return (status, object?["error"] as? String ?? "")
    }

    /// Whether any request the origin saw carried a header of this name.
    func sawHeader(_ origin: TestOrigin, _ name: String) -> Bool {
        origin.requests.contains { request in request.headers.contains { $0.0.lowercased() == name.lowercased() } }
    }

    static let injected = "X-A: 1\r\nX-Injected: evil"

    @Test func serverChosenNamesAreNeitherHiddenNorTooLongForTheDisk() async throws {
        try await withOrigin { origin, directory in
            let bytes = randomBytes(64 << 10, seed: 178)
            var dotfile = OriginBehavior()
            dotfile.contentDisposition = #"attachment; filename=".bashrc""#
            origin.publish("/dot", bytes, behavior: dotfile)
            let hidden = try await vfetch(["get", origin.url("/dot"), "-d", directory])
            #expect(hidden.status == 0, "\(hidden)")
            #expect(exists(directory + "/bashrc") && !exists(directory + "/.bashrc"))

            // 150 two-byte characters: 300 bytes, more than a file name may have.
            var long = OriginBehavior()
            let name = String(repeating: "é", count: 150) + ".mp4"
            long.contentDisposition = "attachment; filename*=UTF-8''"
                + name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            origin.publish("/long", bytes, behavior: long)
            // 250 ASCII characters: the name fits, `NAME.vfetch` would not.
            var ascii = OriginBehavior()
            ascii.contentDisposition = #"attachment; filename=""# + String(repeating: "a", count: 246) + #".mp4""#
            origin.publish("/ascii", bytes, behavior: ascii)
            for path in ["/long", "/ascii"] {
                try FileManager.default.createDirectory(atPath: directory + path, withIntermediateDirectories: true)
                let saved = try await vfetch(["get", origin.url(path), "-d", directory + path])
                #expect(saved.status == 0, "\(path): \(saved)")
                let files = try FileManager.default.contentsOfDirectory(atPath: directory + path)
                #expect(files.count == 1 && files.allSatisfy { $0.hasSuffix(".mp4") && $0.utf8.count <= 244 }, "\(files)")
            }
        }
    }
}
