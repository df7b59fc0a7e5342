// stream-to-mp4 URL OUTPUT [FORMAT]: saves the stream's chosen tracks (FORMAT as `vfetch get --format`,
// `best` if not given) remuxed into OUTPUT, printing each event as the JSON line `vfetch get --json` prints.
import Foundation
import VFetch

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2 || arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: stream-to-mp4 URL OUTPUT [FORMAT]\n".utf8))
    exit(2)
}
let (url, output) = (arguments[arguments.startIndex], arguments[arguments.startIndex + 1])
var options = DownloadOptions()
options.format = arguments.count == 3 ? arguments.last : "best"

let download = Download(url: url, to: .file(output), options: options)
let printing = Task {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    for await event in download.events {
        if let line = try? encoder.encode(event) { print(String(decoding: line, as: UTF8.self)) }
    }
}
do {
    let summary = try await download.run()
    await printing.value
    print("saved \(summary.path): \(summary.stream?.segments ?? 0) segments, \(summary.stream?.mediaSeconds ?? 0) s of media")
} catch {
    await printing.value
    FileHandle.standardError.write(Data("stream-to-mp4: \(error)\n".utf8))
    exit(1)
}
