import Foundation
import Testing

/// Issue 14 point 9 and issue 18 §2: every file that holds a secret or an identity can be a
/// pipe (`--passcode-file <(pass show x)`, `/dev/stdin`, a FIFO), read as a stream; and
/// LATCHKEY_PASSCODE_FILE / LATCHKEY_BACKUP_PASSWORD_FILE name such files. Every case runs
/// a shell that writes into a real pipe.
@Suite struct SecretPipeTests {
    func sandbox() throws -> CLISandbox { try CLISandbox.oneItemWithoutPasscodeInEnvironment() }

    /// Shell that makes the FIFO `name`, writes `text` into it from a background process,
    /// and runs `command`; the writer is killed afterwards, so that a command that never opens
    /// the FIFO fails instead of leaving a writer blocked for ever.
    static func fifo(_ name: String, _ text: String, _ command: String) -> String {
        "rm -f \(name); mkfifo \(name) || exit 99; printf '%s' '\(text)' > \(name) & writer=$!; \(command); rc=$?; "
            + "kill $writer 2>/dev/null; exit $rc"
    }

    @Test func passcodeFile_fromAFIFO_fromDevStdin_andFromLATCHKEY_PASSCODE_FILE() throws {
        let sandbox = try sandbox()
        let pw = CLISandbox.passcode
        for script in [
            Self.fifo("pw.fifo", pw, "\"$0\" find --account a --passcode-file pw.fifo"),
            "printf '%s\\n' '\(pw)' | \"$0\" find --account a --passcode-file /dev/stdin",
            Self.fifo("pw.fifo", pw, "LATCHKEY_PASSCODE_FILE=pw.fifo \"$0\" find --account a")
        ] {
            let result = try sandbox.runShell(script)
            #expect(result.status == 0, "\(script): \(result.stderr)")
            #expect(result.stdout == Array("s3cret".utf8), "\(script)")
        }
        // Wrong bytes through the pipe are a wrong passcode, not an unreadable file.
        let wrong = try sandbox.runShell("printf wrong | \"$0\" find --account a --passcode-file /dev/stdin")
        #expect(wrong.status == 4, "\(wrong.stderr)")
    }

    /// The passcode is read once even where a command needs it twice (the agent serves the
    /// keychain, then the passcode unlocks it): a pipe gives its bytes only once.
    @Test func passcodeFromAPipe_unlocksThroughTheAgent() throws {
        let sandbox = try sandbox()
        sandbox.environment["LATCHKEY_AGENT_SOCK"] = sandbox.directory.appendingPathComponent("agent.sock").path
        let agent = try sandbox.run(["agent", "--daemon"])
        #expect(agent.status == 0, "\(agent.stderr)")
        defer { _ = try? sandbox.run(["agent", "--stop"]) }
        let result = try sandbox.runShell(
            "printf '%s' '\(CLISandbox.passcode)' | \"$0\" find --account a --passcode-file /dev/stdin")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Array("s3cret".utf8))
    }

    @Test func bothPasscodeVariables_areRefused() throws {
        let sandbox = try sandbox()
        let path = try sandbox.writeFile("pw.txt", Array(CLISandbox.passcode.utf8))
        let result = try sandbox.run(
            ["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": CLISandbox.passcode, "LATCHKEY_PASSCODE_FILE": path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("LATCHKEY_PASSCODE") && result.stderr.contains("LATCHKEY_PASSCODE_FILE"),
            "\(result.stderr)")
        #expect(!result.stderr.contains(CLISandbox.passcode), "never the passcode")
        let option = try sandbox.run(
            ["find", "--account", "a", "--passcode-file", path], env: ["LATCHKEY_PASSCODE_FILE": "/nonexistent"])
        #expect(option.stdout == Array("s3cret".utf8), "the option wins over the variable: \(option.stderr)")
    }

    @Test func newPasscodeFile_fromAPipe() throws {
        let sandbox = try sandbox()
        let script = Self.fifo(
            "new.fifo", "n3w passcode",
            "\"$0\" passwd --kdf-log-n 10 --passcode-file /dev/stdin --new-passcode-file new.fifo")
        let changed = try sandbox.runShell(script, stdin: Array(CLISandbox.passcode.utf8))
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(
            try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": "n3w passcode"]).stdout
                == Array("s3cret".utf8))
    }

    @Test func backupPasswordFile_fromAPipe_andLATCHKEY_BACKUP_PASSWORD_FILE() throws {
        let sandbox = try sandbox()
        sandbox.environment["LATCHKEY_PASSCODE"] = CLISandbox.passcode
        let backup = try sandbox.runShell(
            Self.fifo(
                "bpw.fifo", "backup pw", "\"$0\" backup --output kc.backup --kdf-log-n 10 --password-file bpw.fifo"))
        #expect(backup.status == 0, "\(backup.stderr)")
        let restore = try sandbox.runShell(
            Self.fifo(
                "bpw.fifo", "backup pw",
                "LATCHKEY_BACKUP_PASSWORD_FILE=bpw.fifo \"$0\" restore kc.backup --dry-run --json"),
            env: ["LATCHKEY_KEYCHAIN": sandbox.directory.appendingPathComponent("new.keychain").path])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect((try restore.json() as? [String: Any])?["restored"] as? Int == 1, "\(restore.out)")
        let wrong = try sandbox.runShell(
            "printf nope | \"$0\" restore kc.backup --dry-run --password-file /dev/stdin",
            env: ["LATCHKEY_KEYCHAIN": sandbox.directory.appendingPathComponent("new.keychain").path])
        #expect(wrong.status == 4, "the piped password is used: \(wrong.stderr)")
    }

    @Test func entitlements_dataFile_andImport_fromPipes() throws {
        let sandbox = try sandbox()
        sandbox.environment["LATCHKEY_PASSCODE"] = CLISandbox.passcode
        let plist = try sandbox.entitlements("mail.plist", applicationIdentifier: "TEAM.mail", groups: ["group.mail"])
        // /dev/stdin carries the plist; the secret comes from a FIFO.
        let added = try sandbox.runShell(
            Self.fifo(
                "d.fifo", "piped secret",
                "cat \(plist) | \"$0\" add --account m --entitlements /dev/stdin --data-file d.fifo"))
        #expect(added.status == 0, "\(added.stderr)")
        let found = try sandbox.runShell(
            "cat \(plist) | \"$0\" find --account m --return attributes --entitlements /dev/stdin")
        #expect(found.status == 0, "\(found.stderr)")
        #expect((try found.json() as? [String: Any])?["agrp"] as? String == "group.mail", "\(found.out)")
        let data = try sandbox.runShell("cat \(plist) | \"$0\" find --account m --entitlements /dev/stdin")
        #expect(data.stdout == Array("piped secret".utf8))
        let imported = try sandbox.runShell(
            Self.fifo("items.fifo", #"{"class":"genp","acct":"i","v_Data":"aQ=="}"#, "\"$0\" import items.fifo"))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try sandbox.run(["find", "--account", "i"]).stdout == Array("i".utf8))
    }
}
