import CCurl

/// `--max-speed`: one token bucket for the whole download, however many transfers share it.
///
/// A chunk that finds the bucket empty pauses its transfer: the write callback answers
/// `CURL_WRITEFUNC_PAUSE`, libcurl keeps the chunk and stops reading that socket, and TCP slows the
/// sender down. Each turn of the loop refills the bucket and resumes the transfers that waited longest.
/// (A `CURLOPT_MAX_RECV_SPEED_LARGE` of limit ÷ connections on each transfer did not hold: libcurl
/// reads a burst before it applies, and every new segment starts with a burst of its own.)
struct SpeedLimit {
    let bytesPerSecond: Double
    /// Bytes that may arrive now; below zero: owed for a chunk larger than what was left.
    private(set) var allowance = 0.0
    private var refilledAt = 0.0

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = Double(max(1, bytesPerSecond))
    }

    /// Adds what the time since the last refill allows, keeping at most a tenth of a second's worth,
    /// so that a quiet spell (a retry's backoff) is not made up for with a burst.
    mutating func refill(now: Double) {
        allowance = min(bytesPerSecond / 10, allowance + max(0, now - refilledAt) * bytesPerSecond)
        refilledAt = now
    }

    /// Takes a chunk of `count` bytes unless the bucket is empty; a chunk larger than what is left
    /// goes whole and leaves a debt, so the average holds whatever the chunk size.
    mutating func take(_ count: Int) -> Bool {
        guard allowance > 0 else { return false }
        allowance -= Double(count)
        return true
    }

    /// How long until the bucket is no longer empty.
    var secondsUntilAllowed: Double {
        allowance > 0 ? 0 : -allowance / bytesPerSecond
    }
}

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

    /// libcurl's receive buffer, the most a transfer reads at once: 256 KiB, or under a speed limit a
    /// quarter of a connection's share of a second, so each transfer's turn comes several times a second;
    /// one that waited a whole tick for its turn would look stalled to the scheduler, which would race it.
    /// The corresponding libcurl option is `CURLOPT_BUFFERSIZE`.
    var receiveBufferSize: Int {
        guard let speedLimit else { return 256 << 10 }
        let share = speedLimit.bytesPerSecond / Double(max(1, connectionLimit))
        return min(256 << 10, max(1 << 10, Int(share / 4)))
    }

    /// How long `curl_multi_poll` may wait: while transfers are paused, no longer than until the
    /// bucket refills, since a paused transfer's socket does not wake the poll.
    var pollTimeout: Int {
        guard let speedLimit, transfers.values.contains(where: { $0.pausedSince != nil && !$0.waitsForProbe }) else {
            return 100
        }
        return min(100, max(1, Int((speedLimit.secondsUntilAllowed * 1000).rounded(.up))))
    }
}
