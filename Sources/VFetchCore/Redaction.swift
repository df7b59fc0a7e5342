// Credentials kept off the screen: what vfetch shows or logs of a URL or a request header never
// carries a password, a token or a cookie. The files that must keep them to resume (manifests,
// `queue.json`) keep the real values and are private (mode 0600) instead.
//
// A signed URL's query string (`?X-Amz-Signature=…&Expires=…`) is shown as it is: it names what
// is downloading and, for `vfetch serve`, which cache entry a player reads; such a signature is
// short-lived and grants only that one file, where a password or a cookie opens the account.

/// `url` with the password of its user information replaced by `***`: `https://ann:pw@host/a`
/// becomes `https://ann:***@host/a`, `https://:pw@host/a` becomes `https://:***@host/a`. A user
/// name alone (`https://TOKEN@host/a`) is replaced as a whole, since hosts take tokens there.
/// Anything that is not such a URL is returned as it is.
package func redactedURL(_ url: String) -> String {
    redactingCredentials(in: url)
}

/// The header names whose values are credentials.
package let credentialHeaderNames: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

/// A request header line `Name: value` as it may be shown: the value of `Authorization`,
/// `Proxy-Authorization`, `Cookie` and `Set-Cookie` (in any case) becomes `***`; other headers and
/// lines without a colon are returned as they are.
package func redactedHeader(_ line: String) -> String {
    guard let colon = line.firstIndex(of: ":") else { return line }
    let name = line[..<colon].trimmingWhitespace()
    guard credentialHeaderNames.contains(name.lowercased()) else { return line }
    return line[..<colon] + ": ***"
}

/// `text` (a message, an error) with the user information of every URL in it redacted as
/// `redactedURL` does. A URL's authority is taken to end at `/`, `?`, `#`, white space, `"`, `<` or
/// `>`; its user information is what comes before the last `@` in it.
package func redactingCredentials(in text: String) -> String {
    var result = ""
    var rest = text[...]
    while let separator = rest.range(of: "://") {
        result += rest[..<separator.upperBound]
        rest = rest[separator.upperBound...]
        let authorityEnd = rest.firstIndex(where: endsAuthority) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { continue }
        result += redactedUserInformation(rest[..<at])
        rest = rest[at...]
    }
    return result + rest
}

private func endsAuthority(_ character: Character) -> Bool {
    character.isWhitespace || "/?#\"<>".contains(character)
}

private func redactedUserInformation(_ userInformation: Substring) -> String {
    if userInformation.isEmpty { return "" }
    guard let colon = userInformation.firstIndex(of: ":") else { return "***" }
    return userInformation[..<colon] + ":***"
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        let start = drop(while: \.isWhitespace)
        guard let last = start.lastIndex(where: { !$0.isWhitespace }) else { return start }
        return start[...last]
    }
}
