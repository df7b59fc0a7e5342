import CCurl
import VFetchCore

// `--max-speed` and the transfers a job holds back: paused from the write callback, resumed on a later turn.
extension Driver {
    /// Whether a transfer may take a chunk of `count` bytes now; if not, it waits paused until
    /// `resumePaused`. Called from the write callback.
    func admit(_ count: Int, from transfer: Transfer) -> Bool {
        if transfer.held {
            transfer.pausedSince = transfer.pausedSince ?? now
            return false
        }
        if speedLimit != nil {
            speedLimit?.refill(now: now)
            guard speedLimit?.take(count) == true else {
                transfer.pausedSince = transfer.pausedSince ?? now
                return false
            }
        }
        transfer.pausedSince = nil
        return true
    }

    /// Resumes paused transfers the job no longer holds, those that waited longest first, while the
    /// speed limit allows.
    func resumePaused() {
        guard speedLimit != nil || transfers.values.contains(where: { $0.pausedSince != nil }) else { return }
        let waiting = transfers.values.compactMap { transfer in transfer.held ? nil : transfer.pausedSince.map { (transfer, $0) } }
        for (transfer, _) in waiting.sorted(by: { $0.1 < $1.1 }) {
            if self.speedLimit != nil {
                speedLimit?.refill(now: now)
                guard let speedLimit, speedLimit.allowance > 0 else { return }
            }
            // libcurl hands over the chunk it kept from inside this call, through the write callback.
            do {
                try transfer.easy.resumeReceiving()
            } catch {
                // The job refused the chunk (the transfer is to stop). libcurl reports that only here,
                // and would go on receiving: end the transfer as if libcurl had failed it.
                transferFinished(transfer.easy.raw, code: (error as? CurlError)?.code ?? CURLE_WRITE_ERROR)
            }
        }
    }

    /// libcurl's receive buffer, the most a transfer reads at once: 256 KiB, or what the speed limit
    /// allows (`SpeedLimit.receiveBufferSize`); a transfer that waited a whole tick for its turn would look
    /// stalled to a planner, which would race it. The corresponding libcurl option is `CURLOPT_BUFFERSIZE`.
    var receiveBufferSize: Int { speedLimit?.receiveBufferSize(connections: options.connections) ?? 256 << 10 }

    /// How long a poll may wait while transfers are paused: no longer than until the bucket refills,
    /// since a paused transfer's socket does not wake the poll.
    var pauseWait: Double {
        guard let speedLimit, transfers.values.contains(where: { $0.pausedSince != nil && !$0.held }) else { return .infinity }
        return max(0.001, speedLimit.secondsUntilAllowed)
    }
}
