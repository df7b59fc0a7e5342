import Testing

@testable import VFetchCore

@Suite struct HumanSizeTests {
    @Test(
        arguments: [
            (3, "3 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (512 << 20, "512 MiB"),
            (3 << 29, "1.5 GiB"), (10 << 30, "10 GiB"),
            // Just under a unit rounds up to it, never `1024.0 KiB`.
            ((1 << 20) - 1, "1 MiB"), ((1 << 20) - 60, "1023.9 KiB"),
        ] as [(Int64, String)])
    func sizesReadAsAPersonWritesThem(bytes: Int64, expected: String) {
        #expect(humanSize(bytes) == expected)
    }
}
