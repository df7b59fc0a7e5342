/// 3GPP timed text (`mov_text`, `tx3g`), the only subtitles MP4 players read. A WebVTT cue becomes
/// one sample of its plain text, as `ffmpeg -c:s mov_text` makes it: markup (`<i>`, `<c.yellow>`)
/// and cue settings are dropped, character references decoded.
enum MovText {
    /// The sample description libavcodec's encoder writes: text centred at the bottom, white on
    /// black, 16 point, one font (Arial).
    static let sampleDescription: [UInt8] =
        [0, 0, 0, 0, 0x01, 0xFF, 0, 0, 0, 0xFF]  // display flags; centred, bottom; background
        + [0, 0, 0, 0, 0, 0, 0, 0]  // text box: the whole picture
        + [0, 0, 0, 0, 0, 1, 0, 0x10, 0xFF, 0xFF, 0xFF, 0xFF]  // style: font 1, 16 point, white
        + [0, 0, 0, 0x12] + Array("ftab".utf8) + [0, 1, 0, 1, 5] + Array("Arial".utf8)

    /// A sample: the text's length in two bytes, then the text (at most 65535 bytes, cut at a
    /// character's start).
    static func sample(fromWebVTT cue: [UInt8]) -> [UInt8] {
        var text = Array(plainText(String(decoding: cue, as: UTF8.self)).utf8)
        if text.count > 0xFFFF {
            var end = 0xFFFF
            while end > 0, text[end] & 0xC0 == 0x80 { end -= 1 }
            text.removeSubrange(end...)
        }
        return [UInt8(text.count >> 8), UInt8(text.count & 0xFF)] + text
    }

    /// A cue's text without its tags, its character references decoded.
    static func plainText(_ cue: String) -> String {
        var plain = ""
        var inTag = false
        var reference: String?
        for character in cue {
            if inTag {
                if character == ">" { inTag = false }
            } else if var name = reference {
                if character == ";" {
                    plain += references[name] ?? "&\(name);"
                    reference = nil
                } else if character.isLetter || character.isNumber || character == "#", name.count < 8 {
                    name.append(character)
                    reference = name
                } else {
                    plain += "&\(name)"
                    reference = nil
                    if character == "<" { inTag = true } else { plain.append(character) }
                }
            } else if character == "<" {
                inTag = true
            } else if character == "&" {
                reference = ""
            } else {
                plain.append(character)
            }
        }
        if let name = reference { plain += "&\(name)" }
        return plain
    }

    /// The references WebVTT defines by name (a numeric one stays as written).
    private static let references = [
        "amp": "&", "lt": "<", "gt": ">", "nbsp": "\u{A0}", "lrm": "\u{200E}", "rlm": "\u{200F}", "quot": "\"", "apos": "'",
    ]
}
