import Foundation

/// Which tracks of a stream to save: by default the best video (highest bandwidth) with its audio, or
/// what a `--format` selector asks for.
///
/// A selector is comma-separated terms that all must hold for the video (or muxed) variant:
/// `best`, `worst`, `720p` (at most 720 lines), `height<=720`, `height=1080`, `width>=1280`,
/// `bandwidth<=2M` (bits per second; k, M, G), `codec=avc1` (a codec string's prefix). `lang=en` (a
/// language tag's prefix) picks the audio; repeated, one audio track per language, and `lang=all` every
/// audio track the variant plays with, as yt-dlp's `--audio-multistreams`. `sub=en` (repeatable) or
/// `sub=all` adds subtitle tracks, as yt-dlp's `--sub-langs`; by default none. `id=v2`, or `v2` alone,
/// picks a track by the id `info` lists (repeatable).
package struct TrackSelection: Sendable, Equatable {
    private enum Term: Equatable {
        case best, worst
        case compare(field: String, comparison: String, value: Int)
        case codec(String)
        case language(String)
        case subtitles(String)
        case id(String)
    }

    private var terms: [Term]

    /// Parses a selector; nil or empty means `best`.
    package init(_ selector: String?) throws(StreamParseError) {
        terms = []
        for raw in (selector ?? "").split(separator: ",") {
            let term = raw.trimmingCharacters(in: .whitespaces).lowercased()
            guard !term.isEmpty else { continue }
            terms.append(try Self.parse(term))
        }
    }

    private static func parse(_ term: String) throws(StreamParseError) -> Term {
        if term == "best" { return .best }
        if term == "worst" { return .worst }
        if term.hasSuffix("p"), let lines = Int(term.dropLast()), lines > 0 {
            return .compare(field: "height", comparison: "<=", value: lines)
        }
        for prefix in ["codec=", "lang=", "sub=", "id="] where term.hasPrefix(prefix) {
            let value = String(term.dropFirst(prefix.count))
            guard !value.isEmpty else { break }
            switch prefix {
            case "codec=": return .codec(value)
            case "lang=": return .language(value)
            case "sub=": return .subtitles(value)
            default: return .id(value)
            }
        }
        for comparison in ["<=", ">=", "=", "<", ">"] {
            guard let at = term.range(of: comparison) else { continue }
            let field = String(term[..<at.lowerBound]).replacingOccurrences(of: "bw", with: "bandwidth")
            guard ["height", "width", "bandwidth"].contains(field), let value = Self.number(term[at.upperBound...]) else { break }
            return .compare(field: field, comparison: comparison, value: value)
        }
        // A bare name is a track's id, as yt-dlp's `-f 137` is a format's.
        if term.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./:".contains($0)) }) { return .id(term) }
        throw StreamParseError(
            "bad format selector '\(term)': use best, worst, 720p, height<=720, bandwidth<=2M, codec=avc1, lang=en, sub=en or id=ID")
    }

    /// `2M`, `500k`, `1080`: a count with an optional k, M or G (powers of 1000, as bandwidths are written).
    private static func number(_ text: Substring) -> Int? {
        let scale: Int
        var digits = text
        switch text.last {
        case "k": scale = 1_000
        case "m": scale = 1_000_000
        case "g": scale = 1_000_000_000
        default: scale = 1
        }
        if scale != 1 { digits = digits.dropLast() }
        guard let value = Double(digits), value >= 0, value * Double(scale) < 1e15 else { return nil }
        return Int(value * Double(scale))
    }

    /// The tracks to save, video first; throws when nothing matches, naming what there is.
    package func tracks(of catalog: StreamCatalog) throws(StreamParseError) -> [StreamTrack] {
        let ids = terms.compactMap { if case .id(let id) = $0 { id } else { nil } }
        if !ids.isEmpty {
            let chosen = catalog.tracks.filter { ids.contains($0.id.lowercased()) }
            guard chosen.count == Set(ids).count else { throw noMatch(catalog) }
            return chosen
        }
        let videos = catalog.tracks.filter { $0.kind == .video || $0.kind == .muxed }
        var chosen: [StreamTrack] = []
        if !videos.isEmpty {
            let matching = videos.filter(matches)
            guard let video = terms.contains(.worst) ? matching.min(by: Self.lower) : matching.max(by: Self.lower) else {
                throw noMatch(catalog)
            }
            chosen.append(video)
        }
        // HLS: the renditions of the chosen variant's groups; DASH: any.
        let audioGroup = chosen.first?.audioGroup
        let audios = catalog.tracks.filter {
            $0.kind == .audio && $0.segments != .none && (audioGroup == nil || $0.audioGroup == audioGroup)
        }
        let languages = terms.compactMap { if case .language(let language) = $0 { language } else { nil } }
        if languages.isEmpty {
            if let audio = audios.max(by: Self.lessPreferred) { chosen.append(audio) }
        } else {
            chosen += try pick(languages, from: audios, catalog)
        }
        let subtitleGroup = chosen.first?.subtitleGroup
        let subtitles = catalog.tracks.filter {
            $0.kind == .subtitles && $0.segments != .none && (subtitleGroup == nil || $0.subtitleGroup == subtitleGroup)
        }
        chosen += try pick(terms.compactMap { if case .subtitles(let language) = $0 { language } else { nil } }, from: subtitles, catalog)
        guard !chosen.isEmpty else { throw noMatch(catalog) }
        return chosen
    }

    /// For each language asked for, the preferred track whose tag begins with it; `all` is every track.
    /// A language no track has is an error, as is a selector nothing matches.
    private func pick(_ languages: [String], from tracks: [StreamTrack], _ catalog: StreamCatalog) throws(StreamParseError) -> [StreamTrack]
    {
        if languages.contains("all") { return tracks }
        var picked: [StreamTrack] = []
        for language in languages {
            let spoken = tracks.filter { ($0.language ?? "").lowercased().hasPrefix(language) }
            guard let best = spoken.max(by: Self.lessPreferred) else { throw noMatch(catalog) }
            if !picked.contains(best) { picked.append(best) }
        }
        return picked
    }

    /// A rendition marked default first, then the higher bandwidth; among equals, the first listed.
    private static func lessPreferred(_ a: StreamTrack, _ b: StreamTrack) -> Bool {
        (a.isDefault ? 1 : 0, a.bandwidth ?? 0) < (b.isDefault ? 1 : 0, b.bandwidth ?? 0)
    }

    private func matches(_ track: StreamTrack) -> Bool {
        terms.allSatisfy { term in
            switch term {
            case .best, .worst, .language, .subtitles, .id: return true
            case .codec(let prefix): return track.codecs.contains { $0.lowercased().hasPrefix(prefix) }
            case .compare(let field, let comparison, let value):
                let actual = field == "height" ? track.height : field == "width" ? track.width : track.bandwidth
                guard let actual else { return false }
                switch comparison {
                case "<=": return actual <= value
                case ">=": return actual >= value
                case "<": return actual < value
                case ">": return actual > value
                default: return actual == value
                }
            }
        }
    }

    /// Orders variants by bandwidth, then resolution.
    private static func lower(_ a: StreamTrack, _ b: StreamTrack) -> Bool {
        (a.bandwidth ?? 0, a.height ?? 0) < (b.bandwidth ?? 0, b.height ?? 0)
    }

    private func noMatch(_ catalog: StreamCatalog) -> StreamParseError {
        let offered = catalog.tracks.map(\.id).joined(separator: ", ")
        return StreamParseError("no track matches the format selector (tracks: \(offered); `vfetch info URL` lists them)")
    }
}
