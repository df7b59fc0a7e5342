import Synchronization
import VFetchCore
import VFetchEngine
import VFetchMedia

/// For `DownloadOptions.playbackOrder`: probes the part file about once a second, so progress can say how
/// far a player could already play from the start.
final class PlayableTracker: Sendable {
    private struct State {
        var path: String?
        var length: Int64?
        var saved: [Range<Int64>] = []
        var playableTo: Double?
    }

    private let state = Mutex(State())

    /// Seconds playable from the start, once known.
    var playableTo: Double? { state.withLock { $0.playableTo } }

    func observe(_ event: DownloadEvent) {
        state.withLock { state in
            switch event {
            case .started(let info):
                state.path = SideFiles(output: info.outputPath).part
                state.length = info.length
            case .progress(let progress): state.saved = progress.doneRanges
            default: break
            }
        }
    }

    /// Probes until cancelled: every quarter second until the first answer (the index usually comes first,
    /// and a short download must not end before it is told), then once a second.
    func run() async {
        while !Task.isCancelled {
            let (path, length, saved, known) = state.withLock { ($0.path, $0.length, $0.saved, $0.playableTo != nil) }
            // Before the index is there nothing plays; a probe that fails just leaves the last answer.
            if let path, let length, !saved.isEmpty,
                let (_, playable) = try? await probeMedia(path: path, length: length, present: saved)
            {
                let fromStart = playable.first { $0.lowerBound < 0.5 }?.upperBound
                state.withLock { $0.playableTo = fromStart }
            }
            try? await Task.sleep(for: known ? .seconds(1) : .milliseconds(250))
        }
    }
}
