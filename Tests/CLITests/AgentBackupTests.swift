#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// `latchkey backup` through an unlocked agent, so that a scheduled backup needs no passcode in
/// its environment (issue 18 §2). Every agent started here is stopped in a `defer`.
@Suite struct AgentBackupTests {
    static let noPasscode: [String: String?] = ["LATCHKEY_PASSCODE": nil]
    static let noAgent: [String: String?] = ["LATCHKEY_AGENT_SOCK": "none"]

    static func sandbox() throws -> CLISandbox {
        let sb = try AgentCLITests.sandbox()
        sb.environment["LATCHKEY_BACKUP_PASSWORD"] = "backup password"
        for (account, accessible) in [
            ("a", "ak"), ("b", "ck"), ("c", "dk"), ("d", "aku"), ("e", "cku"), ("f", "dku"), ("g", "akpu")
        ] {
            try sb.add(
                account: account, data: Array("secret-\(account)".utf8),
                ["--accessible", accessible, "--label", "label \(account)"],
                env: noAgent)
        }
        let inet = try sb.run(
            ["add", "--class", "inet", "--account", "web", "--server", "example.com", "--port", "443"],
            stdin: Array("web-secret".utf8), env: noAgent)
        guard inet.status == 0 else { throw CLITestError("add inet: \(inet.stderr)") }
        // An item of another application's group: a backup holds every group.
        try sb.add(account: "h", data: Array("secret-h".utf8), ["--app-id", "other.app"], env: noAgent)
        return sb
    }

    /// Every item of `keychain` (device `device`), data and attributes, one JSON line each, sorted.
    func contents(_ sb: CLISandbox, keychain: String, device: String) throws -> [String] {
        var lines: [String] = []
        for c in ["genp", "inet"] {
            let r = try sb.run(
                ["find", "--class", c, "--limit", "all", "--return", "all", "--jsonl", "--synchronizable", "any"],
                env: ["LATCHKEY_KEYCHAIN": keychain, "LATCHKEY_DEVICE": device, "LATCHKEY_AGENT_SOCK": "none"])
            guard r.status == 0 else { throw CLITestError("find \(c): \(r.stderr)") }
            lines += r.out.split(separator: "\n").map(String.init)
        }
        return lines.sorted()
    }

    @Test func backup_throughAnUnlockedAgent_needsNoPasscode_andRestoresAsALocalOne() throws {
        let sb = try AgentBackupTests.sandbox()
        let device = sb.environment["LATCHKEY_DEVICE"]!
        let local = sb.directory.appendingPathComponent("local.backup").path
        let made = try sb.run(["backup", "--output", local, "--kdf-log-n", "10"], env: AgentBackupTests.noAgent)
        #expect(made.status == 0, "\(made.stderr)")

        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let served = sb.directory.appendingPathComponent("agent.backup").path
        let r = try sb.run(["backup", "--output", served, "--kdf-log-n", "10"], env: AgentBackupTests.noPasscode)
        #expect(r.status == 0, "no passcode needed: \(r.stderr)")

        // The two archives hold the same items: the same listing, UUIDs, dates and all.
        let listLocal = try sb.run(["backup-list", local, "--jsonl"], env: AgentBackupTests.noAgent)
        let listServed = try sb.run(["backup-list", served, "--jsonl"], env: AgentBackupTests.noAgent)
        #expect(listLocal.status == 0 && listServed.status == 0, "\(listLocal.stderr) \(listServed.stderr)")
        let sortedLocal = listLocal.out.split(separator: "\n").sorted(),
            sortedServed = listServed.out.split(separator: "\n").sorted()
        #expect(sortedLocal.count == 8, "every item but akpu, of every group: \(listLocal.out)")
        #expect(
            listServed.out.contains("\"agrp\":\"other.app\""), "the agent's backup holds the other group's item too")
        #expect(sortedLocal == sortedServed)

        // Restored into new keychains (this device, so the ThisDeviceOnly items come back too),
        // both give exactly the source's items, secrets included.
        let source = try contents(sb, keychain: sb.keychainPath, device: device).filter { !$0.contains("\"akpu\"") }
        #expect(source.count == 7)
        for (name, archive) in [("from-local", local), ("from-agent", served)] {
            let keychain = sb.directory.appendingPathComponent("\(name).keychain").path
            let restored = try sb.run(
                ["restore", archive, "--keychain-kdf-log-n", "10", "--json"],
                env: ["LATCHKEY_KEYCHAIN": keychain, "LATCHKEY_AGENT_SOCK": "none"])
            #expect(restored.status == 0, "\(name): \(restored.stderr)")
            #expect(try contents(sb, keychain: keychain, device: device) == source, "\(name)")
        }

        // On another machine the password opens the migratory items of the agent's backup.
        let elsewhere = try sb.run(
            ["backup-verify", served, "--json"],
            env: ["LATCHKEY_DEVICE": sb.directory.appendingPathComponent("other.device").path])
        #expect(elsewhere.status == 0, "\(elsewhere.stderr)")
        let json = try #require(try elsewhere.json() as? [String: Any])
        #expect(json["itemsChecked"] as? Int == 5 && json["itemsNotDecryptable"] as? Int == 3, "\(json)")
    }

    @Test func backup_throughALockedAgent_withoutAPasscode_isRefused_andWritesNothing() throws {
        let sb = try AgentBackupTests.sandbox()
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        let out = sb.directory.appendingPathComponent("out.backup").path
        let r = try sb.run(["backup", "--output", out, "--kdf-log-n", "10"], env: AgentBackupTests.noPasscode)
        #expect(r.status == 4, "\(r.stderr)")
        #expect(r.stderr.contains("latchkey unlock"), "says how: \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// An item that needs user presence needs the passcode even through the agent: with no way
    /// to ask, the backup stops before writing anything.
    @Test func backup_throughTheAgent_ofAUserPresenceItem_withoutAPasscode_isRefusedBeforeWriting() throws {
        let sb = try AgentBackupTests.sandbox()
        try sb.add(
            account: "guarded", data: Array("x".utf8), ["--require-user-presence"], env: AgentBackupTests.noAgent)
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let r = try sb.run(["backup", "--output", "-", "--kdf-log-n", "10"], env: AgentBackupTests.noPasscode)
        #expect(r.status == 4, "\(r.stderr)")
        #expect(r.stderr.contains("need user presence"), "\(r.stderr)")
        #expect(r.stdout.isEmpty, "nothing written")
    }

    /// Ctrl-C while a backup runs through the agent (its password's KDF under the bar): the
    /// temporary file is removed, the bar erased, and the agent goes on serving.
    @Test func ctrlC_duringABackupThroughTheAgent_leavesNoTemporaryFile_andErasesTheBar() throws {
        let sb = try AgentBackupTests.sandbox()
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let out = sb.directory.appendingPathComponent("out.tar").path
        let (end, text) = try BackupOutputTests().interrupt(
            sb, ["backup", "--output", out, "--kdf-log-n", "18"],
            env: ["LATCHKEY_PASSCODE": ""]
        ) { names, text in
            names.contains { $0.hasPrefix("out.tar.tmp-") } && text.contains("backup  ")
        }
        #expect(end == .killed(SIGINT), "\(end)")
        let left = try FileManager.default.contentsOfDirectory(atPath: sb.directory.path).filter {
            $0.contains(".tmp-")
        }
        #expect(left.isEmpty, "no temporary file: \(left)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let lastBar = try #require(text.range(of: "backup  ", options: .backwards))
        #expect(text[lastBar.upperBound...].contains("\r\u{1B}[K"), "the bar is erased: \(text.debugDescription)")
        #expect(try sb.run(["status"]).status == 0, "the agent still answers")
    }
}
