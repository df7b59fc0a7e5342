import Testing

@testable import VFetchCore

@Suite struct RangeRequestTests {
    @Test(
        arguments: [
            (nil, RangeRequest.whole),
            ("bytes=0-99", .part(0..<100)),
            ("bytes=0-", .part(0..<1000)),
            ("bytes=990-2000", .part(990..<1000)),
            ("bytes=-100", .part(900..<1000)),
            ("bytes=-5000", .part(0..<1000)),
            (" bytes = 5-9 ", .part(5..<10)),
            ("bytes=1000-", .unsatisfiable),
            ("bytes=-0", .unsatisfiable),
            ("bytes=0-1,5-9", .whole),
            ("items=0-9", .whole),
            ("bytes=abc", .whole),
            ("bytes=9-5", .whole),
            ("bytes=-", .whole),
            ("bytes", .whole),
            ("bytes=0-1,x", .whole),
            ("bytes=99999999999999999999-", .whole),
            ("bytes=0-9223372036854775807", .part(0..<1000)),
            ("bytes=9223372036854775807-9223372036854775807", .unsatisfiable),
            ("bytes=-9223372036854775807", .part(0..<1000)),
        ] as [(String?, RangeRequest)])
    func parses(header: String?, expected: RangeRequest) {
        #expect(RangeRequest(header: header, length: 1000) == expected)
    }

    @Test func anEmptyFileHasNoSatisfiableRange() {
        #expect(RangeRequest(header: "bytes=0-", length: 0) == .unsatisfiable)
        #expect(RangeRequest(header: nil, length: 0) == .whole)
    }
}
