import Foundation

/// Times as an MPD writes them: `xs:duration` (`PT1H2M3.5S`, `P1DT2H`, `P0Y0M0DT0H0M10.000S`) and
/// `xs:dateTime` (`2024-05-01T12:00:00Z`).
enum MPDTime {
    /// The seconds an `xs:duration` says; nil for anything that is not one, a negative duration included.
    ///
    /// Years count 365 days and months 30, as DASH players count them (an MPD's durations are
    /// seconds to hours; the calendar never matters).
    static func duration(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.first == "P" else { return nil }
        var total = 0.0
        var number = ""
        var inTime = false
        // Each unit once, in order: Y M W D, then after T: H M S.
        var lastUnit = -1
        for character in text.dropFirst() {
            if character == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                continue
            }
            if character.isASCII, character.isNumber || character == "." {
                guard number.utf8.count < 32 else { return nil }
                number.append(character)
                continue
            }
            let unit: (order: Int, seconds: Double)
            switch (inTime, character) {
            case (false, "Y"): unit = (0, 365 * 86400)
            case (false, "M"): unit = (1, 30 * 86400)
            case (false, "W"): unit = (2, 7 * 86400)
            case (false, "D"): unit = (3, 86400)
            case (true, "H"): unit = (4, 3600)
            case (true, "M"): unit = (5, 60)
            case (true, "S"): unit = (6, 1)
            default: return nil
            }
            guard unit.order > lastUnit, number.contains(where: \.isNumber), let value = Double(number) else {
                return nil
            }
            total += value * unit.seconds
            number = ""
            lastUnit = unit.order
        }
        // "P", "PT" and "P1DT" name no time; a number must end in its unit.
        guard number.isEmpty, lastUnit >= 0, !inTime || lastUnit >= 4, total.isFinite else { return nil }
        return total
    }

    /// The moment an `xs:dateTime` names. One without a zone is taken as UTC, as DASH players take it.
    static func date(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.count < 64 else { return nil }
        let zoned = text.hasSuffix("Z") || text.dropFirst(10).contains("+") || text.dropFirst(10).contains("-")
        let full = zoned ? text : text + "Z"
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: full) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: full)
    }
}
