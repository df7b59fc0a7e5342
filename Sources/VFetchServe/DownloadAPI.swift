import Foundation
import NIOHTTP1
import VFetchCore

/// The JSON API of the background downloads (`/api/…`), apart from its event stream.
///
/// | request | answer |
/// | --- | --- |
/// | `GET /api/downloads` | `{"downloads": [item…]}` |
/// | `POST /api/downloads` `{"url", "output", "output_is_directory"?, "connections"?, "headers"?, "checksum"?, "format"?, "mirrors"?}` | 201 `{"id"}` |
/// | `GET /api/downloads/ID` | the item |
/// | `POST /api/downloads/ID/pause`, `…/resume` | the item |
/// | `DELETE /api/downloads/ID[?delete=true]` | `{"removed": ID}`; `delete` also removes partial data |
/// | `GET`, `PUT /api/settings` `{"max_concurrent"?, "max_bytes_per_second"?}` | the settings |
///
/// A body that is not JSON, a value of the wrong type or out of range, and a field it does not know are
/// answered with 400 and an `error` naming the field (see `DownloadAPI+Bodies.swift`).
enum DownloadAPI {
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var body: [UInt8]
    }

    static func handle(
        method: HTTPMethod, path: [String], query: [URLQueryItem], body: [UInt8], service: DownloadService
    ) async -> Answer {
        let resource = path.first ?? ""
        let id = path.count > 1 ? path[1] : nil
        let verb = path.count > 2 ? path[2] : nil
        guard path.count <= 3, resource == "downloads" || (resource == "settings" && path.count == 1) else {
            return error(.notFound, "no such API path: /api/\(path.joined(separator: "/"))")
        }
        switch (resource, method) {
        case ("settings", .GET):
            return ok(await service.limits)
        case ("settings", .PUT):
            return await settings(body, service)
        case ("downloads", .GET) where id == nil:
            return ok(await service.list())
        case ("downloads", .POST) where id == nil:
            switch decode(NewDownload.self, from: body, expected: NewDownload.expected) {
            case .failure(let refusal): return error(.badRequest, refusal.message)
            case .success(let decoded): return await add(decoded.request, service)
            }
        case ("downloads", .GET) where verb == nil:
            guard let id, let item = await service.describe(id) else { return unknown(id) }
            return ok(item)
        case ("downloads", .POST) where verb == "pause" || verb == "resume":
            guard let id else { return unknown(id) }
            let known = verb == "pause" ? await service.pause(id) : await service.resume(id)
            guard known, let item = await service.describe(id) else { return unknown(id) }
            return ok(item)
        case ("downloads", .DELETE) where id != nil && verb == nil:
            let delete = query.first { $0.name == "delete" }?.value.map { ["1", "true", "yes"].contains($0) } ?? false
            guard let id, await service.remove(id, deleteData: delete) else { return unknown(id) }
            return ok(QueueAPI.Removed(removed: id))
        default:
            if verb != nil, verb != "pause", verb != "resume" {
                return error(.notFound, "no such API path: /api/\(path.joined(separator: "/"))")
            }
            return error(.methodNotAllowed, "method \(method.rawValue) not allowed here")
        }
    }

    private static func settings(_ body: [UInt8], _ service: DownloadService) async -> Answer {
        let change: SettingsChange
        switch decode(SettingsChange.self, from: body, expected: SettingsChange.expected) {
        case .failure(let refusal): return error(.badRequest, refusal.message)
        case .success(let decoded): change = decoded
        }
        if let problem = change.problem { return error(.badRequest, problem) }
        await service.setLimits(maxConcurrent: change.maxConcurrent, maxBytesPerSecond: change.maxBytesPerSecond)
        return ok(await service.limits)
    }

    /// 201 with the new download's ID, or 400 with why the queue refused it, naming the field.
    private static func add(_ request: DownloadQueue.Request, _ service: DownloadService) async -> Answer {
        do {
            return answer(.created, QueueAPI.Created(id: try await service.add(request)))
        } catch .badURL(let problem), .formatUnavailable(let problem) {
            return Self.error(.badRequest, problem)
        } catch {
            return Self.error(.badRequest, "\(error)")
        }
    }

    struct Refusal: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    static func ok(_ body: some Encodable) -> Answer { answer(.ok, body) }

    static func unknown(_ id: String?) -> Answer { error(.notFound, "no download with ID \(id ?? "")") }

    static func error(_ status: HTTPResponseStatus, _ message: String) -> Answer {
        answer(status, QueueAPI.Failure(error: message))
    }

    static func answer(_ status: HTTPResponseStatus, _ body: some Encodable) -> Answer {
        let data = (try? QueueAPI.encoder.encode(body)) ?? Data()
        return Answer(status: status, body: Array(data) + [10])
    }
}
