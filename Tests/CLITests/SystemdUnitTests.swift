import Foundation
import Testing

/// The agent as a systemd user service (issue 18 §2): dist/systemd/latchkey-agent.service,
/// which `make install` installs under $(PREFIX)/lib/systemd/user/ and `make uninstall`
/// removes. Its ExecStart must be an agent invocation this build runs.
@Suite struct SystemdUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `make ARGUMENTS` in the package root.
    static func make(_ arguments: [String], in sandbox: CLISandbox) throws -> CLIResult {
        try sandbox.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            ["make", "-s", "--no-print-directory", "-C", root.path] + arguments, env: [:])
    }

    /// The unit `make install` would install with PREFIX=/opt/lk.
    static func unit(_ sandbox: CLISandbox) throws -> String {
        let r = try make(["systemd-unit", "PREFIX=/opt/lk"], in: sandbox)
        guard r.status == 0 else { throw CLITestError("make systemd-unit failed: \(r.stderr)") }
        return r.out
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

    @Test func systemdAnalyze_acceptsTheUnit() throws {
        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let analyze else {
            // Not every build machine has systemd; the ExecStart test above still runs the agent.
            print("SystemdUnitTests: systemd-analyze is not installed; the unit file was not verified by systemd")
            return
        }
        let sandbox = try CLISandbox()
        let binary = try CLISandbox.binary().path
        let unit = try Self.unit(sandbox).replacingOccurrences(of: "/opt/lk/bin/latchkey", with: binary)
        let path = try sandbox.writeFile("latchkey-agent.service", Array(unit.utf8))
        let r = try sandbox.run(executable: URL(fileURLWithPath: analyze), ["verify", "--man=no", path], env: [:])
        #expect(r.status == 0 && r.stderr.isEmpty, "systemd-analyze verify: \(r.stderr)")
    }

    @Test func uninstall_removesTheUnit() throws {
        let sandbox = try CLISandbox()
        let destdir = sandbox.directory.appendingPathComponent("stage").path
        let unitPath = destdir + "/usr/lib/systemd/user/latchkey-agent.service"
        try FileManager.default.createDirectory(
            atPath: destdir + "/usr/lib/systemd/user", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: unitPath, contents: Data())
        let r = try Self.make(["uninstall", "DESTDIR=\(destdir)", "PREFIX=/usr"], in: sandbox)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: unitPath), "make uninstall removes the unit")
        // And install puts it there: the recipe installs what `make systemd-unit` prints.
        let makefile = try String(contentsOfFile: Self.root.appendingPathComponent("Makefile").path, encoding: .utf8)
        #expect(
            makefile.contains("\"$$root/lib/systemd/user/latchkey-agent.service\""), "make install installs the unit")
    }
}
