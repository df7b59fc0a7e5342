// swift-tools-version:6.1
// Microbenchmarks of vfetch's pure-Swift core (package-benchmark). See README.md; run with `make bench-micro`.
import PackageDescription

let package = Package(
    name: "VFetchMicroBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // The parent package's Sources/VFetchCore, compiled again here through a symlink: its API is
        // `package` access, which another package cannot see.
        .target(
            name: "VFetchCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                "VFetchCore",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // vfetch's SHA-256 and AES-128-CBC on a whole file, for crypto-vs-openssl.sh.
        .executableTarget(name: "CryptoFile", dependencies: ["VFetchCore"]),
    ],
    swiftLanguageModes: [.v6]
)
