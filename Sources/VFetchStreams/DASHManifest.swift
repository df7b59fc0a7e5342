import Foundation

/// Reads a DASH Media Presentation Description (MPD, ISO/IEC 23009-1) into a `StreamCatalog`.
///
/// Each Representation of a video, audio or text AdaptationSet is a track; its segments come from a
/// SegmentTemplate (expanded here, numbers or a SegmentTimeline), a SegmentList, a SegmentBase
/// (`.indexed`: its `sidx` lists the segments, see ``SegmentIndexBox``), or else its BaseURL is one
/// whole file. Attributes and segment information at the AdaptationSet (and Period) level hold for
/// each Representation that does not say otherwise; BaseURLs resolve level by level from the MPD's URL.
///
/// Periods are joined (``DASHPeriodJoin``): each later Period adds to a track the segments of its
/// Representation with the same `id` (else one of the AdaptationSet with the same `id`, else of the same
/// kind and language, nearest in bandwidth, as an inserted ad has), the first of them marked as a
/// discontinuity; a Period without one is a gap in the track.
package enum DASHManifest {
    /// Reads the MPD `data`, fetched from `url`.
    ///
    /// `now` is the wall clock a live (`dynamic`) MPD's segments are counted against, when they
    /// come from a SegmentTemplate@duration or run to the live edge (`S@r="-1"`).
    /// `budget` is how many segments and URL bytes it may make (smaller in tests).
    package static func parse(
        _ data: some Collection<UInt8>, url: URL, now: Date = Date(), budget: SegmentBudget = SegmentBudget()
    ) throws(StreamParseError) -> StreamCatalog {
        let root = try MPDElement.parse(data)
        guard root.name == "MPD" else {
            throw StreamParseError("the document is <\(root.name.prefix(40))>, not a DASH manifest (<MPD>)")
        }
        return try PresentationReader(mpd: root, url: url, now: now).catalog(budget: budget)
    }
}

/// What the MPD element says about the whole presentation, and the reading of its Periods.
private struct PresentationReader {
    let mpd: MPDElement
    let url: URL
    let now: Date
    let isLive: Bool
    /// `mediaPresentationDuration`, in seconds.
    let duration: Double?
    /// `availabilityStartTime`: when a live stream's segment 0 of its first Period became available.
    let availabilityStart: Date?
    /// `timeShiftBufferDepth`: how far behind the live edge segments stay available.
    let timeShiftBufferDepth: Double?

    init(mpd: MPDElement, url: URL, now: Date) throws(StreamParseError) {
        self.mpd = mpd
        self.url = url
        self.now = now
        switch mpd["type"]?.trimmingCharacters(in: .whitespaces) ?? "static" {
        case "static": isLive = false
        case "dynamic": isLive = true
        case let other: throw StreamParseError("MPD@type is \"\(other.prefix(40))\", neither static nor dynamic")
        }
        duration = try mpd.duration("mediaPresentationDuration")
        timeShiftBufferDepth = try mpd.duration("timeShiftBufferDepth")
        availabilityStart = try mpd["availabilityStartTime"].map { text throws(StreamParseError) in
            guard let date = MPDTime.date(text) else {
                throw StreamParseError("MPD@availabilityStartTime is \"\(text.prefix(40))\", not a date and time")
            }
            return date
        }
    }

    func catalog(budget: SegmentBudget) throws(StreamParseError) -> StreamCatalog {
        var periods: [MPDElement] = []
        for period in mpd.children("Period") {
            // A remote Period (XLink) is one more document; "resolve to zero" means no Period at all.
            if let link = period["href"] {
                if link.trimmingCharacters(in: .whitespaces) == "urn:mpeg:dash:resolve-to-zero:2013" { continue }
                throw StreamParseError("Period \(periods.count + 1) is remote (xlink:href), which vfetch does not read")
            }
            periods.append(period)
        }
        guard !periods.isEmpty else { throw StreamParseError("the MPD has no Period") }
        let timings = try Self.timings(of: periods, presentationDuration: duration)
        var budget = budget
        let base = try DASHLocation.base(of: mpd, under: url, budget: &budget)
        var tracksByPeriod: [[DASHPeriodJoin.Entry]] = []
        for (period, timing) in zip(periods, timings) {
            tracksByPeriod.append(try tracks(in: period, timing: timing, base: base, budget: &budget))
        }
        var total = duration
        if total == nil, !isLive, let last = timings.last, let start = last.start, let length = last.duration {
            total = start + length
        }
        return StreamCatalog(
            format: .dash, tracks: try DASHPeriodJoin.joined(tracksByPeriod, durations: timings.map(\.duration)), isLive: isLive,
            duration: total)
    }

    /// When each Period starts and how long it lasts, in seconds from the presentation's start: from
    /// `@start` and `@duration`, else from the Periods around it and the presentation's duration.
    static func timings(of periods: [MPDElement], presentationDuration: Double?) throws(StreamParseError)
        -> [PeriodTiming]
    {
        var timings: [PeriodTiming] = []
        for (index, period) in periods.enumerated() {
            var start = try period.duration("start")
            if start == nil {
                if index == 0 {
                    start = 0
                } else if let previous = timings.last, let previousStart = previous.start,
                    let previousLength = previous.duration
                {
                    start = previousStart + previousLength
                }
            }
            timings.append(PeriodTiming(start: start, duration: try period.duration("duration")))
        }
        for index in timings.indices where timings[index].duration == nil {
            guard let start = timings[index].start else { continue }
            let end = index + 1 < timings.count ? timings[index + 1].start : presentationDuration
            if let end, end >= start { timings[index].duration = end - start }
        }
        return timings
    }

    /// The tracks of one Period, in document order: one per Representation of a video, audio or text
    /// AdaptationSet (thumbnail and other sets are left out).
    func tracks(in period: MPDElement, timing: PeriodTiming, base: URL, budget: inout SegmentBudget)
        throws(StreamParseError) -> [DASHPeriodJoin.Entry]
    {
        let periodBase = try DASHLocation.base(of: period, under: base, budget: &budget)
        // Each Representation reads its Period and AdaptationSet without their thousands of siblings.
        let periodHead = period.without("AdaptationSet")
        var tracks: [DASHPeriodJoin.Entry] = []
        var ids = Set<String>()
        for (setIndex, fullSet) in period.children("AdaptationSet").enumerated() {
            let set = fullSet.without("Representation")
            let setBase = try DASHLocation.base(of: set, under: periodBase, budget: &budget)
            for (index, representation) in fullSet.children("Representation").enumerated() {
                let id = representation["id"]?.trimmingCharacters(in: .whitespaces) ?? "a\(setIndex)r\(index)"
                guard ids.insert(id).inserted else {
                    throw StreamParseError("two Representations have the id \"\(id.prefix(40))\"")
                }
                let description = DASHRepresentation(set: set, representation: representation)
                guard let kind = description.kind else { continue }
                let encryption = DASHContentProtection.encryption(
                    set.children("ContentProtection") + representation.children("ContentProtection"))
                let ownBase = try DASHLocation.base(of: representation, under: setBase, budget: &budget)
                let reader = DASHSegmentReader(
                    isLive: isLive, availabilityStart: availabilityStart, timeShiftBufferDepth: timeShiftBufferDepth,
                    now: now, timing: timing, representationID: id, bandwidth: description.bandwidth, base: ownBase,
                    hasBaseURL: ownBase != url, encryption: encryption)
                let segments = try reader.segments(levels: [periodHead, set, representation], budget: &budget)
                let track = StreamTrack(
                    id: id, kind: kind, bandwidth: description.bandwidth, width: description.width,
                    height: description.height, frameRate: description.frameRate, codecs: description.codecs,
                    language: description.language, name: description.label, isDefault: description.isMain,
                    encryption: encryption, segments: segments)
                let set = fullSet["id"]?.trimmingCharacters(in: .whitespaces)
                tracks.append(DASHPeriodJoin.Entry(track: track, adaptationSet: set))
            }
        }
        return tracks
    }
}

/// When a Period starts and how long it lasts, in seconds, when the MPD says or implies it.
struct PeriodTiming: Equatable {
    var start: Double?
    var duration: Double?
}

/// What a Representation is, from its own attributes and those of its AdaptationSet.
private struct DASHRepresentation {
    let set: MPDElement
    let representation: MPDElement

    /// The Representation's attribute, else its AdaptationSet's.
    subscript(attribute: String) -> String? {
        (representation[attribute] ?? set[attribute])?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var codecs: [String] {
        (self["codecs"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
    }

    var bandwidth: Int? { self["bandwidth"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }
    var width: Int? { self["width"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } }
    var height: Int? { self["height"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } }
    var language: String? { self["lang"].flatMap { $0.isEmpty ? nil : $0 } }

    /// `@frameRate`: `25`, or a fraction such as `30000/1001`.
    var frameRate: Double? {
        guard let text = self["frameRate"] else { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let numerator = Double(parts[0]), numerator.isFinite, numerator > 0 else { return nil }
        let denominator = parts.count == 2 ? Double(parts[1]) ?? 0 : 1
        guard denominator.isFinite, denominator > 0 else { return nil }
        return numerator / denominator
    }

    /// The `Label` text of the Representation, else of its AdaptationSet.
    var label: String? {
        let text = (representation.child("Label") ?? set.child("Label"))?.text
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text?.isEmpty == false ? text : nil
    }

    /// A `Role` of `main` on the AdaptationSet or the Representation.
    var isMain: Bool {
        (set.children("Role") + representation.children("Role")).contains {
            $0["value"]?.trimmingCharacters(in: .whitespaces).lowercased() == "main"
        }
    }

    /// Video, audio or subtitles, from `@contentType`, else `@mimeType`, else the codecs; nil for
    /// anything else (thumbnail images). Video whose codecs include audio is `muxed`.
    var kind: StreamTrack.Kind? {
        let codecs = codecs.map { $0.lowercased() }
        let isAudio: (String) -> Bool = { codec in Self.audioCodecs.contains { codec.hasPrefix($0) } }
        let mimeType = self["mimeType"]?.lowercased() ?? ""
        var type = self["contentType"]?.lowercased() ?? String(mimeType.prefix { $0 != "/" })
        if type == "application" {
            // TTML and WebVTT in MP4 (`application/mp4` with `stpp` or `wvtt`), or bare TTML.
            let isText =
                mimeType.hasPrefix("application/ttml")
                || codecs.contains { $0.hasPrefix("stpp") || $0.hasPrefix("wvtt") }
            type = isText ? "text" : ""
        }
        if type.isEmpty, let first = codecs.first {
            type = isAudio(first) ? "audio" : Self.videoCodecs.contains { first.hasPrefix($0) } ? "video" : ""
        }
        switch type {
        case "video": return codecs.contains(where: isAudio) && !codecs.allSatisfy(isAudio) ? .muxed : .video
        case "audio": return .audio
        case "text": return .subtitles
        default: return nil
        }
    }

    static let audioCodecs = ["mp4a", "ac-3", "ec-3", "ac-4", "opus", "vorbis", "flac", "mp3", "alac", "dts"]
    static let videoCodecs = ["avc", "hev1", "hvc1", "dvh", "vp8", "vp9", "vp08", "vp09", "av01", "mp4v"]
}

/// Base URLs, level by level.
enum DASHLocation {
    /// The element's first `BaseURL`, resolved against `parent`; `parent` when it has none.
    static func base(of element: MPDElement, under parent: URL, budget: inout SegmentBudget) throws(StreamParseError)
        -> URL
    {
        guard let baseURL = element.child("BaseURL") else { return parent }
        return try resolve(baseURL.text, against: parent, budget: &budget)
    }

    /// `reference` resolved against `base`: it must be an http or https URL, as vfetch fetches no other,
    /// within the longest URL and the manifest's budget of URL bytes.
    static func resolve(_ reference: String, against base: URL, budget: inout SegmentBudget) throws(StreamParseError)
        -> URL
    {
        let trimmed = reference.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= SegmentBudget.maxURLBytes else {
            throw StreamParseError("\"\(trimmed.prefix(80))\" is longer than \(SegmentBudget.maxURLBytes) bytes")
        }
        guard let url = URL(string: trimmed, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host?.isEmpty == false
        else {
            throw StreamParseError("\"\(trimmed.prefix(80))\" is not an http or https URL")
        }
        let bytes = url.absoluteString.utf8.count
        guard bytes <= SegmentBudget.maxURLBytes else {
            throw StreamParseError(
                "\"\(trimmed.prefix(80))\" resolves to a URL longer than \(SegmentBudget.maxURLBytes) bytes")
        }
        guard budget.takeURL(bytes: bytes) else {
            throw StreamParseError("the manifest's URLs are more than \(budget.totalURLBytesText) in all")
        }
        return url
    }

    /// A byte range as DASH writes it, `first-last` inclusive.
    static func byteRange(_ text: String) throws(StreamParseError) -> Range<Int64> {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let first = Int64(parts[0]), let last = Int64(parts[1]), first <= last, last < Int64.max
        else {
            throw StreamParseError("\"\(text.prefix(40))\" is not a byte range first-last")
        }
        return first..<last + 1
    }
}

extension MPDElement {
    /// An attribute that is an `xs:duration`, in seconds; nil when absent.
    fileprivate func duration(_ attribute: String) throws(StreamParseError) -> Double? {
        guard let text = attributes[attribute] else { return nil }
        guard let seconds = MPDTime.duration(text) else {
            throw StreamParseError("\(name)@\(attribute) is \"\(text.prefix(40))\", not a duration such as PT1H2M3.5S")
        }
        return seconds
    }
}
