import Foundation
import Testing

/// A prompt in the middle of a long command (the backup password of a restore) erases the
/// progress bar while it waits, and the bar comes back after it: `finish()` there had ended
/// the bar for good, so a restore of a password-protected backup never showed its progress.
@Suite struct ProgressPromptTests {
    /// Runs `latchkey args…` on a pseudo-terminal through python3's pty module, answering
    /// `prompt` with `line` once it shows and `pause` seconds have passed (longer than the
    /// bar's first-drawing delay); what the terminal showed, or nil without python3.
    static func answeringLate(_ sb: CLISandbox, _ args: [String], prompt: String, line: String, pause: Double)
        throws -> CLIResult?
    {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
        let driver = #"""
            import os, pty, sys, time, signal
            signal.alarm(60)  # a prompt that never comes fails the test instead of hanging it
            prompt, line, pause = sys.argv[1], sys.argv[2], float(sys.argv[3]); argv = sys.argv[4:]
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(argv[0], argv)
            out = b""
            while prompt.encode() not in out:
                try: chunk = os.read(fd, 1024)
                except OSError: break
                if not chunk: break
                out += chunk
            time.sleep(pause)
            os.write(fd, (line + "\n").encode())
            while True:
                try: chunk = os.read(fd, 1024)
                except OSError: break
                if not chunk: break
                out += chunk
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(out.decode("utf-8", "replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """#
        return try sb.run(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", driver, prompt, line, String(pause), try CLISandbox.binary().path] + args,
            env: ["TERM": "xterm", "LATCHKEY_BACKUP_PASSWORD": nil])
    }

    @Test func restore_ofAPasswordBackup_showsItsProgressAfterThePasswordPrompt() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        for i in 0..<20 { try sb.add(account: "user\(i)", data: Array("secret \(i)".utf8)) }
        let archive = sb.directory.appendingPathComponent("kc.backup").path
        let made = try sb.run(
            ["backup", "--output", archive, "--kdf-log-n", "10"], env: ["LATCHKEY_BACKUP_PASSWORD": "backup pw"])
        #expect(made.status == 0, "\(made.stderr)")
        let restored = sb.directory.appendingPathComponent("restored.keychain").path
        guard
            let r = try Self.answeringLate(
                sb, ["restore", archive, "--keychain", restored, "--keychain-kdf-log-n", "10"],
                prompt: "Backup password", line: "backup pw", pause: 0.6)
        else {
            Issue.record("python3 is needed for this test (its pty module drives the prompt)")
            return
        }
        #expect(r.status == 0, "\(r.out)")
        let afterPrompt = try #require(r.out.range(of: "Backup password")).upperBound
        let rest = r.out[afterPrompt...]
        #expect(
            rest.contains("\rrestore  ") || rest.contains("\rverify  "),
            "a bar is drawn after the prompt: \(rest.debugDescription)")
        #expect(rest.contains("restored 20 item(s)"), "\(rest)")
    }
}
