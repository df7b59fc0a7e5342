import Logging

/// What serve says that is not an answer: an origin that failed a player, a damaged file set aside, a
/// full cache. One logger per part; an app embedding the player cache sees them through the handler it
/// gives `LoggingSystem.bootstrap`, and `vfetch serve` prints them on its standard error.
enum ServeLog {
    /// The player cache's routes: what an origin did wrong.
    static let serve = Logger(label: "vfetch.serve")
    /// The background downloads (`queue.json`).
    static let queue = Logger(label: "vfetch.queue")
    /// The cache directory and its size limit.
    static let cache = Logger(label: "vfetch.cache")
}
