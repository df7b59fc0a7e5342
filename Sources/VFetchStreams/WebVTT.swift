/// WebVTT subtitles as HLS and DASH cut them: one small WebVTT file per segment, each with its own
/// header and usually an `X-TIMESTAMP-MAP` that ties its cue times to the media's clock (RFC 8216
/// 3.5). Concatenated, such files are not one WebVTT file, and their times are not the video's;
/// `join` makes one file on the media's clock, as a player shows the cues.
package enum WebVTT {
    /// One cue: its times in seconds on the media's clock, its settings (`line:0 align:start`) and text.
    package struct Cue: Equatable, Hashable, Sendable {
        package var start: Double
        package var end: Double
        package var settings: String
        package var text: String

        package init(start: Double, end: Double, settings: String = "", text: String) {
            self.start = start
            self.end = end
            self.settings = settings
            self.text = text
        }
    }

    /// Whether `bytes` begin as a WebVTT file does (after an optional byte order mark).
    package static func isWebVTT<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes.dropFirst(0)
        guard body.starts(with: "WEBVTT".utf8) else { return false }
        let after = body.dropFirst(6).first
        return after == nil || after == UInt8(ascii: "\n") || after == UInt8(ascii: "\r") || after == UInt8(ascii: " ")
            || after == UInt8(ascii: "\t")
    }

    /// The cues of one segment on the media's clock (a cue at `LOCAL` is at `MPEGTS` / 90 kHz), moved by
    /// `shift` seconds; a cue that then ends before zero is left out.
    /// Comments, styles and regions are left out; a block that is not a cue is skipped, as players
    /// skip it. Throws only for a file that is not WebVTT at all.
    package static func cues(of bytes: [UInt8], shift: Double = 0) throws(StreamParseError) -> [Cue] {
        guard isWebVTT(bytes) else { throw StreamParseError("not a WebVTT file (it does not begin with WEBVTT)") }
        let text = String(decoding: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...], as: UTF8.self)
        let blocks = lines(of: text).split(whereSeparator: \.isEmpty)
        guard let header = blocks.first else { return [] }
        let offset = (header.lazy.compactMap(timestampMapOffset).first ?? 0) + shift
        var cues: [Cue] = []
        for block in blocks.dropFirst() {
            // An identifier line may come before the timings; a NOTE, STYLE or REGION block has none.
            guard let timing = block.prefix(2).firstIndex(where: { $0.contains("-->") }),
                let (start, end, settings) = parseTiming(block[timing])
            else { continue }
            // A line with `-->` ends a cue's text (WebVTT's parser); written out, it would read as a timing.
            let text = block[(timing + 1)...].prefix { !$0.contains("-->") }.joined(separator: "\n")
            guard !text.isEmpty, end + offset > 0 else { continue }
            cues.append(Cue(start: max(0, start + offset), end: end + offset, settings: settings, text: text))
        }
        return cues
    }

    /// One WebVTT file of every segment's cues moved by `shift` seconds, in order of start, a cue
    /// repeated in the segments it spans kept once.
    package static func join(_ segments: [[UInt8]], shift: Double = 0) throws(StreamParseError) -> [UInt8] {
        var all: [Cue] = []
        for (index, segment) in segments.enumerated() {
            do { all += try cues(of: segment, shift: shift) } catch {
                throw StreamParseError("subtitle segment \(index + 1): \(error.description)")
            }
        }
        return document(all)
    }

    /// A WebVTT file of `cues` in order of start (cues that start together keep their order), each
    /// repeated cue once.
    package static func document(_ cues: [Cue]) -> [UInt8] {
        var seen = Set<Cue>()
        let unique = cues.filter { seen.insert($0).inserted }
        let ordered = unique.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        var document = "WEBVTT\n"
        for cue in ordered {
            let settings = cue.settings.isEmpty ? "" : " " + cue.settings
            document += "\n\(timestamp(cue.start)) --> \(timestamp(cue.end))\(settings)\n\(cue.text)\n"
        }
        return Array(document.utf8)
    }

    /// A time as WebVTT writes it: `hh:mm:ss.ttt`, to the millisecond.
    package static func timestamp(_ seconds: Double) -> String {
        let milliseconds = Int64((max(0, seconds) * 1000).rounded())
        let (hours, rest) = milliseconds.quotientAndRemainder(dividingBy: 3_600_000)
        let (minutes, rest2) = rest.quotientAndRemainder(dividingBy: 60_000)
        let (secondsPart, millis) = rest2.quotientAndRemainder(dividingBy: 1000)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(hours, 2)):\(pad(minutes, 2)):\(pad(secondsPart, 2)).\(pad(millis, 3))"
    }

    /// A time as WebVTT reads it: `mm:ss.ttt` or `hh:mm:ss.ttt`; nil for anything else.
    package static func seconds(_ text: Substring) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, let last = parts.last else { return nil }
        let fraction = last.split(separator: ".", omittingEmptySubsequences: false)
        guard fraction.count == 2, fraction[0].count == 2, fraction[1].count == 3 else { return nil }
        let fields = parts.dropLast().map { $0 } + [fraction[0], fraction[1]]
        guard fields.allSatisfy({ !$0.isEmpty && $0.count <= 10 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let millis = Double(fraction[1]), let wholeSeconds = Double(fraction[0]), wholeSeconds < 60
        else { return nil }
        let minutes = Double(parts[parts.count - 2]) ?? 0
        let hours = parts.count == 3 ? Double(parts[0]) ?? 0 : 0
        guard minutes < 60 || parts.count == 2 else { return nil }
        return hours * 3600 + minutes * 60 + wholeSeconds + millis / 1000
    }

    /// Lines ending at LF, CRLF or CR, as WebVTT allows.
    private static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
    }

    /// `start --> end settings`.
    private static func parseTiming(_ line: Substring) -> (Double, Double, String)? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 3, words[1] == "-->", let start = seconds(words[0]), let end = seconds(words[2]), end >= start else {
            return nil
        }
        return (start, end, words.dropFirst(3).joined(separator: " "))
    }

    /// `X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000` (either order): seconds to add to a cue's time.
    private static func timestampMapOffset(_ line: Substring) -> Double? {
        guard line.hasPrefix("X-TIMESTAMP-MAP=") else { return nil }
        var mpegts: Double?
        var local: Double?
        for field in line.dropFirst("X-TIMESTAMP-MAP=".count).split(separator: ",") {
            let field = field.trimmingSpaces
            if field.hasPrefix("MPEGTS:"), let ticks = UInt64(field.dropFirst(7)), ticks < 1 << 33 {
                mpegts = Double(ticks) / 90_000
            } else if field.hasPrefix("LOCAL:") {
                local = seconds(field.dropFirst(6))
            }
        }
        guard let mpegts else { return nil }
        return mpegts - (local ?? 0)
    }
}
