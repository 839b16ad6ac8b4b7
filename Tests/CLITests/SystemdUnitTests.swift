import Foundation
import Testing

/// The systemd user units of dist/systemd/, which `make install` installs under
/// $(PREFIX)/lib/systemd/user/ (and `make deb` packages) and `make uninstall` removes: the agent
/// as a service (issue 18 §2), and the daily backup with its timer (issue 31, part 8). Each
/// ExecStart must be an invocation this build runs.
@Suite struct SystemdUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `make ARGUMENTS` in the package root.
    static func make(_ arguments: [String], in sandbox: CLISandbox) throws -> CLIResult {
        try sandbox.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            ["make", "-s", "--no-print-directory", "-C", root.path] + arguments, env: [:])
    }

    static let units = ["latchkey-agent.service", "latchkey-backup.service", "latchkey-backup.timer"]

    /// The unit `make install` would install with PREFIX=/opt/lk (the agent's by default).
    static func unit(_ sandbox: CLISandbox, _ name: String = "latchkey-agent.service") throws -> String {
        let r = try make(["systemd-unit", "PREFIX=/opt/lk", "UNIT=\(name)"], in: sandbox)
        guard r.status == 0 else { throw CLITestError("make systemd-unit failed: \(r.stderr)") }
        return r.out
    }

    /// The values of a unit's `KEY=` lines, in order.
    static func values(_ key: String, _ unit: String) -> [String] {
        unit.split(separator: "\n").filter { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// ExecStart's argv as systemd makes it from `environment`: `${NAME}` is one word, `$NAME`
    /// as a word of its own is split at whitespace (none when empty).
    static func expand(_ line: String, _ environment: [String: String]) -> [String] {
        line.split(separator: " ").flatMap { word -> [String] in
            if word.hasPrefix("${"), word.hasSuffix("}") {
                return [environment[String(word.dropFirst(2).dropLast())] ?? ""]
            }
            if word.hasPrefix("$") {
                return (environment[String(word.dropFirst())] ?? "").split(separator: " ").map(String.init)
            }
            return [String(word)]
        }
    }

    static func execStart(_ unit: String) -> [String]? {
        unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }
            .map { $0.dropFirst("ExecStart=".count).split(separator: " ").map(String.init) }
    }

    @Test func execStart_runsTheAgent_asTheUnitSaysIt() throws {
        let sandbox = try CLISandbox()
        let unit = try Self.unit(sandbox)
        let argv = try #require(Self.execStart(unit), "an ExecStart line: \(unit)")
        #expect(argv.first == "/opt/lk/bin/latchkey", "the installed binary under PREFIX: \(argv)")
        #expect(argv.dropFirst().first == "agent", "\(argv)")
        #expect(!argv.contains("--daemon"), "systemd supervises a foreground agent (Type=exec)")
        #expect(
            unit.contains("Environment=LATCHKEY_AGENT_SOCK=%t/latchkey/agent.sock"),
            "%t is $XDG_RUNTIME_DIR, the clients' default")

        // The same arguments, run by this build in the foreground as systemd would: it answers
        // `status`, and stops on SIGTERM (what `systemctl --user stop` sends) with exit 0.
        sandbox.environment["LATCHKEY_AGENT_SOCK"] = sandbox.directory.appendingPathComponent("agent.sock").path
        let arguments = argv.dropFirst().map { "'\($0)'" }.joined(separator: " ")
        let r = try sandbox.runShell(
            """
            "$0" \(arguments) 2>agent.log & pid=$!
            i=0; until "$0" status >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 400 ] && break; sleep 0.05; done
            "$0" status; st=$?
            kill -TERM $pid; wait $pid; echo "status=$st agent=$?"
            """)
        #expect(r.out.hasSuffix("status=0 agent=0\n"), "\(r.out) \(r.stderr)")
    }

    /// latchkey-backup.service as systemd runs it: its Environment= defaults (%h the home, %E
    /// ~/.config), overridden by ~/.config/latchkey/backup.env, then ExecStart. The backup
    /// password comes from the default file (0600), the passcode from a command the settings
    /// file names; three runs with LATCHKEY_BACKUP_KEEP=2 leave the two newest backups.
    @Test func backupService_backsUpIntoItsDirectory_keepingTheNewest() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", data: Array("s3cret".utf8))
        let home = sandbox.directory.appendingPathComponent("home").path
        let config = home + "/.config"
        try FileManager.default.createDirectory(atPath: config + "/latchkey", withIntermediateDirectories: true)
        let passcode = try sandbox.writeFile("passcode", Array(CLISandbox.passcode.utf8))
        FileManager.default.createFile(
            atPath: config + "/latchkey/backup-password", contents: Data("backup password\n".utf8),
            attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(
            atPath: config + "/latchkey/backup.env",
            contents: Data(
                """
                # what a user writes
                LATCHKEY_BACKUP_KEEP=2
                LATCHKEY_BACKUP_OPTIONS=--kdf-log-n 10 --compress zstd
                LATCHKEY_PASSCODE_COMMAND=cat \(passcode)

                """.utf8))

        let binary = try CLISandbox.binary().path
        let unit = try Self.unit(sandbox, "latchkey-backup.service").replacingOccurrences(
            of: "/opt/lk/bin/latchkey", with: binary
        ).replacingOccurrences(of: "%h", with: home).replacingOccurrences(of: "%E", with: config)
        var environment: [String: String] = [:]
        for assignment in Self.values("Environment", unit) {
            let (name, value) = assignment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map(String.init).splitPair()
            environment[name] = value
        }
        let file = try #require(Self.values("EnvironmentFile", unit).first)
        #expect(file == "-" + config + "/latchkey/backup.env", "optional, in ~/.config/latchkey")
        let settings = try String(contentsOfFile: String(file.dropFirst()), encoding: .utf8)
        for line in settings.split(separator: "\n") where !line.hasPrefix("#") && line.contains("=") {
            let (name, value) = line.split(separator: "=", maxSplits: 1).map(String.init).splitPair()
            environment[name] = value
        }
        let exec = try #require(Self.values("ExecStart", unit).first)
        let argv = Self.expand(exec, environment)
        #expect(argv.first == binary && !argv.contains(where: { $0.isEmpty }), "\(argv)")
        #expect(!unit.contains("LATCHKEY_PASSCODE=") && !unit.contains("LATCHKEY_BACKUP_PASSWORD="), "no secret")

        var env: [String: String?] = ["LATCHKEY_PASSCODE": nil, "LATCHKEY_AGENT_SOCK": "none", "HOME": home]
        for (name, value) in environment { env[name] = value }
        var written: [String] = []
        for _ in 0..<3 {
            let r = try sandbox.run(executable: URL(fileURLWithPath: binary), Array(argv.dropFirst()), env: env)
            #expect(r.status == 0, "\(argv): \(r.stderr)")
            written.append(r.out.trimmingCharacters(in: .newlines))
        }
        let dir = home + "/.local/share/latchkey/backups"
        #expect(written.allSatisfy { $0.hasPrefix(dir + "/login-") }, "\(written)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map { dir + "/" + $0 }
        #expect(left == Array(written.suffix(2)), "the two newest stay: \(left)")
        let check = try sandbox.run(
            ["backup-verify", written[2]], env: ["LATCHKEY_BACKUP_PASSWORD": "backup password"])
        #expect(check.status == 0, "the password file's password, one newline dropped: \(check.stderr)")
    }

    @Test func timer_startsTheBackupDaily_andCatchesUp() throws {
        let sandbox = try CLISandbox()
        let timer = try Self.unit(sandbox, "latchkey-backup.timer")
        #expect(Self.values("OnCalendar", timer) == ["daily"] && Self.values("Persistent", timer) == ["true"])
        #expect(Self.values("Unit", timer).isEmpty, "it starts latchkey-backup.service, its namesake")
        #expect(Self.values("WantedBy", timer) == ["timers.target"])
    }

    @Test(arguments: SystemdUnitTests.units)
    func systemdAnalyze_acceptsTheUnit(_ name: String) throws {
        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let analyze else {
            // Not every build machine has systemd; the ExecStart tests above still run them.
            print("SystemdUnitTests: systemd-analyze is not installed; the unit files were not verified by systemd")
            return
        }
        let sandbox = try CLISandbox()
        let binary = try CLISandbox.binary().path
        // A timer is checked beside the service it starts.
        for unit in Self.units {
            let text = try Self.unit(sandbox, unit).replacingOccurrences(of: "/opt/lk/bin/latchkey", with: binary)
            _ = try sandbox.writeFile(unit, Array(text.utf8))
        }
        let path = sandbox.directory.appendingPathComponent(name).path
        let r = try sandbox.run(executable: URL(fileURLWithPath: analyze), ["verify", "--man=no", path], env: [:])
        #expect(r.status == 0 && r.stderr.isEmpty, "systemd-analyze verify \(name): \(r.stderr)")
    }

    /// `make install` installs the units through `make install-systemd` (what it runs, and what
    /// `make deb` packages), with @BINDIR@ replaced; `make uninstall` removes them again.
    @Test func installSystemd_installsEveryUnit_andUninstallRemovesThem() throws {
        let sandbox = try CLISandbox()
        let destdir = sandbox.directory.appendingPathComponent("stage").path
        let r = try Self.make(["install-systemd", "DESTDIR=\(destdir)", "PREFIX=/usr"], in: sandbox)
        #expect(r.status == 0, "\(r.stderr)")
        let installed =
            Self.units.map { destdir + "/usr/lib/systemd/user/" + $0 } + [
                destdir + "/usr/share/doc/latchkey/examples/backup.env"
            ]
        for path in installed {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(!text.contains("@BINDIR@"), "\(path)")
            #expect(SystemdUnitTests.permissions(path) == 0o644, "\(path)")
        }
        #expect(try Self.execStart(String(contentsOfFile: installed[1], encoding: .utf8))?.first == "/usr/bin/latchkey")
        let makefile = try String(contentsOfFile: Self.root.appendingPathComponent("Makefile").path, encoding: .utf8)
        #expect(makefile.contains("install: release install-systemd"), "make install installs the units")

        let u = try Self.make(["uninstall", "DESTDIR=\(destdir)", "PREFIX=/usr"], in: sandbox)
        #expect(u.status == 0, "\(u.stderr)")
        for path in installed {
            #expect(!FileManager.default.fileExists(atPath: path), "make uninstall removes \(path)")
        }
    }

    static func permissions(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }
}

extension Array where Element == String {
    /// The first two elements (the second "" when there is none).
    fileprivate func splitPair() -> (String, String) { (first ?? "", count > 1 ? self[1] : "") }
}
