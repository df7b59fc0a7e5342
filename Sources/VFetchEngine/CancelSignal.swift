import Synchronization

/// Lets any thread stop a running engine: sets a flag and wakes the transfer thread from `curl_multi_poll`.
final class CancelSignal: Sendable {
    private struct State {
        var cancelled = false
        /// The multi handle's address, kept as an integer so the state is Sendable.
        var multi: UInt?
    }

    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if let multi = state.multi.flatMap(UnsafeMutableRawPointer.init(bitPattern:)) { curlMultiWakeup(multi) }
        }
    }

    /// Wakes the engine from `curl_multi_poll` to look at what changed (readers' demand).
    func wake() {
        state.withLock { state in
            if let multi = state.multi.flatMap(UnsafeMutableRawPointer.init(bitPattern:)) { curlMultiWakeup(multi) }
        }
    }

    /// The engine registers its multi handle while it runs; the lock keeps wakeup and cleanup apart.
    func attach(_ multi: UnsafeMutableRawPointer) { state.withLock { $0.multi = UInt(bitPattern: multi) } }
    func detach() { state.withLock { $0.multi = nil } }
}
