import Foundation
import TestOrigin
import VFetchEngine

/// A fresh directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "vfetch-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `body` with a started origin and a scratch directory, and always cleans both up.
func withOrigin<T>(_ body: (TestOrigin, String) async throws -> T) async throws -> T {
    let origin = try await TestOrigin.start()
    let directory = try makeTemporaryDirectory()
    do {
        let result = try await body(origin, directory)
        try await origin.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
        return result
    } catch {
        try? await origin.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
        throw error
    }
}

/// A download's outcome with every event it reported.
struct Fetched {
    var result: Result<DownloadSummary, DownloadError>
    var events: [DownloadEvent]

    var notices: [String] {
        events.compactMap { if case .notice(let text) = $0 { text } else { nil } }
    }

    var error: DownloadError? {
        if case .failure(let error) = result { error } else { nil }
    }
}

func fetch(_ url: String, to destination: Destination, options: DownloadOptions = DownloadOptions()) async -> Fetched {
    let download = FileDownload(url: url, to: destination, options: options)
    let collector = Task {
        var events: [DownloadEvent] = []
        for await event in download.events { events.append(event) }
        return events
    }
    let result: Result<DownloadSummary, DownloadError>
    do { result = .success(try await download.run()) } catch { result = .failure(error) }
    return Fetched(result: result, events: await collector.value)
}

func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
