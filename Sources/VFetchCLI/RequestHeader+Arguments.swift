import ArgumentParser
import VFetchCore
import VFetchEngine

extension RequestHeader {
    /// Refuses, in one line, a `-H` value libcurl could not send as written: no line break, no NUL, a
    /// `Name: value` shape. The line is shown escaped, so its line breaks do not break the message,
    /// and without the value of a credential header (`redactedHeader`).
    static func validate(_ lines: [String]) throws {
        for line in lines {
            if let problem = problem(line) { throw ValidationError("header \(String(reflecting: redactedHeader(line))) \(problem)") }
        }
    }

    /// Refuses a value of a header option (`--user-agent`, `--referer`) with a line break or NUL in it.
    static func validate(_ value: String?, option: String) throws {
        guard let value, value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else { return }
        throw ValidationError("--\(option) \(String(reflecting: value)) must not contain CR, LF or NUL")
    }
}
