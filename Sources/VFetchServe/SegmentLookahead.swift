/// Which segments to fetch ahead of a player: serve learns each HLS media playlist's segments when it
/// rewrites it, and a player's read of segment N makes the next `count` of that playlist worth
/// having before they are asked for. A read elsewhere (a seek, another variant) moves the window
/// there, and what was fetched ahead for the old place and is outside the new window is cancelled.
///
/// The segment a player waits for comes first: a read's window starts only once the read segment was
/// served (`served`), so the segments ahead never take the origin's connections from it. What the read
/// leaves behind is cancelled at once, for the same reason.
///
/// A value: it answers what to start and what to cancel; `PlayerCache` does it. One window per
/// playlist (players on the same playlist share it); a read on one variant of a master playlist
/// cancels the windows of its other variants (a rendition group's audio, not a variant, is left alone).
struct SegmentLookahead: Sendable {
    /// Segments fetched ahead of the one read.
    let count: Int
    /// Playlists remembered, the least recently read forgotten first.
    let maxPlaylists: Int
    /// Segment URLs in play order, by playlist URL.
    private var playlists: [String: [String]] = [:]
    /// Playlist URLs, least recently learned or read first.
    private var recent: [String] = []
    /// What each playlist's last read wants ahead (started, or held back in `waiting`).
    private var ahead: [String: [String]] = [:]
    /// Per playlist, the segment its last read waits for and the window held back until it is served.
    private var waiting: [String: (segment: String, start: [String])] = [:]
    /// The variants of each master playlist read, by master URL: a player reads one at a time.
    private var masters: [String: [String]] = [:]

    init(count: Int = 3, maxPlaylists: Int = 16) {
        self.count = count
        self.maxPlaylists = maxPlaylists
    }

    struct Action: Sendable, Equatable {
        /// Fetch these, nearest first.
        var start: [String] = []
        /// Stop these unless a player reads them.
        var cancel: [String] = []
    }

    /// The playlist at `url` lists `segments` (its latest version: a live one grows).
    mutating func learned(playlist url: String, segments: [String]) {
        guard !segments.isEmpty else { return }
        playlists[url] = segments
        use(url)
        while recent.count > maxPlaylists {
            let oldest = recent.removeFirst()
            playlists[oldest] = nil
            ahead[oldest] = nil
            waiting[oldest] = nil
        }
    }

    /// The master playlist at `url` offers `variants` (bounded like the playlists).
    mutating func learned(master url: String, variants: [String]) {
        guard variants.count > 1 else { return }
        masters[url] = variants
        if masters.count > maxPlaylists, let other = masters.keys.first(where: { $0 != url }) { masters[other] = nil }
    }

    /// A player asked for `url`: those fetched ahead before that it left behind, to cancel now. The
    /// segments after it are held back until `served(url)`.
    mutating func read(_ url: String) -> Action {
        // The playlist most recently used that lists it (a segment may be in several).
        guard let playlist = recent.last(where: { playlists[$0]?.contains(url) == true }),
            let segments = playlists[playlist], let index = segments.firstIndex(of: url)
        else { return Action() }
        use(playlist)
        let window = Array(segments[(index + 1)..<min(segments.count, index + 1 + count)])
        let started = startedAhead(playlist)
        ahead[playlist] = window
        var cancel = started.filter { !window.contains($0) && $0 != url }
        // A switch to another variant: what was fetched ahead on the others is not going to be played.
        for variants in masters.values where variants.contains(playlist) {
            for other in variants where other != playlist {
                cancel += startedAhead(other).filter { !window.contains($0) && $0 != url }
                ahead[other] = nil
                waiting[other] = nil
            }
        }
        waiting[playlist] = (url, window.filter { !started.contains($0) })
        return Action(cancel: cancel)
    }

    /// The player's response for `url` ended: the window its read held back, to start now.
    mutating func served(_ url: String) -> Action {
        guard let playlist = waiting.first(where: { $0.value.segment == url })?.key, let held = waiting.removeValue(forKey: playlist)
        else { return Action() }
        return Action(start: held.start)
    }

    /// What was started ahead for `playlist`: its window less what is still held back.
    private func startedAhead(_ playlist: String) -> [String] {
        let held = waiting[playlist]?.start ?? []
        return (ahead[playlist] ?? []).filter { !held.contains($0) }
    }

    private mutating func use(_ playlist: String) {
        recent.removeAll { $0 == playlist }
        recent.append(playlist)
    }
}
