// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "vfetch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vfetch", targets: ["VFetchCLI"]),
        .executable(name: "vfetch-origin", targets: ["VFetchOrigin"]),
        .library(name: "VFetch", targets: ["VFetch"]),
        // The player cache and the download queue inside an app (what `vfetch serve` runs).
        .library(name: "VFetchServe", targets: ["VFetchServe"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // SHA-256, HMAC and AES-128-CBC with the CPU's instructions (BoringSSL). 4.x: 3.x's AES._CBC
        // ran the key schedule for every 16-byte block (about 10 MB/s); 4.x calls AES_cbc_encrypt.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // What the library and serve say, to the handler the app (or the command line) chooses.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `make docs`: the DocC catalogs of the public libraries.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libcurl, as the system provides it.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // libavformat's headers (Debian's libavformat-dev); the libraries are opened at run time.
        .systemLibrary(name: "CAVFormat", providers: [.apt(["libavformat-dev"])]),
        // Pure Swift: ranges, the segment scheduler, response validation. Knows no C but through
        // swift-crypto (SHA-256, HMAC, AES-128-CBC).
        .target(
            name: "VFetchCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // HLS playlists and DASH manifests: parsed into one catalog of tracks and segments. Pure Swift
        // (DASH's XML through Foundation's XMLParser); knows no network.
        .target(name: "VFetchStreams", dependencies: ["VFetchCore", "VFetchContainers"]),
        // Media containers read byte by byte, in pure Swift: MP4 boxes, Matroska's EBML, where a file's
        // index lies, how a stream's segments are framed, and which container an output name asks for.
        .target(name: "VFetchContainers", dependencies: ["VFetchCore"]),
        // The engine: owns libcurl and the files on disk; fetches a file or a stream's segments.
        .target(name: "VFetchEngine", dependencies: ["VFetchCore", "VFetchContainers", "VFetchStreams", "CCurl"]),
        // The player cache's directory: its entries (each a download's files), their index, kept
        // playlists and the streams they make up.
        .target(name: "VFetchCache", dependencies: ["VFetchEngine", "VFetchStreams", "VFetchCore"]),
        // Probes partial media files with libavformat: what is playable, which bytes are needed next.
        .target(name: "VFetchMedia", dependencies: ["VFetchEngine", "VFetchContainers", "VFetchCore", "CAVFormat"]),
        // The public `import VFetch` API: a download of any URL (a file, or an HLS/DASH stream remuxed
        // into one file), built on the engine and the media layer.
        .target(
            name: "VFetch", dependencies: ["VFetchEngine", "VFetchMedia", "VFetchStreams", "VFetchContainers", "VFetchCore"]),
        // `vfetch serve`: the player cache over HTTP (SwiftNIO).
        .target(
            name: "VFetchServe",
            dependencies: [
                "VFetch",
                "VFetchCache",
                "VFetchEngine",
                "VFetchCore",
                "VFetchMedia",
                "VFetchStreams",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The `vfetch` command line.
        .executableTarget(
            name: "VFetchCLI",
            dependencies: [
                "VFetch",
                "VFetchCache",
                "VFetchContainers",
                "VFetchEngine",
                "VFetchCore",
                "VFetchMedia",
                "VFetchServe",
                "VFetchStreams",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A real HTTP origin with fault switches, for tests and the demo.
        .target(
            name: "TestOrigin",
            dependencies: [
                "VFetchCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "VFetchOrigin", dependencies: ["TestOrigin"]),
        .testTarget(name: "VFetchCoreTests", dependencies: ["VFetchCore"]),
        .testTarget(name: "VFetchContainersTests", dependencies: ["VFetchContainers", "VFetchCore"]),
        .testTarget(name: "VFetchCacheTests", dependencies: ["VFetchCache", "VFetchCore"]),
        .testTarget(name: "VFetchStreamsTests", dependencies: ["VFetchStreams"]),
        .testTarget(name: "VFetchTests", dependencies: ["VFetch", "VFetchServe", "VFetchEngine", "VFetchCore", "TestOrigin"]),
        .testTarget(name: "VFetchCLITests", dependencies: ["TestOrigin", "VFetchCore", "VFetchCache", "VFetch", "VFetchServe"]),
        .testTarget(
            name: "VFetchMediaTests", dependencies: ["VFetchMedia", "VFetchContainers", "VFetchCache", "VFetchCore", "TestOrigin"]),
        // The cache entry's and the playlist's state machines and the request gate, driven directly, and the
        // server's disk threads.
        .testTarget(
            name: "VFetchServeTests",
            dependencies: [
                "VFetchServe",
                "VFetchCache",
                "VFetchEngine",
                "VFetchCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
