import Foundation
import Testing

/// `--passcode-command` / LATCHKEY_PASSCODE_COMMAND and `--password-command` /
/// LATCHKEY_BACKUP_PASSWORD_COMMAND (issue 18 §2, as restic's --password-command): the secret
/// is a command's stdout, the command runs under /bin/sh -c, a failure names its exit status
/// and never its output, and each is one source among the others, never two at once.
@Suite struct SecretCommandTests {
    func sandbox() throws -> CLISandbox { try CLISandbox.oneItemWithoutPasscodeInEnvironment() }

    static let printPasscode = "printf '%s\\n' '\(CLISandbox.passcode)'"

    @Test func passcodeCommand_optionAndVariable_unlock() throws {
        let sandbox = try sandbox()
        let byOption = try sandbox.run(["find", "--account", "a", "--passcode-command", Self.printPasscode])
        #expect(byOption.status == 0, "\(byOption.stderr)")
        #expect(byOption.stdout == Array("s3cret".utf8))
        let byVariable = try sandbox.run(
            ["find", "--account", "a"], env: ["LATCHKEY_PASSCODE_COMMAND": Self.printPasscode])
        #expect(byVariable.status == 0, "\(byVariable.stderr)")
        #expect(byVariable.stdout == Array("s3cret".utf8))
        // Through ArgumentParser as well (--return attributes --json is not the fast path's).
        let slow = try sandbox.run([
            "find", "--account", "a", "--class", "genp", "--accessible", "ak", "--passcode-command", Self.printPasscode
        ])
        #expect(slow.stdout == Array("s3cret".utf8), "\(slow.stderr)")
        // A shell runs it: a pipe works.
        let piped = try sandbox.run([
            "find", "--account", "a", "--passcode-command", "echo '\(CLISandbox.passcode)' | cat"
        ])
        #expect(piped.stdout == Array("s3cret".utf8), "\(piped.stderr)")
        // The wrong passcode printed is a wrong passcode.
        let wrong = try sandbox.run(["find", "--account", "a", "--passcode-command", "echo nope"])
        #expect(wrong.status == 4, "\(wrong.stderr)")
    }

    @Test func failingCommand_namesItsStatus_neverItsOutput() throws {
        let sandbox = try sandbox()
        let failing = "printf '%s' '\(CLISandbox.passcode)'; echo 'pinentry: cancelled' >&2; exit 3"
        let r = try sandbox.run(["find", "--account", "a", "--passcode-command", failing])
        #expect(r.status == 7, "\(r.stderr)")
        #expect(r.stderr.contains("--passcode-command") && r.stderr.contains("exited with status 3"), "\(r.stderr)")
        #expect(r.stderr.contains("(errSecIO -36)"), "\(r.stderr)")
        #expect(!r.stderr.contains(CLISandbox.passcode), "never the command's stdout: \(r.stderr)")
        #expect(r.stderr.contains("pinentry: cancelled"), "its own stderr reaches the user: \(r.stderr)")
        #expect(r.stdout.isEmpty)

        let killed = try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE_COMMAND": "kill -9 $$"])
        #expect(
            killed.status == 7 && killed.stderr.contains("LATCHKEY_PASSCODE_COMMAND")
                && killed.stderr.contains("killed by signal 9"),
            "\(killed.stderr)")

        let silent = try sandbox.run(["find", "--account", "a", "--passcode-command", "true"])
        #expect(silent.status == 2 && silent.stderr.contains("printed nothing"), "\(silent.stderr)")
    }

    @Test func oneSourceAtATime() throws {
        let sandbox = try sandbox()
        let file = try sandbox.writeFile("pw.txt", Array(CLISandbox.passcode.utf8))
        let both = try sandbox.run([
            "find", "--account", "a", "--passcode-file", file, "--passcode-command", Self.printPasscode
        ])
        #expect(both.status == 2 && both.stderr.contains("--passcode-file and --passcode-command"), "\(both.stderr)")
        for other in [["LATCHKEY_PASSCODE": CLISandbox.passcode], ["LATCHKEY_PASSCODE_FILE": file]] {
            let r = try sandbox.run(
                ["find", "--account", "a"],
                env: other.merging(["LATCHKEY_PASSCODE_COMMAND": Self.printPasscode]) { a, _ in a })
            #expect(r.status == 2, "\(other.keys): \(r.stderr)")
            #expect(
                r.stderr.contains(other.keys.first!) && r.stderr.contains("LATCHKEY_PASSCODE_COMMAND"), "\(r.stderr)")
            #expect(!r.stderr.contains(CLISandbox.passcode))
        }
        // An option wins over the variables, as --passcode-file does.
        let option = try sandbox.run(
            ["find", "--account", "a", "--passcode-command", Self.printPasscode],
            env: ["LATCHKEY_PASSCODE_FILE": "/nonexistent"])
        #expect(option.stdout == Array("s3cret".utf8), "\(option.stderr)")
    }

    /// The command runs once however often the command needs the passcode, and does not read
    /// latchkey's stdin (`import -` opens the keychain, running the command, before it reads
    /// the items there).
    @Test func runsOnce_andLeavesStdinToTheCommand() throws {
        let sandbox = try sandbox()
        let counting = "echo run >> runs.txt; head -c 3 >/dev/null; \(Self.printPasscode)"
        let line = #"{"class":"genp","acct":"b","v_Data":"cGlwZWQgc2VjcmV0"}"# + "\n"
        let imported = try sandbox.run(["import", "-", "--passcode-command", counting], stdin: Array(line.utf8))
        #expect(imported.status == 0, "stdin is not the command's: \(imported.stderr)")
        let found = try sandbox.run(["find", "--account", "b", "--passcode-command", counting])
        #expect(found.stdout == Array("piped secret".utf8), "\(found.stderr)")
        let runs = try String(
            contentsOfFile: sandbox.directory.appendingPathComponent("runs.txt").path, encoding: .utf8)
        #expect(runs == "run\nrun\n", "once per latchkey process: \(runs)")
    }

    @Test func backupPasswordCommand_optionAndVariable() throws {
        let sandbox = try sandbox()
        sandbox.environment["LATCHKEY_PASSCODE"] = CLISandbox.passcode
        let backup = try sandbox.run([
            "backup", "--output", "kc.backup", "--kdf-log-n", "10", "--password-command", "printf 'backup pw\\n'"
        ])
        #expect(backup.status == 0, "\(backup.stderr)")
        let newKeychain = sandbox.directory.appendingPathComponent("new.keychain").path
        let restore = try sandbox.run(
            ["restore", "kc.backup", "--dry-run", "--json"],
            env: ["LATCHKEY_KEYCHAIN": newKeychain, "LATCHKEY_BACKUP_PASSWORD_COMMAND": "echo 'backup pw'"])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect((try restore.json() as? [String: Any])?["restored"] as? Int == 1, "\(restore.out)")
        let wrong = try sandbox.run(
            ["restore", "kc.backup", "--dry-run", "--password-command", "echo nope"],
            env: ["LATCHKEY_KEYCHAIN": newKeychain])
        #expect(wrong.status == 4, "the command's password is used: \(wrong.stderr)")
        let failed = try sandbox.run(
            ["restore", "kc.backup", "--dry-run", "--password-command", "exit 5"],
            env: ["LATCHKEY_KEYCHAIN": newKeychain])
        #expect(
            failed.status == 7
                && failed.stderr.contains("backup password command (--password-command) exited with status 5"),
            "\(failed.stderr)")
        let both = try sandbox.run(
            ["restore", "kc.backup", "--dry-run"],
            env: [
                "LATCHKEY_KEYCHAIN": newKeychain, "LATCHKEY_BACKUP_PASSWORD": "backup pw",
                "LATCHKEY_BACKUP_PASSWORD_COMMAND": "echo 'backup pw'"
            ])
        #expect(both.status == 2 && both.stderr.contains("LATCHKEY_BACKUP_PASSWORD_COMMAND"), "\(both.stderr)")
    }
}
