import ArgumentParser

/// A byte count on the command line: `1048576`, `512K`, `4M`, `1.5G`, `2MiB`.
struct ByteCount: ExpressibleByArgument {
    let bytes: Int64

    init?(argument: String) {
        var text = argument.trimmingCharacters(in: " ").uppercased()
        for suffix in ["IB", "B"] where text.hasSuffix(suffix) {
            text.removeLast(suffix.count)
            break
        }
        var scale: Double = 1
        if let unit = text.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(unit)] {
            scale = Double(1 << (10 * power))
            text.removeLast()
        }
        guard let number = Double(text), number >= 0, number * scale < 9e18 else { return nil }
        bytes = Int64(number * scale)
    }

    /// As a person writes it, in the largest unit that divides it: `10G`, `512M`, `64K`, `1000`.
    var defaultValueDescription: String {
        for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] where bytes > 0 && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
