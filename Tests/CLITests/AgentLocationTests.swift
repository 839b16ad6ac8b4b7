import Foundation
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// Another local user who makes the agent's default directory first (issue 13, point 6):
/// `/tmp/latchkey-<uid>` when XDG_RUNTIME_DIR is unset, `$XDG_RUNTIME_DIR/latchkey` otherwise.
/// Every command other than the agent's own must then open the keychain itself, silently;
/// `latchkey agent` and `status` refuse with a message that says what to fix.
///
/// Tests cannot become another user without root: they plant what that user would (a
/// symlink, a directory with the wrong mode holding a file named agent.sock) under an
/// XDG_RUNTIME_DIR of the sandbox, the same code path as /tmp/latchkey-<uid>. When the tests
/// run as root and setpriv(1) is installed, the last test does it for real with two uids.
@Suite struct AgentLocationTests {
    /// A keychain with one item, and XDG_RUNTIME_DIR pointing at `run/` in the sandbox.
    static func sandbox() throws -> CLISandbox {
        let sb = try CLISandbox()
        sb.environment["XDG_RUNTIME_DIR"] = sb.directory.appendingPathComponent("run").path
        try FileManager.default.createDirectory(
            at: sb.directory.appendingPathComponent("run"), withIntermediateDirectories: true)
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        return sb
    }

    /// Every ordinary command works, with nothing on stderr.
    static func expectCommandsWork(
        _ sb: CLISandbox, env: [String: String?] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let found = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
        #expect(found.status == 0 && found.out == "s3cret", "find: \(found.stderr)", sourceLocation: sourceLocation)
        #expect(found.stderr.isEmpty, "nothing alarming: \(found.stderr)", sourceLocation: sourceLocation)
        let added = try sb.run(["add", "--account", "bob", "--service", "mail"], stdin: Array("x".utf8), env: env)
        #expect(added.status == 0 && added.stderr.isEmpty, "add: \(added.stderr)", sourceLocation: sourceLocation)
        let dumped = try sb.run(["dump"], env: env)
        #expect(dumped.status == 0, "dump: \(dumped.stderr)", sourceLocation: sourceLocation)
    }

    @Test func agentDirectoryPlantedAsSymlink_commandsStillWork_agentRefuses() throws {
        let sb = try AgentLocationTests.sandbox()
        let theirs = sb.directory.appendingPathComponent("theirs")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: true)
        try Data().write(to: theirs.appendingPathComponent("agent.sock"))
        #expect(symlink(theirs.path, sb.directory.appendingPathComponent("run/latchkey").path) == 0)

        try AgentLocationTests.expectCommandsWork(sb)

        let agent = try sb.run(["agent"])
        #expect(agent.status == 7)
        #expect(
            agent.stderr.contains("symbolic link") && agent.stderr.contains("XDG_RUNTIME_DIR"),
            "says what to fix: \(agent.stderr)")
        let status = try sb.run(["status"])
        #expect(
            status.status == 7 && status.stderr.contains("XDG_RUNTIME_DIR"),
            "status asked for the agent: \(status.stderr)")
    }

    @Test func agentDirectoryWithOpenMode_commandsStillWork_agentRefuses() throws {
        let sb = try AgentLocationTests.sandbox()
        let dir = sb.directory.appendingPathComponent("run/latchkey").path
        #expect(mkdir(dir, 0o777) == 0 && chmod(dir, 0o777) == 0)
        try Data().write(to: URL(fileURLWithPath: dir + "/agent.sock"))

        try AgentLocationTests.expectCommandsWork(sb)

        let agent = try sb.run(["agent"])
        #expect(agent.status == 7)
        #expect(agent.stderr.contains("chmod 700 \(dir)"), "says what to fix: \(agent.stderr)")
    }

    /// LATCHKEY_AGENT_SOCK is the user asking for that agent: when it cannot be used the
    /// command still works on the file, and says why it did not use the agent.
    @Test func unusableExplicitSocket_commandsWork_withAWarning() throws {
        let sb = try AgentLocationTests.sandbox()
        let dir = sb.directory.appendingPathComponent("explicit").path
        #expect(mkdir(dir, 0o700) == 0)
        try Data().write(to: URL(fileURLWithPath: dir + "/agent.sock"))
        let env: [String: String?] = ["LATCHKEY_AGENT_SOCK": dir + "/agent.sock"]
        let found = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
        #expect(found.status == 0 && found.out == "s3cret", "\(found.stderr)")
        #expect(found.stderr.contains("warning") && found.stderr.contains("not a socket"), "\(found.stderr)")
    }

    /// The real attack: uid B makes /tmp/latchkey-A (mode 0700, so A cannot even look inside)
    /// before A's first command. A's commands work; A's agent refuses and says what to do.
    @Test(
        .enabled(
            if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv(1) to run commands as two other uids"))
    func anotherUserOwnsTmpLatchkeyUID() throws {
        let sb = try CLISandbox()
        let victim = UInt32.random(in: 40_000...49_999), attacker = victim + 10_000
        let planted = "/tmp/latchkey-\(victim)"
        guard mkdir(planted, 0o700) == 0 else {
            throw CLITestError("\(planted) exists already; run again (another uid is drawn)")
        }
        defer { rmdir(planted) }
        #expect(chown(planted, attacker, attacker) == 0)
        let home = sb.directory.appendingPathComponent("victim")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        #expect(chown(home.path, victim, victim) == 0)
        let binary = try CLISandbox.binary().path
        func asVictim(_ args: [String], stdin: [UInt8] = []) throws -> CLIResult {
            try sb.run(
                executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--reuid=\(victim)", "--regid=\(victim)", "--clear-groups", binary] + args, stdin: stdin,
                env: [
                    "XDG_RUNTIME_DIR": nil, "LATCHKEY_PASSCODE": nil, "HOME": home.path, "XDG_DATA_HOME": home.path,
                    "LATCHKEY_KEYCHAIN": home.path + "/login.keychain", "LATCHKEY_DEVICE": home.path + "/device.secret"
                ])
        }
        let made = try asVictim(["init", "--no-passcode"])
        #expect(made.status == 0, "\(made.stderr)")
        let added = try asVictim(["add", "--account", "alice"], stdin: Array("s3cret".utf8))
        #expect(added.status == 0 && added.stderr.isEmpty, "\(added.stderr)")
        let found = try asVictim(["find", "--account", "alice"])
        #expect(found.status == 0 && found.out == "s3cret" && found.stderr.isEmpty, "\(found.stderr)")

        let agent = try asVictim(["agent"])
        #expect(agent.status == 7)
        #expect(
            agent.stderr.contains("belongs to uid \(attacker)") && agent.stderr.contains("XDG_RUNTIME_DIR"),
            "\(agent.stderr)")
    }
}
