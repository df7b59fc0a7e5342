import Foundation

/// Which web pages may read what serve answers (CORS), as `--allow-origin` says. Without it no page
/// may: a web page never reads the local cache unless the user said so.
package struct CrossOriginPolicy: Sendable, Equatable {
    /// Normalized origins (`scheme://host[:port]`), or `*` for any.
    package let origins: Set<String>

    /// What players send besides the CORS-safelisted headers.
    static let allowedHeaders = ["Range", "If-Range", "If-None-Match", "If-Modified-Since", "Cache-Control"]
    /// What pages may read of a response besides the safelisted headers.
    static let exposedHeaders = "Content-Range, Content-Length, Accept-Ranges, ETag"

    /// `origins` as given on the command line; throws the one that is not an origin.
    package init(allowing origins: [String]) throws(BadOrigin) {
        var normalized: Set<String> = []
        for origin in origins {
            guard let value = origin == "*" ? "*" : Self.normalized(origin) else { throw BadOrigin(value: origin) }
            normalized.insert(value)
        }
        self.origins = normalized
    }

    package struct BadOrigin: Error, CustomStringConvertible {
        package let value: String
        package var description: String {
            "--allow-origin '\(value)' is not an origin: give scheme://host[:port] (http or https, no path), or '*' for any page"
        }
    }

    /// `scheme://host[:port]` in lowercase, without a default port; nil when `value` is not an http(s) origin.
    package static func normalized(_ value: String) -> String? {
        guard let components = URLComponents(string: value), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil, components.query == nil, components.fragment == nil,
            components.path.isEmpty || components.path == "/"
        else { return nil }
        let defaultPort = scheme == "http" ? 80 : 443
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed)\(port)"
    }

    /// Whether a page of `origin` (a request's `Origin` header) may read the answers.
    package func allows(_ origin: String?) -> Bool {
        guard let origin else { return false }
        return origins.contains("*") || Self.normalized(origin).map(origins.contains) == true
    }

    /// Whether `--allow-origin` names `origin` itself (`*` does not): such a page is the user's own, and
    /// may make serve fetch from loopback and private addresses, as a player may.
    package func names(_ origin: String?) -> Bool {
        guard let origin, let normalized = Self.normalized(origin) else { return false }
        return origins.contains(normalized)
    }

    /// The headers of an answer to a request from `origin`: none without `--allow-origin`; with it, every
    /// answer says `Vary: Origin`, also one to a player (no `Origin`) or to a page not allowed, so that
    /// a cache in front of serve never hands an answer without CORS headers to an allowed page, nor one
    /// page's to another.
    package func responseHeaders(origin: String?) -> [(String, String)] {
        guard !origins.isEmpty else { return [] }
        guard let origin, allows(origin) else { return [("Vary", "Origin")] }
        return [
            ("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", Self.exposedHeaders),
            ("Vary", "Origin"),
        ]
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`): its headers, or nil
    /// to refuse it. Private Network Access preflights are allowed for allowed origins too.
    package func preflight(origin: String?, method: String, headers: String?, privateNetwork: Bool) -> [(String, String)]? {
        guard let origin, allows(origin), ["GET", "HEAD"].contains(method.uppercased()) else { return nil }
        let asked = (headers ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let known = Set(Self.allowedHeaders.map { $0.lowercased() })
        guard asked.allSatisfy({ known.contains($0.lowercased()) }) else { return nil }
        var answer: [(String, String)] = [
            ("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Methods", "GET, HEAD"),
            ("Access-Control-Allow-Headers", Self.allowedHeaders.joined(separator: ", ")),
            ("Access-Control-Max-Age", "600"), ("Vary", "Origin"),
        ]
        if privateNetwork { answer.append(("Access-Control-Allow-Private-Network", "true")) }
        return answer
    }
}
