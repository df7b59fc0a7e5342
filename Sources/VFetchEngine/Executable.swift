import Foundation

/// Where a program is: the path itself when it names one, else the first executable of that name on
/// `PATH`; nil when there is none.
package func findExecutable(_ program: String) -> String? {
    let files = FileManager.default
    if program.contains("/") { return files.isExecutableFile(atPath: program) ? program : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(program)" }.first { files.isExecutableFile(atPath: $0) }
}
