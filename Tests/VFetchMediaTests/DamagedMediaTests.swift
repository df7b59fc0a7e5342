import Foundation
import Testing
import VFetchMedia

/// Fixtures with bytes overwritten at random (mostly in the header) and holes cut at random:
/// every probe ends in an answer or a `MediaError`, never a crash or a hang.
@Suite struct DamagedMediaTests {
    @Test(arguments: Fixture.allCases)
    func damagedFilesNeverCrash(_ fixture: Fixture) async throws {
        let original = try bytes(of: try await fixture.path)
        var random = XorShift(seed: 0x5EED ^ UInt64(fixture.rawValue.utf8.count))
        var answers = 0
        for round in 0..<40 {
            var data = original
            for _ in 0...random.next() % 8 {
                let limit = round % 2 == 0 ? min(data.count, 4096) : data.count
                data[Int(random.next() % UInt64(limit))] = UInt8(truncatingIfNeeded: random.next())
            }
            let path = try temporaryFile(data, name: "damaged-" + fixture.rawValue)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let length = Int64(data.count)
            let cut = Int64(random.next() % UInt64(length))
            for present in [[0..<length], [0..<cut], [0..<cut / 2, cut..<length]] {
                do {
                    _ = try await withProbe(path: path, length: length, present: present) { probe in
                        (
                            probe.playableRanges(present: present), probe.bytesNeeded(toStartAt: 3),
                            probe.byteOffset(forTime: 7)
                        )
                    }
                    answers += 1
                } catch .aborted {
                    Issue.record("a file source never aborts")
                } catch {
                    // .needsBytes or .invalidData: both are answers.
                }
            }
        }
        #expect(answers > 0)
    }
}

struct XorShift {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
