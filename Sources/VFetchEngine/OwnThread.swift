import Foundation

/// Runs blocking work (libcurl's loop, libavformat) on a new thread of its own, off Swift's cooperative
/// pool, where a blocking call would stall unrelated tasks; returns what the work returns.
package func onOwnThread<T: Sendable>(named name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        let thread = Thread { done.resume(returning: work()) }
        thread.name = name
        thread.start()
    }
}
