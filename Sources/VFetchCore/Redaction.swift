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

/// `text` (a message, an error) as it may be shown: the user information of every URL in it redacted
/// as `redactedURL` does, and every run of more than `longestShownRun` characters without white space
/// (a URI a hostile playlist made megabytes long) cut to its start and how much was left out.
/// A URL's authority is taken to end at `/`, `?`, `#`, white space, `"`, `<` or `>`; its user
/// information is what comes before the last `@` in it.
package func redactingCredentials(in text: String) -> String {
    clippingLongRuns(in: redactedUserInformation(in: text))
}

/// The longest run of non-space characters shown whole: a signed CDN URL fits, a URI of megabytes does not.
package let longestShownRun = 2048

private func clippingLongRuns(in text: String) -> String {
    guard text.utf8.count > longestShownRun else { return text }
    let bytes = Array(text.utf8)
    func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
    var shown: [UInt8] = []
    var start = 0
    while start < bytes.count {
        var end = start
        while end < bytes.count, !isSpace(bytes[end]) { end += 1 }
        if end - start > longestShownRun {
            var cut = start + longestShownRun / 2
            while bytes[cut] & 0xC0 == 0x80 { cut -= 1 }  // not inside a character's UTF-8 bytes
            shown += bytes[start..<cut]
            shown += Array("…(\(end - cut) more bytes)".utf8)
        } else {
            shown += bytes[start..<end]
        }
        start = end
        while start < bytes.count, isSpace(bytes[start]) { start += 1 }
        shown += bytes[end..<start]
    }
    return String(decoding: shown, as: UTF8.self)
}

private func redactedUserInformation(in text: String) -> String {
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
