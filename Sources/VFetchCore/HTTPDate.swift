/// HTTP dates (IMF-fixdate, RFC 9110 §5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
///
/// Hand-rolled so the output never depends on a locale or a formatter's configuration.
package enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats whole seconds since 1970-01-01 00:00:00 UTC.
    package static func format(epochSeconds: Int) -> String {
        let days = floorDiv(epochSeconds, 86_400)
        let secondOfDay = epochSeconds - days * 86_400
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        // 1970-01-01 was a Thursday (index 4).
        let weekday = weekdays[((days % 7) + 11) % 7]
        return "\(weekday), \(pad(day)) \(months[month - 1]) \(year) "
            + "\(pad(secondOfDay / 3600)):\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }

    /// Whole seconds since 1970 of an IMF-fixdate; nil for anything else (the obsolete RFC 850 and
    /// asctime forms are not worth trusting in a condition).
    package static func parse(_ value: String) -> Int? {
        let parts = value.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", parts[0].count == 4, parts[0].hasSuffix(","),
            let day = Int(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int($0) }
        guard time.count == 3, (1...31).contains(day), (0...23).contains(time[0]), (0...59).contains(time[1]),
            (0...60).contains(time[2]), (1...9999).contains(year)
        else { return nil }
        return daysSinceEpoch(year: year, month: monthIndex + 1, day: day) * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
    }

    /// Howard Hinnant's days-from-civil algorithm, the inverse of `civilDate`.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    private static func civilDate(daysSinceEpoch: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDiv(_ a: Int, _ b: Int) -> Int {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    private static func pad(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
