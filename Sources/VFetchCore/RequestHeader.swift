/// An extra request header as the user or an API client writes it, `Name: value`, checked before it
/// reaches libcurl, which sends each line as it is: a CR or LF inside would end the header early and
/// start another one (a header injection), a NUL would cut it short.
package enum RequestHeader {
    /// What is wrong with `line`, as the end of a sentence that names it ("must look like …"); nil when
    /// it can be sent.
    package static func problem(_ line: String) -> String? {
        if line.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
            return "must not contain CR, LF or NUL"
        }
        guard let colon = line.firstIndex(of: ":"), !line[..<colon].isEmpty, line[..<colon].unicodeScalars.allSatisfy(isTokenCharacter)
        else { return "must look like 'Name: value' (a name of letters, digits and !#$%&'*+-.^_`|~)" }
        return nil
    }

    /// RFC 9110's `tchar`: what a header name is made of.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": true
        case "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~": true
        default: false
        }
    }
}
