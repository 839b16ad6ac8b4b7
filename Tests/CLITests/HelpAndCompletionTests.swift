import Foundation
import Testing

/// Issue 18 §2: `--help` fits on a screen (the per-class attribute options are under
/// `--help-all`, which the man page and the completion scripts always include); global options
/// may come before the subcommand; every file option and argument completes paths in bash,
/// zsh and fish.
@Suite struct HelpAndCompletionTests {
    static let narrow: [String: String?] = ["COLUMNS": "80"]

    @Test func shortHelp_fitsAScreen_andHelpAllListsEverything() throws {
        let sandbox = try CLISandbox()
        let short = try sandbox.run(["update", "--help"], env: Self.narrow)
        #expect(short.status == 0, "\(short.stderr)")
        let lines = short.out.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 40, "update --help is \(lines) lines")
        #expect(!short.out.contains("--server") || short.out.contains("--help-all"), "\(short.out)")
        #expect(!short.out.contains("--server <"), "the inet options are under --help-all")
        #expect(
            short.out.contains("--account <") && short.out.contains("--set-account <")
                && short.out.contains("--help-all"))
        for arguments in [["update", "--help-all"], ["help-all", "update"]] {
            let all = try sandbox.run(arguments, env: Self.narrow)
            #expect(all.status == 0, "\(arguments): \(all.stderr)")
            for option in [
                "--server <", "--set-port <", "--application-tag <", "--synchronizable <", "--entitlements <"
            ] {
                #expect(all.out.contains(option), "\(arguments) lists \(option)")
            }
        }
        let root = try sandbox.run(["--help"], env: Self.narrow)
        #expect(root.out.contains("exec") && root.out.contains("env") && root.out.contains("--help-all"), "\(root.out)")
        // The man page has every option.
        let manual = try sandbox.run(["generate-manual"]).out.replacingOccurrences(of: "\\-", with: "-")
        for text in [
            "--server", "--set-port", "--passcode-command", "--password-command", "latchkey exec", "NAME=SERVICE",
            "help-all"
        ] {
            #expect(manual.contains(text), "the man page mentions \(text)")
        }
        // Hidden from help, still parsed.
        #expect(try sandbox.run(["find", "--class", "inet", "--server", "x"]).status != 2)
    }

    /// docs/CLI.md promises that `--help` of the common commands fits a screen: 40 lines at
    /// 80 columns (they ran 60 to 80); `--help-all` keeps everything.
    @Test(arguments: ["find", "add", "update", "delete", "list", "search", "show", "exec", "generate", "history"])
    func commonCommands_helpFitsAScreen(_ command: String) throws {
        let sandbox = try CLISandbox()
        let short = try sandbox.run([command, "--help"], env: Self.narrow)
        #expect(short.status == 0, "\(short.stderr)")
        let lines = short.out.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 40, "\(command) --help is \(lines) lines:\n\(short.out)")
        let all = try sandbox.run([command, "--help-all"], env: Self.narrow)
        #expect(all.out.count > short.out.count, "\(command) --help-all shows more")
        #expect(all.out.contains("--entitlements"), "\(command) --help-all lists the global options")
    }

    /// Shell completion of service and account names comes from an agent that holds the
    /// keychain unlocked, and from nothing else: no agent, or a locked keychain, offers
    /// nothing, without asking for a passcode or opening the file; never a secret.
    @Test func completion_offersServicesAndAccounts_onlyFromAnUnlockedAgent() throws {
        let sandbox = try AgentCLITests.sandbox()
        try sandbox.add(account: "alice", service: "mail", data: Array("s3cret".utf8))
        try sandbox.add(account: "bob", service: "mail", data: Array("s3cret".utf8))
        try sandbox.add(account: "carol", service: "github.com", data: Array("s3cret".utf8))
        sandbox.environment["LATCHKEY_PASSCODE"] = nil
        // The script runs the first word to complete: the binary under test.
        let latchkey = try CLISandbox.binary().path
        let cases: [([String], [String])] = [
            ([latchkey, "find", "ma"], ["mail/alice", "mail/bob"]),
            ([latchkey, "show", "g"], ["github.com/carol"]),
            ([latchkey, "delete", "mail/b"], ["mail/bob"]),
            ([latchkey, "find", "--service", ""], ["github.com", "mail"]),
            ([latchkey, "find", "--service", "mail", "--account", ""], ["alice", "bob"]),
            ([latchkey, "list", "m"], ["mail"])
        ]
        for (words, _) in cases {
            #expect(try Self.bashCompletions(sandbox, words).isEmpty, "no agent: \(words)")
        }
        let agent = try AgentCLITests.startAgent(sandbox)
        defer { AgentCLITests.stop(agent) }
        for (words, _) in cases {
            #expect(try Self.bashCompletions(sandbox, words).isEmpty, "locked agent: \(words)")
        }
        #expect(try sandbox.run(["unlock"], env: ["LATCHKEY_PASSCODE": CLISandbox.passcode]).status == 0)
        for (words, expected) in cases {
            let got = try Self.bashCompletions(sandbox, words)
            #expect(got == expected, "\(words): \(got)")
            #expect(!got.contains { $0.contains("s3cret") })
        }
        #expect(try sandbox.run(["lock"]).status == 0)
        #expect(try Self.bashCompletions(sandbox, [latchkey, "find", "ma"]).isEmpty, "locked again")
    }

    @Test func globalOptions_beforeTheSubcommand() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: Array("s3cret".utf8))
        let keychain = sandbox.keychainPath, device = sandbox.environment["LATCHKEY_DEVICE"]!
        sandbox.environment["LATCHKEY_KEYCHAIN"] = sandbox.directory.appendingPathComponent("absent.keychain").path
        sandbox.environment["LATCHKEY_DEVICE"] = nil
        sandbox.environment["LATCHKEY_PASSCODE"] = nil
        sandbox.environment["LATCHKEY_AGENT_SOCK"] = "none"
        // A passcode file whose name starts with "-": still the option's value.
        _ = try sandbox.writeFile("-pw", Array(CLISandbox.passcode.utf8))
        for arguments in [
            // fast path
            ["--keychain", keychain, "--device", device, "--passcode-file", "-pw", "find", "--account", "a"],
            [
                "--keychain=\(keychain)", "--device", device, "--passcode-file=-pw", "find", "--account", "a",
                "--accessible", "ak"
            ],  // ArgumentParser
            ["--keychain", keychain, "find", "--account", "a", "--device", device, "--passcode-file", "./-pw"]  // split
        ] {
            let r = try sandbox.run(arguments)
            #expect(r.status == 0, "\(arguments): \(r.stderr)")
            #expect(r.stdout == Array("s3cret".utf8), "\(arguments)")
        }
        let added = try sandbox.run(
            [
                "--keychain", keychain, "--device", device, "--passcode-command", "echo '\(CLISandbox.passcode)'",
                "add", "--account", "b", "--service", "mail"
            ], stdin: Array("two".utf8))
        #expect(added.status == 0, "\(added.stderr)")
        // Arguments after the subcommand (and after --) are the command's: exec's child gets them as they are.
        let child = try sandbox.run([
            "--keychain", keychain, "--device", device, "--passcode-file", "-pw",
            "exec", "--item", "B=mail/b", "--", "sh", "-c", "printf '%s %s' \"$B\" \"$1\"", "sh", "--keychain"
        ])
        #expect(child.out == "two --keychain", "\(child.out) \(child.stderr)")
        // A leading global option with no command, or no value.
        let noCommand = try sandbox.run(["--keychain", keychain])
        #expect(noCommand.status == 2 && noCommand.stderr.contains("need a command"), "\(noCommand.stderr)")
        let noValue = try sandbox.run(["--keychain"])
        #expect(noValue.status == 2, "\(noValue.stderr)")
        let unknown = try sandbox.run(["--keychain", keychain, "fnd", "--account", "a"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown command 'fnd'"), "\(unknown.stderr)")
        // Not a global option: left to ArgumentParser, which names the problem.
        #expect(try sandbox.run(["--account", "a", "find"]).status == 2)
    }

    /// Runs bash's completion of `words` (the last one being completed) with the generated script.
    static func bashCompletions(_ sandbox: CLISandbox, _ words: [String]) throws -> [String] {
        let script = try sandbox.run(["--generate-completion-script", "bash"])
        let path = try sandbox.writeFile("latchkey.bash", script.stdout)
        let array = words.map { "'\($0)'" }.joined(separator: " ")
        let r = try sandbox.runShell(
            """
            exec bash -c 'source "$1"; COMP_WORDS=(\(array)); COMP_CWORD=\(words.count - 1); COMP_LINE="${COMP_WORDS[*]}"; \
            COMP_POINT=${#COMP_LINE}; _latchkey latchkey "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; \
            printf "%s\\n" "${COMPREPLY[@]}"' bash \(path)
            """)
        return r.out.split(separator: "\n").map(String.init)
    }

    @Test func fileOptionsAndArguments_completePaths() throws {
        let sandbox = try CLISandbox()
        for name in ["login.keychain", "pw.txt", "kc.backup", "items.jsonl", "secret.bin", "ent.plist"] {
            _ = try sandbox.writeFile(name, [])
        }
        for (words, expected) in [
            (["latchkey", "find", "--keychain", "log"], "login.keychain"),
            (["latchkey", "add", "--passcode-file", "pw"], "pw.txt"),
            (["latchkey", "find", "--device", "pw"], "pw.txt"),
            (["latchkey", "dump", "--entitlements", "ent"], "ent.plist"),
            (["latchkey", "restore", "kc"], "kc.backup"),
            (["latchkey", "restore", "--password-file", "pw"], "pw.txt"),
            (["latchkey", "backup", "--output", "kc"], "kc.backup"),
            (["latchkey", "import", "ite"], "items.jsonl"),
            (["latchkey", "add", "--data-file", "sec"], "secret.bin"),
            (["latchkey", "update", "--data-file", "sec"], "secret.bin"),
            (["latchkey", "passwd", "--new-passcode-file", "pw"], "pw.txt")
        ] {
            let got = try Self.bashCompletions(sandbox, words)
            #expect(got.contains(expected), "bash: \(words.joined(separator: " ")) → \(got)")
        }
        let zsh = try sandbox.run(["--generate-completion-script", "zsh"]).out
        for option in [
            "--keychain", "--device", "--passcode-file", "--new-passcode-file", "--entitlements", "--data-file",
            "--password-file", "--output"
        ] {
            #expect(
                zsh.range(of: "'\(option)\\[[^\\n]*\\]:[^:\\n]*:_files'", options: .regularExpression) != nil,
                "zsh completes files for \(option)")
        }
        #expect(zsh.components(separatedBy: "':file|-:_files'").count - 1 >= 2, "zsh: restore FILE and import FILE")
        let fish = try sandbox.run(["--generate-completion-script", "fish"]).out
        for option in [
            "keychain", "device", "passcode-file", "new-passcode-file", "entitlements", "data-file", "password-file",
            "output"
        ] {
            #expect(
                fish.range(of: "-l '\(option)' [^\\n]*-rF\\n", options: .regularExpression) != nil,
                "fish completes files for --\(option)")
        }
        #expect(fish.contains("positional \"latchkey restore\" -eq 1' -F"), "fish: restore FILE")
        #expect(fish.contains("positional \"latchkey import\" -eq 1' -F"), "fish: import FILE")
    }
}
