// play-through-cache CACHE-DIR URL: starts the player cache in this process, has ffmpeg (the player) decode
// URL through its proxy URL, printing one MD5 per decoded frame (`-f framemd5`) on stdout, then lists what
// the cache kept.
import Foundation
import VFetchServe

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: play-through-cache CACHE-DIR URL\n".utf8))
    exit(2)
}
let (directory, url) = (arguments[arguments.startIndex], arguments[arguments.startIndex + 1])

let cache = try await PlayerCacheServer.start(directory: directory, maxCacheSize: 1 << 30)
let player = Process()
player.executableURL = URL(fileURLWithPath: "/usr/bin/env")
player.arguments = ["ffmpeg", "-v", "error", "-i", cache.proxyURL(for: url), "-map", "0:v", "-f", "framemd5", "-"]
let status: Int32 = try await withCheckedThrowingContinuation { continuation in
    player.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
    do { try player.run() } catch { continuation.resume(throwing: error) }
}
for entry in cache.entries() {
    FileHandle.standardError.write(Data("cached \(entry.url): \(entry.bytesCached) of \(entry.length ?? -1) bytes\n".utf8))
}
await cache.stop()
exit(status)
