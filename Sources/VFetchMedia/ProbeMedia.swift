import Foundation

/// Probes a file on disk with the given present ranges, on a thread of its own: libavformat's
/// reads block, and must not hold one of the few threads of Swift's cooperative pool.
///
/// Returns what the file is and the time ranges playable from `present`. Throws as
/// ``MediaProbe/init(source:)`` does; a file that cannot be opened is `.invalidData`.
public func probeMedia(path: String, length: Int64, present: [Range<Int64>]) async throws(MediaError) -> (
    info: MediaInfo, playable: [ClosedRange<Double>]
) {
    let result: Result<(info: MediaInfo, playable: [ClosedRange<Double>]), MediaError> =
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    returning: Result { () throws(MediaError) in
                        let probe = try MediaProbe(source: PartialFile(path: path, length: length, present: present))
                        return (probe.info, probe.playableRanges(present: present))
                    })
            }
            thread.name = "vfetch media probe"
            thread.start()
        }
    return try result.get()
}
