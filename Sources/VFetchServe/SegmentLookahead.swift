/// Which segments to fetch ahead of a player: serve learns each HLS media playlist's segments when it
/// rewrites it, and a player's read of segment N makes the next `count` of that playlist worth
/// having before they are asked for. A read elsewhere (a seek, another variant) moves the window
/// there, and what was fetched ahead for the old place and is outside the new window is cancelled.
///
/// The segment the player waits for comes first: while it is not whole, the window after it waits
/// (what it leaves behind is cancelled at once), and starts when it is (`whole`), so a seek's segment
/// has the host's connections to itself.
///
/// A value: it answers what to start and what to cancel; `PlayerCache` does it. One window per
/// playlist (players on the same playlist share it); a read on one variant of a master playlist
/// cancels the windows of its other variants (a rendition group's audio, not a variant, is left alone).
///
/// What it remembers is bounded in count and in bytes: a playlist may list hundreds of thousands of
/// segments, and pages may have serve rewrite as many playlists as they like.
struct SegmentLookahead: Sendable {
    /// Segments fetched ahead of the one read.
    let count: Int
    /// Playlists remembered, the least recently read forgotten first.
    let maxPlaylists: Int
    /// What the remembered lists may take, about: the segment lists get three quarters, the masters'
    /// variants a quarter. A list larger than its share is not remembered (its segments are not fetched ahead).
    let maxBytes: Int
    /// What the remembered lists take now, about (see `cost`).
    private(set) var bytes = 0
    /// Segment URLs in play order, by playlist URL.
    private var playlists: [String: [String]] = [:]
    /// How many of `playlists` list each segment URL.
    private var listings: [String: Int] = [:]
    /// Playlist URLs, least recently learned or read first.
    private var recent: [String] = []
    /// What was started ahead for each playlist's last read.
    private var ahead: [String: [String]] = [:]
    /// The variants of each master playlist read, by master URL: a player reads one at a time.
    private var masters: [String: [String]] = [:]
    /// Master URLs, least recently learned first.
    private var recentMasters: [String] = []
    private var playlistBytes = 0
    private var masterBytes = 0
    /// Windows not started yet, by the segment read that is not whole yet (bounded like the playlists).
    private var waiting: [String: (playlist: String, segments: [String])] = [:]

    init(count: Int = 3, maxPlaylists: Int = 16, maxBytes: Int = 32 << 20) {
        self.count = count
        self.maxPlaylists = maxPlaylists
        self.maxBytes = maxBytes
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
        // A live playlist learned again keeps its window.
        let window = ahead[url]
        forget(playlist: url)
        let size = Self.cost(segments)
        guard size <= maxBytes - maxBytes / 4 else { return }
        playlists[url] = segments
        for segment in Set(segments) { listings[segment, default: 0] += 1 }
        ahead[url] = window
        playlistBytes += size
        use(url)
        while recent.count > maxPlaylists || playlistBytes > maxBytes - maxBytes / 4 {
            forget(playlist: recent[0])
        }
        bytes = playlistBytes + masterBytes
    }

    /// The master playlist at `url` offers `variants` (bounded like the playlists).
    mutating func learned(master url: String, variants: [String]) {
        guard variants.count > 1 else { return }
        forget(master: url)
        let size = Self.cost(variants)
        guard size <= maxBytes / 4 else { return }
        masters[url] = variants
        masterBytes += size
        recentMasters.append(url)
        while recentMasters.count > maxPlaylists || masterBytes > maxBytes / 4 {
            forget(master: recentMasters[0])
        }
        bytes = playlistBytes + masterBytes
    }

    /// Whether a remembered playlist lists `url` as a segment.
    func isSegment(_ url: String) -> Bool { listings[url] != nil }

    /// A player asked for `url`: the segments to start after it, and those fetched ahead before that
    /// it left behind. When `url` is not `whole` yet, the window waits for it (see `whole`).
    mutating func read(_ url: String, whole: Bool = true) -> Action {
        // The playlist most recently used that lists it (a segment may be in several).
        guard isSegment(url), let playlist = recent.last(where: { playlists[$0]?.contains(url) == true }),
            let segments = playlists[playlist], let index = segments.firstIndex(of: url)
        else { return Action() }
        use(playlist)
        let window = Array(segments[(index + 1)..<min(segments.count, index + 1 + count)])
        let before = ahead[playlist] ?? []
        ahead[playlist] = window
        var cancel = before.filter { !window.contains($0) && $0 != url }
        // A switch to another variant: what was fetched ahead on the others is not going to be played.
        for variants in masters.values where variants.contains(playlist) {
            for other in variants where other != playlist {
                cancel += (ahead.removeValue(forKey: other) ?? []).filter { !window.contains($0) && $0 != url }
            }
        }
        let start = window.filter { !before.contains($0) }
        guard whole || start.isEmpty else {
            waiting[url] = (playlist, start)
            if waiting.count > maxPlaylists, let other = waiting.keys.first(where: { $0 != url }) { waiting[other] = nil }
            return Action(cancel: cancel)
        }
        return Action(start: start, cancel: cancel)
    }

    /// The segment at `url` is whole (or its fetch ended): the window its read left waiting, as far as
    /// it is still ahead of a player.
    mutating func whole(_ url: String) -> Action {
        guard let (playlist, segments) = waiting.removeValue(forKey: url) else { return Action() }
        let window = ahead[playlist] ?? []
        return Action(start: segments.filter { window.contains($0) })
    }

    private mutating func forget(playlist url: String) {
        if let segments = playlists.removeValue(forKey: url) {
            playlistBytes -= Self.cost(segments)
            for segment in Set(segments) {
                listings[segment, default: 1] -= 1
                if listings[segment] == 0 { listings[segment] = nil }
            }
        }
        recent.removeAll { $0 == url }
        ahead[url] = nil
        bytes = playlistBytes + masterBytes
    }

    private mutating func forget(master url: String) {
        if let variants = masters.removeValue(forKey: url) { masterBytes -= Self.cost(variants) }
        recentMasters.removeAll { $0 == url }
        bytes = playlistBytes + masterBytes
    }

    /// About what `urls` take in memory: their bytes, and a string's and an array slot's overhead each.
    private static func cost(_ urls: [String]) -> Int {
        urls.reduce(0) { $0 + $1.utf8.count + 48 }
    }

    private mutating func use(_ playlist: String) {
        recent.removeAll { $0 == playlist }
        recent.append(playlist)
    }
}
