// swift-tools-version:6.0
// An app that plays a URL through the embedded player cache with `import VFetchServe`, vfetch taken by path.
import PackageDescription

let package = Package(
    name: "PlayThroughCache",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "vfetch", path: "../..")],
    targets: [
        .executableTarget(name: "PlayThroughCache", dependencies: [.product(name: "VFetchServe", package: "vfetch")])
    ]
)
