import Foundation

/// A byte count as a person reads it: `3 B`, `512 MiB` (no `.0`), `1.5 GiB`;
/// the one way vfetch says a size in its messages and tables (`--json` keeps the raw numbers).
package func humanSize(_ bytes: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    var value = Double(bytes)
    var unit = 0
    // 1023.96 KiB would print as `1024.0 KiB`: what rounds to 1024 goes up a unit.
    while abs(value) >= 1023.95, unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    if unit == 0 { return "\(bytes) B" }
    let number = String(format: "%.1f", value)
    return (number.hasSuffix(".0") ? String(number.dropLast(2)) : number) + " " + units[unit]
}
