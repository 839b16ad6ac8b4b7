// swift-tools-version:6.0
import PackageDescription

// Module boundaries (README "Layout"):
// OpenSSL is reached only through CLatchkeyCrypto (C) and LatchkeyCrypto (Swift);
// libarchive only through LatchkeyBackup.
let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Latchkey", targets: ["Latchkey"]),
        .library(name: "LatchkeySecurity", targets: ["LatchkeySecurity"]),
        // Backup and restore as a library: for Benchmarks/ (the package-benchmark suite).
        .library(name: "LatchkeyBackup", targets: ["LatchkeyBackup"]),
        .executable(name: "latchkey", targets: ["latchkey"]),
        .executable(name: "latchkey-secret-service", targets: ["latchkey-secret-service"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0")
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // sd-bus, the D-Bus library of libsystemd: only LatchkeyDBus reaches it.
        .systemLibrary(
            name: "CSystemdBus",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        // No unsafe build flags anywhere: SwiftPM refuses a package that has them as a dependency by
        // version. The C warnings are checked by `make test` (Makefile, c-warnings).
        .target(name: "CLatchkeyCrypto", dependencies: ["COpenSSL"]),
        .target(name: "LatchkeyCrypto", dependencies: ["CLatchkeyCrypto"]),
        .target(name: "LatchkeyFormat", dependencies: ["LatchkeyCrypto"]),
        .target(name: "Latchkey", dependencies: ["LatchkeyFormat", "LatchkeyCrypto"]),
        .target(name: "LatchkeyBackup", dependencies: ["Latchkey", "CArchive"]),
        // Sync between the owner's machines over git (spec/SYNC.md), over the library's seam.
        .target(name: "LatchkeySync", dependencies: ["Latchkey", "LatchkeyFormat", "LatchkeyCrypto"]),
        // MemoryFileSystem (durability model, fault and power-cut injection) for the tests and
        // fuzzers; no product exposes it and no library links it.
        .target(name: "LatchkeyTestSupport", dependencies: ["Latchkey"]),
        .target(name: "LatchkeySecurity", dependencies: ["Latchkey", "LatchkeyFormat", "LatchkeyCrypto"]),
        // The agent's server (`latchkey agent`): only the executable and the tests link it; apps
        // reach an agent through the client in Latchkey.
        .target(name: "LatchkeyAgent", dependencies: ["Latchkey", "LatchkeyFormat", "LatchkeyCrypto", "LatchkeySync"]),
        .executableTarget(
            name: "latchkey",
            dependencies: [
                "Latchkey", "LatchkeyAgent", "LatchkeyBackup", "LatchkeySync",
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ],
            plugins: ["LatchkeyBuildInfo"]
        ),
        // `latchkey --version` names the git commit of a build from a work tree
        // (scripts/build-info.sh, run before every build; nothing when built from a tarball).
        .plugin(name: "LatchkeyBuildInfo", capability: .buildTool()),
        // The Secret Service provider (spec/SECRET-SERVICE.md): a D-Bus binding over sd-bus, the
        // provider over the library's public API and the agent, and a program of its own, linked
        // with the system's libsystemd (which has no static library), apart from the static CLI.
        .target(name: "LatchkeyDBus", dependencies: ["CSystemdBus"]),
        .target(
            name: "LatchkeySecretService",
            dependencies: ["Latchkey", "LatchkeyCrypto", "LatchkeyFormat", "LatchkeyDBus"]),
        .executableTarget(
            name: "latchkey-secret-service", dependencies: ["Latchkey", "LatchkeyDBus", "LatchkeySecretService"]),
        .executableTarget(
            name: "latchkey-fixtures",
            dependencies: ["Latchkey", "LatchkeyFormat", "LatchkeyCrypto", "LatchkeyBackup", "LatchkeySync"],
            path: "tools/FixtureGenerator"
        ),
        .executableTarget(
            name: "latchkey-bench",
            dependencies: ["Latchkey", "LatchkeyFormat", "LatchkeyBackup", "LatchkeySecurity"],
            path: "Benchmarks/latchkey-bench"
        ),
        .testTarget(name: "LatchkeyCryptoTests", dependencies: ["LatchkeyCrypto"]),
        .testTarget(name: "LatchkeyFormatTests", dependencies: ["LatchkeyFormat"]),
        .testTarget(
            name: "LatchkeyTests",
            dependencies: ["Latchkey", "LatchkeyAgent", "LatchkeyFormat", "LatchkeyBackup", "LatchkeyTestSupport"]),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "Latchkey", "LatchkeyFormat", "LatchkeyCrypto", "LatchkeyBackup", "LatchkeySync", "LatchkeyTestSupport"
            ]),
        .testTarget(name: "CLITests", dependencies: ["latchkey", "latchkey-secret-service", "LatchkeyTestSupport"]),
        .testTarget(
            name: "LatchkeySyncTests",
            dependencies: ["LatchkeySync", "Latchkey", "LatchkeyAgent", "LatchkeyTestSupport"]),
        .testTarget(name: "LatchkeyBackupTests", dependencies: ["LatchkeyBackup", "LatchkeyTestSupport"]),
        .testTarget(
            name: "LatchkeySecurityTests",
            dependencies: ["LatchkeySecurity", "Latchkey", "LatchkeyAgent", "LatchkeyFormat", "LatchkeyTestSupport"]),
        .testTarget(name: "SeedSampleTests", dependencies: ["LatchkeySecurity", "Latchkey"]),
        // A keychain wrapper declaring Keychain, KeychainError, ItemClass, KeychainAccess and
        // Query, and its tests importing it beside LatchkeySecurity (issue 18 §1, item 1).
        .target(
            name: "AppleStyleWrapper", dependencies: ["LatchkeySecurity"], path: "Tests/NameClash/AppleStyleWrapper"),
        .testTarget(name: "NameClashTests", dependencies: ["AppleStyleWrapper", "LatchkeySecurity"])
    ],
    swiftLanguageModes: [.v6]
)
