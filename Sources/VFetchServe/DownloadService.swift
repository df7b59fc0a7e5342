import Foundation
import Synchronization
import VFetch
import VFetchCore
import VFetchEngine
import VFetchStreams

/// The background downloads of `vfetch serve`: does what the queue answers, keeps the queue on disk
/// (`queue.json`, replaced atomically within 0.1 s of a change, longer for a queue of thousands) and tells subscribers what happens.
package actor DownloadService {
    package struct Settings: Sendable {
        package var maxConcurrent = 3
        package var maxBytesPerSecond: Int64?
        /// Run after each finished download as `CMD PATH URL` (through `sh -c`).
        package var onComplete: String?
        package var download = DownloadOptions()
        package init() {}
    }

    /// What subscribers are told, as it happens.
    package enum Update: Sendable, Equatable {
        /// A download was queued, started, paused, resumed, finished or failed.
        case state(QueueAPI.Item)
        /// A running download's progress, at most twice a second.
        case progress(QueueAPI.Item)
        /// A download was taken out of the queue.
        case removed(QueueAPI.Removed)
        /// What a download said, such as a wait for the origin's `Retry-After`.
        case notice(QueueAPI.Notice)
    }

    /// A download that runs now, and what it last said.
    private struct Live {
        var download: Download
        var bytesDone: Int64 = 0
        var length: Int64?
        var rate = 0.0
        var lastEvent: ContinuousClock.Instant?
        /// Where it writes, once known.
        var path: String?
        /// Set when we stop it: its end is not a failure.
        var stopping = false
        /// Removed with its data: deleted once the download has let go of its files.
        var deleteWhenEnded: DownloadQueue.Item?
    }

    private var queue = DownloadQueue()
    private var live: [String: Live] = [:]
    private var subscribers: [UUID: AsyncStream<Update>.Continuation] = [:]
    /// Set by `shutdown`: nothing starts any more.
    private var shuttingDown = false
    private let queuePath: String
    /// Where `queue.json` is written, one save after another.
    private let saving = DispatchQueue(label: "vfetch-queue-saves")
    /// A save is due and not yet made. Each save encodes the whole queue, so the changes of 0.1 s go into
    /// one: 500 URLs added one by one, or as many downloads starting and ending, cost a few saves, not 500
    /// (once one each, adding 500 small files took 5.7 s of the server's CPU).
    private var saveDue = false
    /// How long the last save took to encode: the next comes no sooner than ten times that, so a queue of
    /// thousands of items that change all the time costs a tenth of a core at most.
    private let encodeSeconds = Mutex(0.0)
    private let settings: Settings

    /// Loads the saved queue, if any; `start()` then resumes it.
    package init(directory: String, settings: Settings) {
        queuePath = Self.queuePath(inDirectory: directory)
        self.settings = settings
        guard let bytes = try? FileSystem.contents(at: queuePath) else { return }
        do {
            queue = try JSONDecoder().decode(DownloadQueue.self, from: Data(bytes))
        } catch {
            // Unreadable, or numbers and requests the queue could not have saved (a counter at its end would
            // overflow on the next add): kept for a look, never silently dropped; the queue starts empty.
            let reason = if case DecodingError.dataCorrupted(let context) = error { context.debugDescription } else { "unreadable" }
            let aside = queuePath + ".damaged"
            try? FileSystem.rename(queuePath, to: aside)
            ServeLog.queue.error("\(queuePath) is damaged (\(reason)); moved to \(aside), starting with an empty queue")
        }
    }

    /// Resumes what was unfinished, in queue order, with the limits given on the command line.
    package func start() {
        var actions = queue.recover()
        actions += queue.setMaxConcurrent(settings.maxConcurrent)
        queue.maxBytesPerSecond = settings.maxBytesPerSecond
        perform(actions)
    }

    // MARK: - Requests

    /// Queues `request`; throws `.badURL` for one the queue cannot take (`Request.problem` names the field)
    /// and `.formatUnavailable` for a format that is not a selector.
    package func add(_ request: DownloadQueue.Request) throws(DownloadError) -> String {
        if let problem = request.problem { throw .badURL(problem) }
        if let format = request.format {
            do { _ = try TrackSelection(format) } catch { throw .formatUnavailable("format: \(error)") }
        }
        let (id, actions) = queue.add(request)
        perform(actions)
        if !actions.contains(.start(id)) { announce(id) }  // a started one was announced as running
        return id
    }

    /// False for an unknown ID.
    package func pause(_ id: String) -> Bool {
        guard let actions = queue.pause(id) else { return false }
        if !actions.contains(.stop(id)) { announce(id) }  // a stopped one is announced as it stops
        perform(actions)
        return true
    }

    package func resume(_ id: String) -> Bool {
        guard let actions = queue.resume(id) else { return false }
        perform(actions)
        if !actions.contains(.start(id)) { announce(id) }
        return true
    }

    /// Forgets a download; with `deleteData` its partial file and manifest go too.
    package func remove(_ id: String, deleteData: Bool) -> Bool {
        guard let item = queue.item(id), let actions = queue.remove(id) else { return false }
        if deleteData {
            if live[id] != nil { live[id]?.deleteWhenEnded = item } else { Self.deletePartialData(of: item) }
        }
        broadcast(.removed(QueueAPI.Removed(removed: id)))
        perform(actions)
        return true
    }

    package func setLimits(maxConcurrent: Int?, maxBytesPerSecond: Int64??) {
        var actions: [DownloadQueue.Action] = []
        if let maxConcurrent { actions += queue.setMaxConcurrent(maxConcurrent) }
        if let limit = maxBytesPerSecond {
            queue.maxBytesPerSecond = limit
            // A download's limit is set when it starts: running ones start again (from their checkpoint).
            // (They stay running in the queue, so `ended` starts them again.)
            for id in queue.running where live[id] != nil {
                live[id]?.stopping = true
                live[id]?.download.cancel()
            }
        }
        perform(actions)
        save()
    }

    package var limits: QueueAPI.Settings {
        QueueAPI.Settings(maxConcurrent: queue.maxConcurrent, maxBytesPerSecond: queue.maxBytesPerSecond)
    }

    /// Every download, in queue order.
    package func list() -> QueueAPI.Items { QueueAPI.Items(downloads: queue.items.map(describe)) }

    package func describe(_ id: String) -> QueueAPI.Item? { queue.item(id).map(describe) }

    /// Every update from now on, until the stream is dropped or the service shuts down.
    package func subscribe() -> AsyncStream<Update> {
        let (stream, continuation) = AsyncStream.makeStream(of: Update.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Stops every running download (each checkpoints) and saves the queue as it stands, so the next
    /// start resumes them.
    package func shutdown() async {
        shuttingDown = true
        for id in live.keys {
            live[id]?.stopping = true
            live[id]?.download.cancel()
        }
        while !live.isEmpty { try? await Task.sleep(for: .milliseconds(20)) }
        saveNow()
        // The process may end after this: the last save is on disk first.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in saving.async { done.resume() } }
        for continuation in subscribers.values { continuation.finish() }
    }

    // MARK: - Doing the queue's actions

    private func perform(_ actions: [DownloadQueue.Action]) {
        for action in actions {
            switch action {
            case .start(let id): launch(id)
            case .stop(let id):
                live[id]?.stopping = true
                live[id]?.download.cancel()
                announce(id)
            }
        }
        save()
    }

    private func launch(_ id: String) {
        // One still stopping starts again when it has ended (see `ended`).
        guard !shuttingDown, let item = queue.item(id), live[id] == nil else { return }
        var options = settings.download
        if let connections = item.request.connections { options.connections = connections }
        options.headers += item.request.headers
        if let checksum = item.request.checksum { options.sha256 = sha256Digest(fromChecksum: checksum) }
        options.format = item.request.format
        options.mirrors = item.request.mirrors ?? []
        if let limit = queue.maxBytesPerSecond { options.maxBytesPerSecond = max(1, limit / Int64(queue.maxConcurrent)) }
        let destination: Destination = item.request.outputIsDirectory ? .directory(item.request.output) : .file(item.request.output)
        let download = Download(url: item.request.url, to: destination, options: options)
        live[id] = Live(download: download)
        announce(id)
        Task {
            let run = Task { () -> DownloadError? in
                do throws(DownloadError) {
                    _ = try await download.run()
                    return nil
                } catch {
                    return error
                }
            }
            for await event in download.events { self.observe(id, download, event) }
            await self.ended(id, download, error: run.value)
        }
    }

    private func observe(_ id: String, _ download: Download, _ event: DownloadEvent) {
        guard live[id]?.download === download else { return }
        switch event {
        case .started(let info):
            queue.located(id, path: info.outputPath)
            live[id]?.path = info.outputPath
            live[id]?.length = info.length
            save()
        case .progress(let progress):
            progressed(id, bytes: progress.bytesDone, rate: progress.bytesPerSecond)
        case .notice(let message):
            // Such as a wait for the origin's Retry-After, which would otherwise look like a stall.
            broadcast(.notice(QueueAPI.Notice(id: id, message: redactingCredentials(in: message))))
        case .streamProgress(let progress):
            progressed(id, bytes: progress.bytesDone, rate: progress.bytesPerSecond)
        case .finished:
            break
        }
    }

    /// Tells subscribers at most twice a second per download.
    private func progressed(_ id: String, bytes: Int64, rate: Double) {
        live[id]?.bytesDone = bytes
        live[id]?.rate = rate
        let now = ContinuousClock.now
        if live[id]?.lastEvent.map({ now - $0 < .milliseconds(500) }) != true, let item = queue.item(id) {
            live[id]?.lastEvent = now
            broadcast(.progress(describe(item)))
        }
    }

    private func ended(_ id: String, _ download: Download, error: DownloadError?) {
        guard var ending = live[id], ending.download === download else { return }
        live[id] = nil
        var error = error
        if case .alreadyComplete(let path) = error {
            // As `vfetch get` says: the file is there, which is what was asked.
            error = nil
            queue.located(id, path: path)
            ending.path = path
        }
        if var removed = ending.deleteWhenEnded {
            removed.path = removed.path ?? ending.path
            Self.deletePartialData(of: removed)
        }
        guard !shuttingDown else { return }
        if ending.stopping, error != nil {
            // Stopped on our word. If the queue wants it running again (a new speed limit, or a
            // resume while it was stopping), it starts again from its checkpoint.
            if queue.item(id)?.state == .running { launch(id) }
            save()
            return
        }
        // Told before the next one starts, so events never show more running than the limit.
        let actions = queue.ended(id, error: error.map { "\($0)" })
        announce(id)
        perform(actions)
        if error == nil, let item = queue.item(id) { completed(item) }
    }

    /// The finished-download hook and a desktop notification, when there are. The hook is the user's own
    /// command and gets the URL as it is.
    private func completed(_ item: DownloadQueue.Item) {
        let path = item.path ?? item.request.output
        if let command = settings.onComplete {
            Self.spawn("/bin/sh", ["-c", command + " \"$@\"", "vfetch", path, item.request.url])
        }
        if let notify = findExecutable("notify-send") {
            Self.spawn(notify, ["vfetch", "Downloaded \((path as NSString).lastPathComponent)"])
        }
    }

    // MARK: - Telling and saving

    /// The queue as the last server on the cache directory `directory` saved it, its items as the API shows
    /// them but for what only a running download knows: for a client while no server runs. Nil when none was
    /// saved; `badManifest` when it cannot be read (the next server moves it aside).
    package static func saved(inDirectory directory: String) throws(DownloadError) -> [QueueAPI.Item]? {
        let path = queuePath(inDirectory: directory)
        guard let bytes = try? FileSystem.contents(at: path) else { return nil }
        guard let queue = try? JSONDecoder().decode(DownloadQueue.self, from: Data(bytes)) else {
            throw .badManifest("\(path): not a queue vfetch saved (vfetch serve moves it aside when it starts)")
        }
        return queue.items.map(describeSaved)
    }

    /// Where the queue of the cache directory `directory` is saved.
    private static func queuePath(inDirectory directory: String) -> String { directory + "/queue.json" }

    /// What the API shows of an item from its saved state alone.
    private static func describeSaved(_ item: DownloadQueue.Item) -> QueueAPI.Item {
        QueueAPI.Item(
            id: item.id, url: redactedURL(item.request.url), state: item.state, output: item.request.output,
            path: item.path, error: item.error.map { redactingCredentials(in: $0) })
    }

    /// An item as the API shows it: without the URL's password (`queue.json` keeps it, to resume) and
    /// without the request's headers, which may carry credentials.
    private func describe(_ item: DownloadQueue.Item) -> QueueAPI.Item {
        var described = Self.describeSaved(item)
        if let now = live[item.id] {
            described.bytesDone = now.bytesDone
            described.length = now.length
            described.rate = now.rate
            if let length = now.length, now.rate > 0 { described.eta = Double(length - now.bytesDone) / now.rate }
        } else if let path = item.path {
            if item.state == .done {
                let size = try? FileSystem.status(at: path).size
                described.bytesDone = size
                described.length = size
            } else if let partial = try? PartialDownload(outputPath: path) {
                described.bytesDone = partial.bytesDone
                described.length = partial.length
            }
        }
        return described
    }

    private func announce(_ id: String) {
        if let item = queue.item(id) { broadcast(.state(describe(item))) }
    }

    private func broadcast(_ update: Update) {
        for continuation in subscribers.values { continuation.yield(update) }
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    private func save() {
        guard !saveDue else { return }
        saveDue = true
        let wait = max(0.1, 10 * encodeSeconds.withLock { $0 })
        Task {
            try? await Task.sleep(for: .seconds(wait))
            // After `shutdown` (which saved): a server started again on the directory owns the file now.
            if !shuttingDown { saveNow() }
        }
    }

    private func saveNow() {
        saveDue = false
        // Encoding thousands of items and a durable replacement (fsync) take milliseconds: on a serial queue
        // of their own, off this actor (which answers `add`) and Swift's cooperative pool, and in order, so an
        // older queue never lands after a newer one.
        let (queue, path) = (queue, queuePath)
        saving.async { [self] in
            let started = ContinuousClock.now
            guard let data = try? JSONEncoder().encode(queue) else { return }
            let seconds = started.secondsAgo
            self.encodeSeconds.withLock { $0 = seconds }
            try? FileReplacement.write([UInt8](data), to: path)
        }
    }

    private static func deletePartialData(of item: DownloadQueue.Item) {
        guard let path = item.path ?? (item.request.outputIsDirectory ? nil : item.request.output) else { return }
        for file in SideFiles(output: path).unfinished { try? FileSystem.remove(file) }
        StreamDownload.removeParts(ofOutput: path)
    }

    private static func spawn(_ program: String, _ arguments: [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        try? process.run()
    }

}
