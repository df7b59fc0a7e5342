import Foundation
import Testing
import VFetchMedia

@Suite struct PartialFileTests {
    private func withFile<T>(_ body: (String, [UInt8]) throws -> T) throws -> T {
        let contents = (0..<50).map { UInt8($0) }
        let path = try temporaryFile(contents, name: "partial.bin")
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path, contents)
    }

    private func read(_ file: PartialFile, at offset: Int64, count: Int = 100) -> (MediaRead, [UInt8]) {
        var buffer = [UInt8](repeating: 0xEE, count: count)
        let answer = buffer.withUnsafeMutableBytes { file.read(into: $0, at: offset) }
        guard case .bytes(let n) = answer else { return (answer, []) }
        return (answer, Array(buffer[..<n]))
    }

    @Test func readsOnlyPresentBytesAndNamesTheMissingRun() throws {
        try withFile { path, contents in
            let file = try PartialFile(path: path, length: 50, present: [30..<40, 10..<20, 15..<18])
            #expect(file.present == [10..<20, 30..<40])
            #expect(read(file, at: 12).0 == .bytes(8))
            #expect(read(file, at: 12).1 == Array(contents[12..<20]))
            #expect(read(file, at: 12, count: 3).1 == Array(contents[12..<15]))
            #expect(read(file, at: 0).0 == .missing(0..<10))
            #expect(read(file, at: 20).0 == .missing(20..<30))
            #expect(read(file, at: 25).0 == .missing(25..<30))
            #expect(read(file, at: 39).1 == [39])
            #expect(read(file, at: 40).0 == .missing(40..<50))
            #expect(read(file, at: 50).0 == .endOfFile)
            #expect(read(file, at: 77).0 == .endOfFile)
        }
    }

    @Test func presentRangesAreClippedToTheLength() throws {
        try withFile { path, _ in
            let file = try PartialFile(path: path, length: 45, present: [40..<60, -5..<3])
            #expect(file.present == [0..<3, 40..<45])
            #expect(read(file, at: 42).0 == .bytes(3))
            #expect(read(file, at: 45).0 == .endOfFile)
        }
    }

    @Test func wholeFileIsPresent() throws {
        try withFile { path, contents in
            let file = try PartialFile(path: path)
            #expect(file.length == 50)
            #expect(read(file, at: 0).1 == contents)
        }
    }

    @Test func fileShorterThanItsPresentRangesAborts() throws {
        try withFile { path, _ in
            let file = try PartialFile(path: path, length: 80, present: [0..<80])
            #expect(read(file, at: 50).0 == .aborted)
        }
    }

    @Test func missingFileIsInvalidData() {
        #expect(throws: MediaError.self) { try PartialFile(path: "/nonexistent/vfetch.part", length: 1, present: []) }
        #expect(throws: MediaError.self) { try PartialFile(path: "/nonexistent/vfetch.part") }
        #expect(throws: MediaError.self) { try PartialFile(path: "/tmp", length: 10, present: [0..<10]) }
    }
}
