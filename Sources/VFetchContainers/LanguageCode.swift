/// A track's language as containers write it. Playlists give BCP 47 tags (`en`, `pt-BR`); MP4 and
/// Matroska hold three-letter ISO 639-2 codes (an MP4 `mdhd` has room for nothing else, so libavformat
/// writes `und` for `en`).
package enum LanguageCode {
    /// The ISO 639-2 code of a BCP 47 tag's language: its own when it is three letters, else from
    /// ISO 639-1 for the languages below; nil for a tag not known here. `bibliographic` picks the B
    /// form where it differs (`ger` rather than `deu`), as Matroska's spec lists them; MP4 takes T.
    package static func iso639_2(_ tag: String, bibliographic: Bool) -> String? {
        let primary = tag.split(separator: "-").first.map { $0.lowercased() } ?? ""
        guard primary.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        if primary.count == 3 {
            if bibliographic, let pair = twoLetter.values.first(where: { $0.terminology == primary }) { return pair.bibliographic }
            if !bibliographic, let pair = twoLetter.values.first(where: { $0.bibliographic == primary }) { return pair.terminology }
            return primary
        }
        guard let pair = twoLetter[primary] else { return nil }
        return bibliographic ? pair.bibliographic : pair.terminology
    }

    /// ISO 639-1 to ISO 639-2 (T, B) for the languages of most streams.
    private static let twoLetter: [String: (terminology: String, bibliographic: String)] = [
        "ar": ("ara", "ara"), "bg": ("bul", "bul"), "bn": ("ben", "ben"), "ca": ("cat", "cat"), "cs": ("ces", "cze"),
        "cy": ("cym", "wel"), "da": ("dan", "dan"), "de": ("deu", "ger"), "el": ("ell", "gre"), "en": ("eng", "eng"),
        "es": ("spa", "spa"), "et": ("est", "est"), "eu": ("eus", "baq"), "fa": ("fas", "per"), "fi": ("fin", "fin"),
        "fr": ("fra", "fre"), "ga": ("gle", "gle"), "gl": ("glg", "glg"), "he": ("heb", "heb"), "hi": ("hin", "hin"),
        "hr": ("hrv", "hrv"), "hu": ("hun", "hun"), "hy": ("hye", "arm"), "id": ("ind", "ind"), "is": ("isl", "ice"),
        "it": ("ita", "ita"), "ja": ("jpn", "jpn"), "ka": ("kat", "geo"), "kk": ("kaz", "kaz"), "ko": ("kor", "kor"),
        "lt": ("lit", "lit"), "lv": ("lav", "lav"), "mk": ("mkd", "mac"), "ms": ("msa", "may"), "mt": ("mlt", "mlt"),
        "nb": ("nob", "nob"), "nl": ("nld", "dut"), "nn": ("nno", "nno"), "no": ("nor", "nor"), "pl": ("pol", "pol"),
        "pt": ("por", "por"), "ro": ("ron", "rum"), "ru": ("rus", "rus"), "sk": ("slk", "slo"), "sl": ("slv", "slv"),
        "sq": ("sqi", "alb"), "sr": ("srp", "srp"), "sv": ("swe", "swe"), "sw": ("swa", "swa"), "ta": ("tam", "tam"),
        "te": ("tel", "tel"), "th": ("tha", "tha"), "tl": ("tgl", "tgl"), "tr": ("tur", "tur"), "uk": ("ukr", "ukr"),
        "ur": ("urd", "urd"), "vi": ("vie", "vie"), "zh": ("zho", "chi"),
    ]
}
