/// A command line split into words as a POSIX shell splits it, without expanding anything: blanks
/// separate words, single quotes keep everything, double quotes keep all but `\"` and `\\`, and a
/// backslash outside quotes keeps the next character. For `--player "mpv --no-video"`.
package enum ShellWords {
    package struct Unterminated: Error, CustomStringConvertible {
        package var description: String { "an unterminated quote or trailing backslash" }
    }

    package static func split(_ line: String) throws(Unterminated) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var characters = line.makeIterator()
        while let character = characters.next() {
            switch character {
            case " ", "\t", "\n":
                if inWord { words.append(word) }
                (word, inWord) = ("", false)
            case "'":
                inWord = true
                while true {
                    guard let next = characters.next() else { throw Unterminated() }
                    if next == "'" { break }
                    word.append(next)
                }
            case "\"":
                inWord = true
                while true {
                    guard let next = characters.next() else { throw Unterminated() }
                    if next == "\"" { break }
                    if next == "\\" {
                        guard let escaped = characters.next() else { throw Unterminated() }
                        if escaped != "\"" && escaped != "\\" { word.append("\\") }
                        word.append(escaped)
                    } else {
                        word.append(next)
                    }
                }
            case "\\":
                guard let escaped = characters.next() else { throw Unterminated() }
                inWord = true
                word.append(escaped)
            default:
                inWord = true
                word.append(character)
            }
        }
        if inWord { words.append(word) }
        return words
    }
}
