import Foundation
import Testing

/// The release a build is (issue 18 §1): `latchkey --version` prints the semantic version of
/// CHANGELOG.md's newest heading and, when built from a git work tree, the commit; a build from
/// a tarball (no .git) prints the version alone (scripts/build-info.sh, run before every build
/// by Plugins/LatchkeyBuildInfo); the package has a licence.
@Suite struct ReleaseTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs a program to completion; its stdout, and whether it exited 0.
    static func run(_ path: String, _ args: [String], in directory: URL? = nil) throws -> (ok: Bool, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        if let directory { p.currentDirectoryURL = directory }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus == 0, String(decoding: data, as: UTF8.self))
    }

    static var git: String? {
        ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The newest `## X.Y.Z` heading of CHANGELOG.md.
    static func changelogVersion() throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let heading = try #require(
            text.split(separator: "\n").first { $0.hasPrefix("## ") && $0.dropFirst(3).first?.isNumber == true })
        return String(heading.dropFirst(3).prefix { !$0.isWhitespace })
    }

    @Test func version_isTheChangelogsSemanticVersion_andTheCommitOfTheWorkTree() throws {
        let version = try Self.changelogVersion()
        let parts = version.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "semantic version: \(version)")
        let result = try CLISandbox().run(["--version"])
        #expect(result.status == 0)
        let printed = result.out.trimmingCharacters(in: .newlines)
        guard let git = Self.git,
            let head = try? Self.run(git, ["-C", Self.root.path, "rev-parse", "--short=12", "HEAD"]), head.ok
        else {
            #expect(printed == version, "built outside a work tree: the version alone")
            return
        }
        let commit = head.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            printed == "\(version) (commit \(commit))" || printed == "\(version) (commit \(commit)-modified)",
            "\(printed)")
    }

    /// The prebuild script of Plugins/LatchkeyBuildInfo: the commit of a work tree, nil for a
    /// tarball and for a copy unpacked inside another repository's work tree.
    @Test func buildInfo_namesTheCommitOfAWorkTree_andNoneWithoutOne() throws {
        let git = try #require(Self.git, "git is needed to make the work tree")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-buildinfo-" + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: dir) }
        let tarball = dir.appendingPathComponent("tarball"), repo = dir.appendingPathComponent("repo")
        let nested = repo.appendingPathComponent("vendor/latchkey")
        for d in [tarball, nested] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        let script = Self.root.appendingPathComponent("scripts/build-info.sh").path
        func buildInfo(_ package: URL) throws -> String {
            let out = dir.appendingPathComponent("out-" + UUID().uuidString)
            #expect(try Self.run("/bin/sh", [script, package.path, out.path]).ok)
            return try String(contentsOf: out.appendingPathComponent("BuildInfo.swift"), encoding: .utf8)
        }
        #expect(try buildInfo(tarball).contains("static let commit: String? = nil"))

        try "x".write(to: repo.appendingPathComponent("file"), atomically: true, encoding: .utf8)
        for args in [
            ["init", "-q"], ["add", "file"],
            ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one"]
        ] {
            #expect(try Self.run(git, ["-C", repo.path] + args).ok)
        }
        let head = try Self.run(git, ["-C", repo.path, "rev-parse", "--short=12", "HEAD"]).out.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(head.count == 12)
        #expect(try buildInfo(repo).contains("static let commit: String? = \"\(head)\""))
        try "y".write(to: repo.appendingPathComponent("file"), atomically: true, encoding: .utf8)
        #expect(try buildInfo(repo).contains("static let commit: String? = \"\(head)-modified\""))
        #expect(
            try buildInfo(nested).contains("static let commit: String? = nil"),
            "a tarball unpacked inside another work tree is not that tree's commit")
    }

    @Test func licence_isApache2() throws {
        let licence = try String(contentsOf: Self.root.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(licence.contains("Apache License\n                           Version 2.0, January 2004"))
        #expect(licence.contains("END OF TERMS AND CONDITIONS"))
    }
}
