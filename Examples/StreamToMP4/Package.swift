// swift-tools-version:6.0
// An app that saves an HLS or DASH stream as one MP4 with `import VFetch`, vfetch taken by path.
import PackageDescription

let package = Package(
    name: "StreamToMP4",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "vfetch", path: "../..")],
    targets: [
        .executableTarget(name: "StreamToMP4", dependencies: [.product(name: "VFetch", package: "vfetch")])
    ]
)
