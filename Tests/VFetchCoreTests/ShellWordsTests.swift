import Testing

@testable import VFetchCore

@Suite struct ShellWordsTests {
    @Test(
        arguments: [
            ("mpv", ["mpv"]),
            ("  mpv   --no-video ", ["mpv", "--no-video"]),
            ("mpv --title='My film'", ["mpv", "--title=My film"]),
            ("\"/opt/My Player/play\" -x", ["/opt/My Player/play", "-x"]),
            (#"a\ b "c\"d" 'e\f' """#, ["a b", "c\"d", "e\\f", ""]),
            (#""x\y""#, ["x\\y"]),
            ("", []),
        ] as [(String, [String])])
    func splitsAsAShellDoes(line: String, words: [String]) throws {
        #expect(try ShellWords.split(line) == words)
    }

    @Test func unterminatedQuotesAreRefused() {
        for line in ["mpv 'x", "mpv \"x", "mpv x\\"] {
            #expect(throws: ShellWords.Unterminated.self) { try ShellWords.split(line) }
        }
    }
}
