import Synchronization
import VFetchCore

/// How much a player cache's download fetches beyond what its players read now (`vfetch serve --prefetch`).
public enum Prefetch: String, Sendable, CaseIterable {
    /// The whole file, players' windows first.
    case full
    /// A window of 64 MiB ahead of each player.
    case window
    /// Only a few blocks (1 MiB) ahead of what players ask for.
    case none
}

/// What the player cache's readers want from a running download, and how they learn bytes arrived.
///
/// Readers, on any thread, say where they read and which byte they wait for; the engine takes the
/// changes on its next turn (`Download.wake()` makes that at once) and calls `written` on its own
/// thread whenever more of the file is on disk. A download with readers keeps its finished file
/// where it is, with a complete manifest: that is how the cache stores its entries.
package final class ReaderDemand: Sendable {
    package typealias Prefetch = VFetchEngine.Prefetch

    struct Change {
        var positions: [Int64]
        var waits: [Int64]
        /// Fetch only what readers need from now on.
        var readersOnly: Bool
    }

    private struct State {
        var positions: [Int: Int64] = [:]
        var waits: [Int64] = []
        var readersOnly = false
        var changed = false
    }

    /// The prefetch asked for when the download started.
    private let requested: Prefetch
    private let state = Mutex(State())
    let written: @Sendable (ByteRangeSet) -> Void
    /// Whether the end of the file is fetched at once, beside its head: an MP4 whose index (`moov`) is at its
    /// end plays only with it. Not for a stream's segments, which have none: for one smaller than the tail
    /// asked for, the tail is its head again, sent twice.
    let tailFirst: Bool

    package init(prefetch: Prefetch, tailFirst: Bool = true, written: @escaping @Sendable (ByteRangeSet) -> Void) {
        requested = prefetch
        self.tailFirst = tailFirst
        self.written = written
    }

    package var prefetch: Prefetch { state.withLock { $0.readersOnly } ? .none : requested }

    /// From now on the download fetches only what readers need (the cache is nearly full); the
    /// engine narrows its plan on its next turn, and the transfers in flight stop at the readers' windows.
    package func fetchOnlyForReaders() {
        state.withLock { state in
            guard !state.readersOnly else { return }
            state.readersOnly = true
            state.changed = true
        }
    }

    /// Bytes fetched ahead of each reader, in playback order.
    var lookahead: Int64 {
        switch prefetch {
        case .full: 16 << 20
        case .window: 64 << 20
        case .none: 1 << 20
        }
    }

    /// Where reader `id` reads now; nil when it is gone.
    package func setPosition(_ offset: Int64?, of id: Int) {
        state.withLock { state in
            guard state.positions[id] != offset else { return }
            state.positions[id] = offset
            state.changed = true
        }
    }

    /// A reader waits for the byte at `offset`: it goes first.
    package func wait(at offset: Int64) {
        state.withLock { state in
            state.waits.append(offset)
            state.changed = true
        }
    }

    /// The changes since the last call, for the engine.
    func take() -> Change? {
        state.withLock { state in
            guard state.changed else { return nil }
            defer {
                state.waits.removeAll()
                state.changed = false
            }
            return Change(positions: state.positions.values.sorted(), waits: state.waits, readersOnly: state.readersOnly)
        }
    }
}
