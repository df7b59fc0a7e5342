import CCurl
import VFetchCore

extension Engine {
    /// Whether a transfer may take a chunk of `count` bytes now; if not, it waits paused until
    /// `resumePausedTransfers`. Called from the write callback.
    func admit(_ count: Int, from transfer: Transfer) -> Bool {
        if transfer.waitsForProbe {
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

    /// Resumes paused transfers, those that waited longest first, while the speed limit allows.
    func resumePausedTransfers() {
        guard speedLimit != nil || transfers.values.contains(where: { $0.pausedSince != nil }) else { return }
        let waiting = transfers.values.compactMap { transfer in
            transfer.waitsForProbe ? nil : transfer.pausedSince.map { (transfer, $0) }
        }
        for (transfer, _) in waiting.sorted(by: { $0.1 < $1.1 }) {
            if self.speedLimit != nil {
                speedLimit?.refill(now: now)
                guard let speedLimit, speedLimit.allowance > 0 else { return }
            }
            // libcurl hands over the chunk it kept from inside this call, through `admit` and `receive`.
            do {
                try transfer.easy.resumeReceiving()
            } catch {
                // `receive` refused the chunk (the transfer is to stop). libcurl reports that only here,
                // and would go on receiving: end the transfer as if libcurl had failed it.
                transferDone(transfer.easy.raw, result: (error as? CurlError)?.code ?? CURLE_WRITE_ERROR)
            }
        }
    }

    /// libcurl's receive buffer, the most a transfer reads at once: 256 KiB, or what the speed limit
    /// allows (`SpeedLimit.receiveBufferSize`); a transfer that waited a whole tick for its turn would look
    /// stalled to the scheduler, which would race it. The corresponding libcurl option is `CURLOPT_BUFFERSIZE`.
    var receiveBufferSize: Int { speedLimit?.receiveBufferSize(connections: connectionLimit) ?? 256 << 10 }

    /// How long `curl_multi_poll` may wait: while transfers are paused, no longer than until the
    /// bucket refills, since a paused transfer's socket does not wake the poll.
    var pollTimeout: Int {
        guard let speedLimit, transfers.values.contains(where: { $0.pausedSince != nil && !$0.waitsForProbe }) else {
            return 100
        }
        return min(100, max(1, Int((speedLimit.secondsUntilAllowed * 1000).rounded(.up))))
    }
}
