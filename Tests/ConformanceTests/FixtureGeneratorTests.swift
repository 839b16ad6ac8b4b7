import Foundation
import LatchkeyFormat
import Testing

/// The committed fixtures are what the generator writes, and the generator is deterministic.
/// These run the built `latchkey-fixtures` (built with the tests by `swift build --build-tests`,
/// beside the test bundle); without it they are skipped.
@Suite struct FixtureGeneratorTests {
    static let binary: URL? = {
        var dirs: [URL] = []
        if let argv0 = CommandLine.arguments.first {
            dirs.append(URL(fileURLWithPath: argv0).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        if let exe = Bundle.main.executableURL { dirs.append(exe.deletingLastPathComponent()) }
        dirs.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for scratch in [".build-fixtures", ".build"] {
            dirs.append(packageRoot.appendingPathComponent("\(scratch)/debug"))
        }
        return dirs.map { $0.appendingPathComponent("latchkey-fixtures") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Runs the generator into a fresh temporary root (keychain/, backup/, manifest.json); the
    /// caller removes it.
    static func generateRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-fixtures-\(UUID().uuidString)")
        let p = Process()
        guard let exe = binary else { throw GeneratorMissing() }
        p.executableURL = exe
        p.arguments = [root.path]
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "latchkey-fixtures failed")
        return root
    }

    /// Runs the generator into a fresh temporary root; returns ROOT/keychain's files by relative path.
    static func generate() throws -> (files: [String: [UInt8]], cleanup: () -> Void) {
        let root = try generateRoot()
        return (
            try files(under: root.appendingPathComponent("keychain")), { try? FileManager.default.removeItem(at: root) }
        )
    }

    struct GeneratorMissing: Error {}

    static func files(under dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        let base = dir.resolvingSymlinksInPath().path
        guard let e = FileManager.default.enumerator(atPath: base) else { return out }
        for case let rel as String in e {
            var isDir: ObjCBool = false
            let full = base + "/" + rel
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
                out[rel] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: full)))
            }
        }
        return out
    }

    static func differences(_ a: [String: [UInt8]], _ b: [String: [UInt8]]) -> [String] {
        Set(a.keys).union(b.keys).sorted().filter { a[$0] != b[$0] }
    }

    @Test(.enabled(if: binary != nil, "latchkey-fixtures is not built beside the tests"))
    func generator_runTwice_writesIdenticalBytes() throws {
        let first = try Self.generate()
        defer { first.cleanup() }
        let second = try Self.generate()
        defer { second.cleanup() }
        #expect(!first.files.isEmpty)
        #expect(Self.differences(first.files, second.files) == [])
    }

    @Test(.enabled(if: binary != nil, "latchkey-fixtures is not built beside the tests"))
    func committedFixtures_matchAFreshGeneration() throws {
        let fresh = try Self.generate()
        defer { fresh.cleanup() }
        let committed = try Self.files(under: KeychainFixture.root)
        #expect(
            Self.differences(fresh.files, committed) == [],
            "fixtures/keychain is stale or hand-edited; run 'make fixtures'")
    }

    @Test(.enabled(if: binary != nil, "latchkey-fixtures is not built beside the tests"))
    func committedSyncFixtures_matchAFreshGeneration() throws {
        let root = try Self.generateRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fresh = try Self.files(under: root.appendingPathComponent("sync"))
        let committed = try Self.files(under: SyncFixtureTests.root)
        #expect(!fresh.isEmpty)
        #expect(
            Self.differences(fresh, committed) == [], "fixtures/sync is stale or hand-edited; run 'make fixtures'")
    }
}
