import Foundation
import Testing

/// SplitMix64 (Steele, Lea and Flood, 2014): a small, fast generator whose whole state is one
/// number, so any fuzz input is made again from its seed alone.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (0 when the bound is 0).
    mutating func below(_ bound: Int) -> Int {
        bound > 0 ? Int(next(upperBound: UInt64(bound))) : 0
    }

    /// True once in `n` times.
    mutating func oneIn(_ n: Int) -> Bool { below(n) == 0 }

    mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
}

/// One fuzz input: its bytes, a generator for the other choices a check makes with it (holes,
/// times, lengths), and what it takes to make it again.
struct FuzzCase: CustomStringConvertible {
    var bytes: [UInt8]
    var random: SplitMix64
    let target: String
    /// The run's seed (`FUZZ_SEED`), not the target's.
    let runSeed: UInt64
    let number: Int

    var description: String {
        let seed = "0x" + String(runSeed, radix: 16)
        return "\(target), input \(number) of run seed \(seed) (again: FUZZ_SEED=\(seed) FUZZ_INPUT=\(number))"
    }
}

/// One parser under fuzz: valid inputs to start from, how to damage them, and what must hold for
/// any input. A crash kills the test process, which is the failure; `check` records any property
/// that does not hold with `#expect`, naming the input.
///
/// A new parser (an HLS or DASH playlist, say) is one more `FuzzTarget` in a suite's list.
struct FuzzTarget: Sendable, CustomStringConvertible {
    var name: String
    /// Inputs in a default run, seeds included: chosen so that every suite runs in seconds.
    var inputs: Int
    /// Valid inputs. Each runs as it is first, then damaged copies of them; `random` is the
    /// target's own generator, for seeds made at random (manifests of random files, say).
    var seeds: @Sendable (_ random: inout SplitMix64) async throws -> [[UInt8]]
    var mutator: Mutator
    var check: @Sendable (_ input: inout FuzzCase) async throws -> Void

    var description: String { name }

    /// Runs every input, the seeds first; returns how many ran.
    @discardableResult
    func run() async throws -> Int {
        let settings = FuzzSettings(target: name)
        var random = SplitMix64(seed: settings.seed)
        let seeds = try await self.seeds(&random)
        precondition(!seeds.isEmpty, "\(name): a fuzz target needs a seed")
        let corpus = seeds.map { Seed(bytes: $0, landmarks: mutator.landmarks($0)) }
        let count = settings.inputs(inputs)
        let started = ContinuousClock.now
        defer {
            if settings.verbose {
                let took = ContinuousClock.now - started
                FileHandle.standardError.write(Data("fuzz: \(name): \(count) inputs in \(took)\n".utf8))
            }
        }
        for number in 0..<count where settings.only == nil || settings.only == number {
            // Each input has its own generator, so one input is made again without the others.
            var generator = SplitMix64(seed: settings.seed ^ (UInt64(number) &* 0xD6E8_FEB8_6659_FD93))
            let bytes =
                number < seeds.count ? seeds[number] : mutator.mutate(corpus, using: &generator)
            var input = FuzzCase(
                bytes: bytes, random: generator, target: name, runSeed: settings.runSeed, number: number)
            if let directory = settings.saveDirectory {
                try Data(bytes).write(to: URL(fileURLWithPath: directory + "/\(name)-\(number)"))
            }
            if settings.verbose {
                // Unbuffered, so the line is out before a crash.
                FileHandle.standardError.write(Data("fuzz: \(input), \(bytes.count) bytes\n".utf8))
            }
            try await check(&input)
            // The checks are CPU work on the shared pool (two threads on two cores): yield between
            // inputs, so the other tests' tasks (a download's events, an interrupt) are not starved.
            await Task.yield()
        }
        return count
    }
}

/// How many inputs a run tries, and from which seed. Fixed unless the environment says otherwise,
/// so every run tries the same inputs and a failure comes back on the next run:
///
///     FUZZ_ITERATIONS=100 swift test --filter Fuzz     # a long run: 100 times the inputs of each target
///     FUZZ_SEED=0x1234 swift test --filter Fuzz        # other inputs than the default ones
///     FUZZ_SEED=0x1234 FUZZ_INPUT=917 swift test --filter Fuzz    # only input 917 of each target
///     FUZZ_VERBOSE=1 swift test --filter Fuzz --no-parallel       # each input named before it runs
///     FUZZ_INPUT=917 FUZZ_SAVE=DIR swift test --filter Fuzz       # input 917 of each target saved in DIR
///
/// A crash ends the test process before any message: run again with FUZZ_VERBOSE=1, and the last
/// line printed for the crashed target names the input. Each target's seed is the run's seed
/// (0 unless FUZZ_SEED says) mixed with a hash of its name, so targets never share inputs.
struct FuzzSettings {
    var runSeed: UInt64
    var seed: UInt64
    var scale: Int
    var only: Int?
    var verbose: Bool
    var saveDirectory: String?

    init(target: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        runSeed =
            environment["FUZZ_SEED"].flatMap { text in
                text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
            } ?? 0
        // FNV-1a of the name: stable across runs and platforms, unlike `hashValue`.
        let named = target.utf8.reduce(UInt64(0xCBF2_9CE4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        seed = runSeed ^ named
        scale = environment["FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? 1
        only = environment["FUZZ_INPUT"].flatMap { Int($0) }
        verbose = environment["FUZZ_VERBOSE"].map { !$0.isEmpty && $0 != "0" } ?? false
        saveDirectory = environment["FUZZ_SAVE"]
    }

    func inputs(_ base: Int) -> Int {
        let (scaled, overflow) = base.multipliedReportingOverflow(by: scale)
        let count = overflow ? Int.max : scaled
        // A replayed input runs even when it lies past the default count.
        if let only { return max(count, only + 1) }
        return count
    }
}
