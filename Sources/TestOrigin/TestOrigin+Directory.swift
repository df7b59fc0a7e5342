import Foundation

extension TestOrigin {
    /// Publishes every regular file under `directory` at `prefix` + its relative path, each with
    /// the `Content-Type` its extension calls for (see ``contentType(forExtension:)``), so a
    /// segmented stream made on disk is served as a CDN serves it. Symbolic links are skipped.
    ///
    /// `prefix` starts with "/" and has no trailing slash ("/hls"); "" publishes at the root.
    public func publishDirectory(_ directory: URL, at prefix: String, behavior: OriginBehavior = OriginBehavior()) throws {
        let root = directory.standardizedFileURL.path
        let files = FileManager.default.enumerator(atPath: root)
        while let relative = files?.nextObject() as? String {
            let path = root + "/" + relative
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType == .typeRegular else { continue }
            var fileBehavior = behavior
            fileBehavior.contentType = Self.contentType(forExtension: (relative as NSString).pathExtension)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            publish(prefix + "/" + relative, bytes, behavior: fileBehavior)
        }
    }

    /// The `Content-Type` of a stream's file, from its extension (case-insensitive):
    /// `application/octet-stream` for one it does not know.
    public static func contentType(forExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "m3u8": "application/vnd.apple.mpegurl"
        case "mpd": "application/dash+xml"
        case "ts": "video/mp2t"
        case "m4s", "mp4": "video/mp4"
        case "m4a": "audio/mp4"
        case "vtt": "text/vtt"
        case "meta4": "application/metalink4+xml"
        default: "application/octet-stream"  // .key among them, as servers send AES keys
        }
    }
}
