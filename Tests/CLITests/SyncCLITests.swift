import Foundation
import Testing

/// `latchkey sync` end to end: three machines (each its own HOME, device secret and keychain,
/// the passcode in the environment) and a bare repository served by `git daemon` on
/// localhost, as a user would set it up.
@Suite(.serialized) struct SyncCLITests {
    final class Daemon {
        let process = Process()
        let port: Int
        let base: URL

        init(base: URL) throws {
            self.base = base
            port = Int.random(in: 20_000..<60_000)
            // git-daemon itself, not `git daemon`: git would run it as a child that outlives a
            // terminated parent.
            let execPath = Pipe()
            let find = Process()
            find.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            find.arguments = ["git", "--exec-path"]
            find.standardOutput = execPath
            try find.run()
            let dir = String(decoding: execPath.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            find.waitUntilExit()
            process.executableURL = URL(fileURLWithPath: dir + "/git-daemon")
            process.arguments = [
                "--reuseaddr", "--listen=127.0.0.1", "--port=\(port)", "--export-all",
                "--enable=receive-pack", "--base-path=\(base.path)", base.path
            ]
            process.standardError = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // Until it accepts connections.
            for _ in 0..<100 {
                let probe = Process()
                probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                probe.arguments = ["git", "ls-remote", "git://127.0.0.1:\(port)/remote.git"]
                probe.standardError = FileHandle.nullDevice
                probe.standardOutput = FileHandle.nullDevice
                try probe.run()
                probe.waitUntilExit()
                if probe.terminationStatus == 0 { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw CLITestError("git daemon did not start")
        }

        deinit {
            // Foundation's waitUntilExit can wait forever from a test's thread here; the
            // daemon is killed outright and its forks exit with it (--reuseaddr lets a later
            // run take a port).
            kill(process.processIdentifier, SIGKILL)
        }
    }

    static let gitEnv: [String: String?] = ["GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"]

    func machine() throws -> CLISandbox {
        let m = try CLISandbox()
        for (k, v) in Self.gitEnv { m.environment[k] = v }
        try m.run(["init", "--kdf-log-n", CLISandbox.kdfLogN]).expectSuccess()
        return m
    }

    @Test func threeMachinesOverGitDaemon() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lk-daemon-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let bare = base.appendingPathComponent("remote.git").path
        let initBare = Process()
        initBare.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        initBare.arguments = ["git", "init", "-q", "--bare", bare]
        try initBare.run()
        initBare.waitUntilExit()
        let daemon = try Daemon(base: base)
        let url = "git://127.0.0.1:\(daemon.port)/remote.git"
        let (a, b, c) = (try machine(), try machine(), try machine())

        try a.run(
            ["add", "--service", "mail", "--account", "alice", "--synchronizable", "yes"], stdin: Array("s3cret".utf8)
        )
        .expectSuccess()
        try a.run(["add", "--service", "local", "--account", "only-here"], stdin: Array("not-synced".utf8))
            .expectSuccess()
        let founded = try a.run(["sync", "init", "--remote", url, "--name", "a"])
        try founded.expectSuccess()
        let recovery = founded.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recovery.count == 64)  // 52 base-32 characters in groups of 4
        #expect(!founded.stderr.contains(recovery))

        let join = try b.run(["sync", "join", "--remote", url, "--name", "b"])
        try join.expectSuccess()
        let code = join.out.trimmingCharacters(in: .whitespacesAndNewlines)
        // A wrong code adds nobody (exit 1: no application shows it).
        #expect(try a.run(["sync", "approve", "ZZZZ-ZZZZ-ZZZZ"]).status == 1)
        try a.run(["sync", "approve", code]).expectSuccess()
        try b.run(["sync"]).expectSuccess()
        let found = try b.run(["find", "--service", "mail", "--account", "alice", "--synchronizable", "yes"])
        try found.expectSuccess()
        #expect(found.out == "s3cret")
        #expect(try b.run(["find", "--service", "local", "--account", "only-here"]).status == 1)

        // c joins with the recovery key, no member involved.
        let keyFile = c.directory.appendingPathComponent("recovery.txt")
        try Data(recovery.utf8).write(to: keyFile)
        try c.run(["sync", "join", "--remote", url, "--name", "c", "--recovery-key-file", keyFile.path]).expectSuccess()
        #expect(
            try c.run(["find", "--service", "mail", "--account", "alice", "--synchronizable", "yes"]).out == "s3cret")

        // Two changes on c, each synced; a syncs once and so holds only the second: the first
        // is in a's one listing from the sync history, as c's, between a's own two versions.
        for secret in ["s3cret-2", "s3cret-3"] {
            try c.run(
                ["update", "--service", "mail", "--account", "alice", "--synchronizable", "yes", "--set-data"],
                stdin: Array(secret.utf8)
            ).expectSuccess()
            try c.run(["sync"]).expectSuccess()
        }
        try a.run(["sync"]).expectSuccess()
        #expect(
            try a.run(["find", "--service", "mail", "--account", "alice", "--synchronizable", "yes"]).out == "s3cret-3")
        let changed = try a.run(["history", "mail/alice"])
        try changed.expectSuccess()
        #expect(!changed.out.contains("s3cret") && !changed.stderr.contains("s3cret"))
        #expect(
            try HistoryCommandTests.rows(changed).map { [$0.what, $0.place] } == [
                ["current", "here"], ["changed", "c"], ["changed", "here"]
            ], "\(changed.out)")

        // A delete on c reaches a and b.
        try c.run(["delete", "--service", "mail", "--account", "alice", "--synchronizable", "yes", "--yes"])
            .expectSuccess()
        try c.run(["sync"]).expectSuccess()
        try a.run(["sync"]).expectSuccess()
        #expect(try a.run(["find", "--service", "mail", "--account", "alice", "--synchronizable", "yes"]).status == 1)
        // The history keeps the deleted version (a's keychain's, as the delete found it: c's
        // delete is not listed twice) and the others; putting back the version only sync
        // keeps brings it back everywhere, as a new item.
        let history = try a.run(["history", "--service", "mail", "--account", "alice"])
        try history.expectSuccess()
        #expect(!history.out.contains("s3cret"))
        let rows = try HistoryCommandTests.rows(history)
        #expect(
            rows.map { [$0.what, $0.place] } == [["deleted", "here"], ["changed", "c"], ["changed", "here"]],
            "\(history.out)")
        let n = try #require(rows.first { $0.place == "c" }?.n)
        let restored = try a.run(["history", "--service", "mail", "--account", "alice", "--restore", String(n)])
        try restored.expectSuccess()
        #expect(restored.stderr.contains("restored version \(n) of mail/alice as a new item"), "\(restored.stderr)")
        try a.run(["sync"]).expectSuccess()
        try b.run(["sync"]).expectSuccess()
        #expect(
            try b.run(["find", "--service", "mail", "--account", "alice", "--synchronizable", "yes"]).out == "s3cret-2")

        // The history's bound is this machine's setting, kept in its state.
        #expect(try a.run(["sync", "config"]).out.contains("history-days: 365"))
        try a.run(["sync", "config", "--history-days", "30"]).expectSuccess()
        #expect(try a.run(["sync", "config"]).out.contains("history-days: 30"))
        #expect(try a.run(["sync", "status"]).out.contains("kept 30 days"))
        #expect(try a.run(["sync", "config", "--history-days", "0"]).status != 0)
        let devices = try a.run(["sync", "devices", "--json"])
        try devices.expectSuccess()
        #expect(devices.out.contains("\"name\" : \"c\""))
        try a.run(["sync", "remove", "c"]).expectSuccess()
        let removed = try c.run(["sync"])
        #expect(removed.status != 0)
        #expect(removed.stderr.contains("removed"))
        let status = try c.run(["sync", "status"])
        #expect(status.out.contains("failed"))
        // `latchkey status` shows how the last sync ended, with or without an agent.
        let cStatus = try c.run(["status"])
        #expect(cStatus.stderr.contains("sync: the last sync failed") && cStatus.stderr.contains("removed"))
        let aStatus = try a.run(["status"])
        #expect(aStatus.stderr.contains("sync: last synced"), "\(aStatus.stderr)")
    }

    /// A real `latchkey sync` killed with SIGKILL at many moments (fetching, merging, writing
    /// its state, pushing): the next sync converges, nothing lost, nothing sent twice.
    @Test func aSyncKilledAtAnyMomentConvergesOnTheNextRun() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lk-kill-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "init", "-q", "--bare", base.appendingPathComponent("remote.git").path]
        try git.run()
        git.waitUntilExit()
        let url = "file://" + base.appendingPathComponent("remote.git").path
        let a = try machine(), b = try machine()
        let founded = try a.run(["sync", "init", "--remote", url, "--name", "a"])
        try founded.expectSuccess()
        let keyFile = try a.writeFile("recovery", Array(founded.out.utf8))
        try b.run(["sync", "join", "--remote", url, "--name", "b", "--recovery-key-file", keyFile]).expectSuccess()
        let lines = (0..<300).map {
            #"{"class":"genp","svce":"bulk","acct":"item-\#($0)","sync":1,"v_Data":"c2VjcmV0"}"#
        }
        try a.run(["import", "-"], stdin: Array(lines.joined(separator: "\n").utf8)).expectSuccess()

        var killed = 0
        for (round, delay) in [0.0, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5].enumerated() {
            try a.run(
                ["add", "--service", "round", "--account", "r\(round)", "--synchronizable", "yes"],
                stdin: Array("v\(round)".utf8)
            ).expectSuccess()
            let p = Process()
            p.executableURL = try CLISandbox.binary()
            p.arguments = ["sync"]
            p.environment = a.environment
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            Thread.sleep(forTimeInterval: delay)
            if kill(p.processIdentifier, SIGKILL) == 0 { killed += 1 }
            p.waitUntilExit()
        }
        #expect(killed > 5)
        try a.run(["sync"]).expectSuccess()
        try b.run(["sync"]).expectSuccess()
        func count(_ m: CLISandbox, _ service: String) throws -> Int {
            let r = try m.run([
                "find", "--service", service, "--synchronizable", "yes", "--limit", "all", "--jsonl", "--return",
                "attributes"
            ])
            return r.out.split(separator: "\n").count
        }
        #expect(try count(b, "bulk") == 300)
        #expect(try count(b, "round") == 11)
        #expect(try count(a, "round") == 11)
        // One version of each item in history: no change was sent twice (a second copy of the
        // version b holds would be listed, as a's).
        let history = try b.run(["history", "--service", "round", "--account", "r3"])
        try history.expectSuccess()
        #expect(
            try HistoryCommandTests.rows(history).map { [$0.what, $0.place] } == [["current", "here"]], "\(history.out)"
        )
    }

    @Test func aClearErrorWithoutGit() throws {
        let m = try machine()
        let r = try m.run(["sync", "init", "--remote", "file:///nowhere"], env: ["PATH": "/nonexistent"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("needs git"))
    }
}

extension CLIResult {
    /// Fails with the command's stderr when it did not exit 0.
    func expectSuccess(sourceLocation: SourceLocation = #_sourceLocation) throws {
        if status != 0 { Issue.record("exit \(status): \(stderr)", sourceLocation: sourceLocation) }
        guard status == 0 else { throw CLITestError("command failed: \(stderr)") }
    }
}
