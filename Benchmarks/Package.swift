// swift-tools-version:6.1
import PackageDescription

// The library benchmarks (issue 8): a package of their own so that building Latchkey never
// fetches package-benchmark. Run them with `make bench-lib` (results in docs/RESULTS.md).
//
// Latchkey is the package one directory up. SwiftPM names a path dependency after the last
// component of its directory, which is whatever the clone is called ("main", "latchkey",
// a worktree's name...), so that identity is computed here rather than written down.
let latchkeyDirectory = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "latchkey"

let package = Package(
    name: "LatchkeyBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        // package-benchmark, under its current name (the legacy identity "package-benchmark" warns).
        // MallocInterposer alone: the default RuntimeInterposer trait would need swift-runtime-interposer.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"])
    ],
    targets: [
        // The keychains of N items the benchmarks run on, shared with the probe.
        .target(
            name: "LatchkeyBenchFixtures",
            dependencies: [
                .product(name: "Latchkey", package: latchkeyDirectory),
                .product(name: "LatchkeyBackup", package: latchkeyDirectory)
            ]
        ),
        .executableTarget(
            name: "LatchkeyBenchmarks",
            dependencies: [
                "LatchkeyBenchFixtures",
                .product(name: "Latchkey", package: latchkeyDirectory),
                .product(name: "LatchkeyBackup", package: latchkeyDirectory),
                .product(name: "Benchmark", package: "benchmark")
            ],
            path: "Benchmarks/LatchkeyBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One operation in a plain process (no malloc interposer), for profilers.
        .executableTarget(
            name: "latchkey-lib-probe",
            dependencies: ["LatchkeyBenchFixtures", .product(name: "Latchkey", package: latchkeyDirectory)]
        )
    ],
    swiftLanguageModes: [.v6]
)
