import Foundation
import VFetchEngine

/// Probes a file on disk with the given present ranges, on a thread of its own: libavformat's
/// reads block, and must not hold one of the few threads of Swift's cooperative pool.
///
/// Returns what the file is and the time ranges playable from `present`. Throws as
/// ``MediaProbe/init(source:)`` does; a file that cannot be opened is `.invalidData`.
public func probeMedia(path: String, length: Int64, present: [Range<Int64>]) async throws(MediaError) -> (
    info: MediaInfo, playable: [ClosedRange<Double>]
) {
    try await probeMedia(present: present) { () throws(MediaError) in
        try PartialFile(path: path, length: length, present: present)
    }
}

/// Probes `file` as ``probeMedia(path:length:present:)`` probes a path.
func probeMedia(file: PartialFile) async throws(MediaError) -> (info: MediaInfo, playable: [ClosedRange<Double>]) {
    try await probeMedia(present: file.present) { () throws(MediaError) in file }
}

private func probeMedia(
    present: [Range<Int64>], opening: @escaping @Sendable () throws(MediaError) -> PartialFile
) async throws(MediaError) -> (
    info: MediaInfo, playable: [ClosedRange<Double>]
) {
    try await onOwnThread(named: "vfetch media probe") {
        Result { () throws(MediaError) in
            let probe = try MediaProbe(source: opening())
            return (probe.info, probe.playableRanges(present: present))
        }
    }.get()
}
