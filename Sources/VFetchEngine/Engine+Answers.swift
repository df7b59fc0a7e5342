import CCurl
import Foundation
import VFetchCore
import VFetchStreams

// What the driver hands the engine from inside `multi.perform()`: answers, chunks, ends.
extension Engine {
    /// Judges a final response before any of its body is written.
    func responded(_ transfer: Transfer) -> Bool {
        if transfer === probe { return probeAnswered(transfer) }
        if transfer === tail { return tailAnswered(transfer) }
        guard let remote, let file else { return false }
        if let sample = samples[ObjectIdentifier(transfer)] { return mirrorAnswered(transfer, sink: sample) }
        if let source = source(of: transfer), source > 0 {
            return mirrorAnswered(transfer, sink: WriteBuffer(capacity: 256 << 10, file: file))
        }
        switch ResponseVerdict.check(transfer.head, asked: transfer.asked, remote: remote) {
        case .part:
            transfer.sink = WriteBuffer(capacity: 256 << 10, file: file)
            return true
        case .whole where (transfer.asked?.lowerBound ?? 0) == 0:
            transfer.sink = WriteBuffer(capacity: 256 << 10, file: file)
            return true
        case .whole:
            fallbackReason = fallbackReason ?? "200 with the whole file to a ranged request"
        case .wrongRange(let reason):
            fallbackReason = fallbackReason ?? reason
        case .remoteChanged(let reason):
            fail(.remoteChanged(reason), transfer)
        case .retry(let status, let after):
            transfer.cut = .refused(.status(status, retryAfter: after))
        case .expired(let status):
            transfer.cut = .refused(.status(status, retryAfter: nil))
        case .fail(let status):
            fail(.httpStatus(status, url: transfer.url), transfer)
        case .notModified:
            fail(.httpStatus(304, url: transfer.url), transfer)
        }
        return false
    }

    func probeAnswered(_ transfer: Transfer) -> Bool {
        guard let found = RemoteFile(probe: transfer.head, from: probeOffset) else {
            if probeOffset > 0, transfer.head.status == 206 || transfer.head.status == 416 {
                // Not the bytes from there (the file may be shorter now): ask again from the start.
                probeOffset = 0
                return false
            }
            switch ResponseVerdict.forStatus(transfer.head) {
            case .retry(let status, let after): transfer.cut = .refused(.status(status, retryAfter: after))
            case .expired(let status), .fail(let status): fail(.httpStatus(status, url: transfer.url), transfer)
            default: fail(.badResponse("no usable Content-Range in the answer to a range request"), transfer)
            }
            return false
        }
        if options.detectsStreams,
            StreamFormat.detect(contentType: found.contentType, path: URL(string: url)?.path ?? "", firstBytes: []) != nil
        {
            // A playlist, not the video: `StreamDownload` fetches what it lists.
            fail(.segmentedStream(url), transfer)
            return false
        }
        if options.detectsStreams, MetalinkDocument.isMetalink(contentType: found.contentType, path: URL(string: url)?.path ?? "") {
            // Where the file is, not the file: `Download` reads the document, a small one, and follows it.
            let limit = Int64(MetalinkDocument.maxBytes)
            if let size = found.length, size > limit {
                fail(.badResponse("\(url) is a Metalink file of \(size) bytes, more than the \(limit >> 20) MiB vfetch reads"), transfer)
            } else {
                fail(.metalink(url), transfer)
            }
            return false
        }
        if found.isWebPage(forMediaPath: url) {
            fail(.badResponse("the server sent a web page (text/html), not the file"), transfer)
            return false
        }
        if let expected = options.expectedLength, found.length != expected {
            let said = found.length.map { "\($0) bytes" } ?? "no length"
            fail(.remoteChanged("the server says \(said), the Metalink file \(expected) bytes"), transfer)
            return false
        }
        remote = found
        requestURL = transfer.finalURL
        let resumed: ByteRangeSet
        let file: OutputFile
        do {
            resumed = try openOutput(for: found)
            file = self.file!
        } catch {
            fail(error, transfer)
            return false
        }
        var configuration = SegmentScheduler.Configuration()
        configuration.minSplitSize = SegmentScheduler.Configuration.minSplitSize(
            length: found.length, connections: connectionLimit, asked: options.minSplitSize)
        configuration.retry = retryPolicy
        configuration.learnsBursts = options.maxBytesPerSecond == nil
        scheduler = SegmentScheduler(
            total: found.length, rangeRequests: found.acceptsRanges, completed: resumed, configuration: configuration)
        startMirrors(for: found)
        controller = ConnectionController(.init(maximum: connectionLimit), now: now, bytesDone: resumed.count)
        if options.httpVersion == .automatic, transfer.easy.info(CURLINFO_HTTP_VERSION) == Int(CURL_HTTP_VERSION_2_0) {
            protocolTrial = ProtocolTrial(now: now)
        }
        if options.playbackOrder, found.acceptsRanges, let length = found.length { planPlayback(length: length) }
        events.yield(
            .started(
                RemoteInfo(
                    url: url, finalURL: requestURL, length: found.length, acceptsRanges: found.acceptsRanges,
                    etag: found.etag, lastModified: found.lastModified, contentType: found.contentType,
                    outputPath: outputPath, resumedBytes: resumedBytes)))
        if resumedBytes > 0, let length = found.length {
            let percent = Double(resumedBytes) * 100 / Double(max(1, length))
            events.yield(.notice("resuming: \(resumedBytes) of \(length) bytes (\(String(format: "%.1f", percent))%) already saved"))
        }
        if !found.acceptsRanges {
            let why = found.length == nil ? "the server does not say the length" : "the server does not support byte ranges"
            events.yield(.notice("\(why); downloading over one connection"))
        }
        // A 200's body starts at 0 whatever was asked.
        let bodyStart = transfer.head.status == 206 ? probeOffset : 0
        transfer.transferID = scheduler?.adopt(at: bodyStart, requestedUpTo: found.length, now: now)
        if let tail, tail.held {
            tail.held = false
            _ = bindTail(tail)
        }
        scheduler?.trimToWindows()
        // Its bytes are saved already (or the file is empty): it stops.
        guard transfer.transferID != nil else { return false }
        transfer.sink = WriteBuffer(capacity: 256 << 10, file: file)
        return true
    }

    /// What of a chunk the scheduler says is new, and where it goes; the transfer stops at its segment's end.
    func received(_ count: Int, from transfer: Transfer) -> BodyStep {
        if !samples.isEmpty, samples[ObjectIdentifier(transfer)] != nil { return BodyStep(keep: 0..<count) }
        guard fatal == nil, let id = transfer.transferID, let receipt = scheduler?.receive(id, count: Int64(count), now: now)
        else { return .stop(.stopped) }
        let written = receipt.write?.count ?? 0
        duplicateBytes += Int64(count - written)
        bytesReceived += Int64(written)
        if let source = source(of: transfer) { sourceBytes[source] += Int64(written) }
        let skip = Int(receipt.skip)
        return BodyStep(keep: skip..<(skip + written), offset: receipt.write?.lowerBound ?? 0, then: receipt.stop ? .stopped : nil)
    }

    func fail(_ error: DownloadError, _ transfer: Transfer) {
        fatal = fatal ?? error
        transfer.cut = .stopped
    }

    // MARK: - Transfers ending

    func ended(_ transfer: Transfer, _ end: TransferEnd) {
        if let sample = samples.removeValue(forKey: ObjectIdentifier(transfer)) { return sampleEnded(sample, end) }
        var end = end
        if let source = source(of: transfer), source > 0 { end = mirrorSegmentEnded(source, end) }
        let wasTail = transfer === tail
        forget(transfer)
        guard let outcome = outcome(of: transfer, end) else { return }
        if let id = transfer.transferID {
            if scheduler?.transferEnded(id, outcome: outcome, now: now) == false {
                fatal = fatal ?? scheduler?.refusedRetryAfter.map(waitRefused) ?? lastFailure ?? .transferFailed("retries exhausted")
            } else if case .failed(let after?) = outcome {
                noteWait(after)
            }
        } else if wasTail {
            // It never got its segment: the tail comes the usual way.
            if let length = remote?.length, remote?.acceptsRanges == true { fetchTail(length: length) }
        } else if case .failed(let after) = outcome {
            // The probe failed before the file was known: try it again, or give up.
            switch probeRetries.failed(retryAfter: after, now: now, jitter: Double.random(in: 0..<1)) {
            case .retry:
                if let after { noteWait(after) }
            case .exhausted:
                fatal = fatal ?? lastFailure ?? .transferFailed("retries exhausted")
            case .waitTooLong(let after):
                fatal = fatal ?? waitRefused(after)
            }
        }
    }

    /// What an ended transfer means for its segment; nil when the download cannot go on.
    func outcome(of transfer: Transfer, _ end: TransferEnd) -> SegmentScheduler.Outcome? {
        switch end {
        case .finished: return .finished
        // A refusal at the host's limit: the range goes to a working connection without counting as a failure.
        case .stopped, .hostLimit: return .stopped
        case .unwritable(let error): fatal = fatal ?? error
        case .failed(.status(let status, _)) where status == 403 || status == 410:
            guard transfer.url != url else {
                fatal = fatal ?? .httpStatus(status, url: transfer.url)
                return nil
            }
            // A signed URL expired: ask the original URL again, which redirects to a fresh one.
            requestURL = url
            lastFailure = .httpStatus(status, url: transfer.url)
            return .failed(retryAfter: 0)
        case .failed(.status(let status, let after)):
            lastFailure = .httpStatus(status, url: transfer.url)
            return .failed(retryAfter: after)
        case .failed(.transfer(let kind, let message)):
            switch kind.verdict(fileKnown: scheduler != nil) {
            case .unreachable: fatal = fatal ?? .connectFailed(message)
            case .badURL: fatal = fatal ?? .badURL("\(transfer.url) (\(message))")
            case .permanent: fatal = fatal ?? .transferFailed(message)
            case .retry:
                lastFailure = .transferFailed(message)
                return .failed(retryAfter: nil)
            }
        case .failed(.invalid(let reason)): fatal = fatal ?? .badResponse(reason)
        }
        return nil
    }

    /// How failed requests are retried: `--retries`, and `Retry-After` up to `--max-retry-wait`.
    var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: options.retries, maxRetryAfter: options.maxRetryWait) }

    /// The error for an origin whose `Retry-After` asks for more than `--max-retry-wait`, naming its status.
    func waitRefused(_ seconds: Double) -> DownloadError {
        // The refused response set `lastFailure` just before.
        guard case .httpStatus(let status, let url)? = lastFailure else {
            return .transferFailed("Retry-After: \(DownloadError.seconds(seconds)) s is longer than vfetch waits (--max-retry-wait)")
        }
        return .retryAfterTooLong(status, url: url, seconds: seconds, limit: options.maxRetryWait)
    }

    /// Says once per wait that the origin's `Retry-After` holds the download, when it is long enough to notice.
    func noteWait(_ seconds: Double) {
        guard seconds >= 1, now >= retryNoticeUntil else { return }
        retryNoticeUntil = now + seconds
        events.yield(.notice("waiting \(DownloadError.seconds(seconds.rounded(.up))) s (Retry-After)"))
    }
}
