import Foundation

/// The slow half of a checkpoint, its syncs (the file's data, then the manifest's update), on a thread
/// of its own. A sync waits for everything written since the last one; on a fast link that is hundreds
/// of megabytes, and on the download's thread it stopped every transfer for as long. Here the transfers
/// go on while the disk catches up.
///
/// One job at a time: the download records the next checkpoint only once this one has ended (`isBusy`),
/// and waits for it (`wait`) before it touches the manifest itself, so each manifest write still follows
/// the sync of the bytes it claims, and the journal learns of a failed write before its next record.
// Unchecked: its state is behind `condition`, and a job's objects are the download's, lent until the job ends.
final class CheckpointSync: @unchecked Sendable {
    /// How a job ended: how long it took, and why it failed.
    struct Outcome {
        var seconds: Double
        var error: DownloadError?
    }

    private let condition = NSCondition()
    private var job: (() throws(DownloadError) -> Void)?
    private var outcome: Outcome?
    private var thread: Thread?
    private var stopping = false

    /// Whether a job is running.
    var isBusy: Bool { condition.withLock { job != nil } }

    /// Runs `job` on the thread; none may be running.
    func start(_ job: @escaping () throws(DownloadError) -> Void) {
        condition.withLock {
            precondition(self.job == nil, "one checkpoint sync at a time")
            self.job = job
            if thread == nil {
                let thread = Thread { [self] in runJobs() }
                thread.name = "vfetch-sync"
                thread.start()
                self.thread = thread
            }
            condition.broadcast()
        }
    }

    /// The outcome of a job that ended since the last call, if one did.
    func takeOutcome() -> Outcome? {
        condition.withLock {
            defer { outcome = nil }
            return outcome
        }
    }

    /// Waits for the running job, if any; then as `takeOutcome`.
    func wait() -> Outcome? {
        condition.withLock {
            while job != nil { condition.wait() }
            defer { outcome = nil }
            return outcome
        }
    }

    /// Waits for the running job and ends the thread.
    func stop() {
        condition.withLock {
            while job != nil { condition.wait() }
            stopping = true
            condition.broadcast()
        }
    }

    private func runJobs() {
        while true {
            condition.lock()
            while job == nil, !stopping { condition.wait() }
            guard let job else {
                condition.unlock()
                return
            }
            condition.unlock()
            let started = ContinuousClock.now
            var error: DownloadError?
            do { try job() } catch let failure { error = failure }
            condition.withLock {
                outcome = Outcome(seconds: started.secondsAgo, error: error)
                self.job = nil
                condition.broadcast()
            }
        }
    }
}
