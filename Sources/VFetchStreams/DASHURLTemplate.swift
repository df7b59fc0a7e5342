/// A DASH segment URL template (`SegmentTemplate@media`, `@initialization`): text with fields such as
/// `$RepresentationID$`, `$Number$` or `$Number%05d$` that each segment fills in, and `$$` for a `$`.
struct DASHURLTemplate: Equatable {
    enum Field: String, CaseIterable {
        case representationID = "RepresentationID"
        case number = "Number"
        case time = "Time"
        case bandwidth = "Bandwidth"
    }

    enum Part: Equatable {
        case text(String)
        /// A field, its number padded with zeros to `width` digits (`%05d`; 0 pads nothing).
        case field(Field, width: Int)
    }

    /// A wider field is a hostile template: `Int64` has 19 digits.
    static let maxWidth = 64

    var parts: [Part]

    /// Reads a template; an unknown field (`$SubNumber$`, `$Foo$`), a format other than `%0<width>d`
    /// or an unpaired `$` is an error.
    init(_ template: String) throws(StreamParseError) {
        let pieces = template.split(separator: "$", omittingEmptySubsequences: false)
        guard pieces.count % 2 == 1 else {
            throw StreamParseError("the template \"\(template.prefix(80))\" has an unpaired $")
        }
        var parts: [Part] = []
        for (index, piece) in pieces.enumerated() {
            if index % 2 == 0 {
                if !piece.isEmpty { parts.append(.text(String(piece))) }
                continue
            }
            if piece.isEmpty {
                parts.append(.text("$"))
                continue
            }
            let name = piece.prefix { $0 != "%" }
            guard let field = Field(rawValue: String(name)) else {
                throw StreamParseError(
                    "the template \"\(template.prefix(80))\" has the unknown identifier $\(piece.prefix(40))$")
            }
            let format = piece.dropFirst(name.count)
            var width = 0
            if !format.isEmpty {
                // %0<width>d, as in C; %d alone pads nothing.
                let digits = format.dropFirst().dropLast()
                guard format.first == "%", format.last == "d", format.count >= 2, digits.allSatisfy(\.isASCII),
                    digits.allSatisfy(\.isNumber), digits.isEmpty || digits.first == "0",
                    let value = digits.isEmpty ? 0 : Int(digits), value <= Self.maxWidth
                else {
                    throw StreamParseError(
                        "the template \"\(template.prefix(80))\" has the format \(format.prefix(40)), not %0<width>d")
                }
                width = value
            }
            parts.append(.field(field, width: width))
        }
        // Adjacent text parts (around a `$$`) join, so equal templates compare equal.
        self.parts = parts.reduce(into: []) { joined, part in
            if case .text(let next) = part, case .text(let previous)? = joined.last {
                joined[joined.count - 1] = .text(previous + next)
            } else {
                joined.append(part)
            }
        }
    }

    /// Whether the template has `field`.
    func uses(_ field: Field) -> Bool {
        parts.contains { if case .field(field, _) = $0 { true } else { false } }
    }

    /// The template with every field filled. A template with `$Bandwidth$` needs a `bandwidth`; one
    /// that makes more than `SegmentBudget.maxURLBytes` (a long id, repeated) is refused as it grows.
    func expand(representationID: String, number: Int, time: Int64, bandwidth: Int?) throws(StreamParseError) -> String {
        var result = ""
        for part in parts {
            switch part {
            case .text(let text):
                result += text
            case .field(.representationID, _):
                result += representationID
            case .field(.number, let width):
                result += Self.padded(String(number), width)
            case .field(.time, let width):
                result += Self.padded(String(time), width)
            case .field(.bandwidth, let width):
                guard let bandwidth else {
                    throw StreamParseError("the template has $Bandwidth$ but the Representation has no bandwidth")
                }
                result += Self.padded(String(bandwidth), width)
            }
            guard result.utf8.count <= SegmentBudget.maxURLBytes else {
                throw StreamParseError(
                    "the template \"\(written.prefix(80))\" makes a URL longer than \(SegmentBudget.maxURLBytes) bytes")
            }
        }
        return result
    }

    /// The template as it reads in a manifest, for messages.
    private var written: String {
        parts.map { part in
            switch part {
            case .text(let text): text.replacingOccurrences(of: "$", with: "$$")
            case .field(let field, 0): "$\(field.rawValue)$"
            case .field(let field, let width): "$\(field.rawValue)%0\(width)d$"
            }
        }.joined()
    }

    private static func padded(_ digits: String, _ width: Int) -> String {
        digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
