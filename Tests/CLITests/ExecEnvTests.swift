import Foundation
import Testing

/// `latchkey exec --item NAME=SERVICE/ACCOUNT -- CMD` and `latchkey env --item …` (issue 18
/// §2, as `op run`, `gopass env`, `sops exec-env`): secrets reach a child's environment, never
/// its argv; every item is found before the child starts.
@Suite struct ExecEnvTests {
    static let token = "tok'en $HOME `x`\nsecond line"

    func sandbox() throws -> CLISandbox {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", service: "github.com", data: Array(Self.token.utf8))
        try sandbox.add(account: "app", service: "https://db.example.com/v1", data: Array("pg".utf8))
        return sandbox
    }

    @Test func exec_putsTheSecretsInTheChildsEnvironment_andIsTheChild() throws {
        let sandbox = try sandbox()
        let r = try sandbox.run([
            "exec", "--item", "GH=github.com/alice", "--item", "DB=https://db.example.com/v1/",
            "--", "sh", "-c", "printf '%s|%s|%s' \"$GH\" \"$DB\" \"$0\"", "arg0"
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.out == Self.token + "|pg|arg0", "\(r.out)")
        // The exit status and a signal are the child's own.
        let status = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--", "sh", "-c", "exit 42"])
        #expect(status.status == 42, "\(status.stderr)")
        let signalled = try sandbox.runShell(
            "\"$0\" exec --item GH=github.com/alice -- sh -c 'kill -TERM $$'; echo \"rc=$?\"")
        #expect(signalled.out == "rc=143\n", "\(signalled.out) \(signalled.stderr)")
        // latchkey replaced itself: the child's parent is the shell that started latchkey.
        let parent = try sandbox.runShell("\"$0\" exec --item GH=github.com/alice -- sh -c 'echo $PPID'; echo $$")
        let pids = parent.out.split(separator: "\n")
        #expect(pids.count == 2 && pids[0] == pids[1], "\(parent.out) \(parent.stderr)")
        // A command that is not there: 127, as env(1).
        let missing = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--", "no-such-command-latchkey"])
        #expect(missing.status == 127 && missing.stderr.contains("no-such-command-latchkey"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("tok'en"))
    }

    /// The passcode that unlocked the items, and the other secrets latchkey reads from the
    /// environment, never reach the command (`agent --daemon` removes the same ones).
    @Test func exec_childGetsTheItems_notThePasscodeOrOtherSecrets() throws {
        let sandbox = try sandbox()
        let secrets = ["LATCHKEY_PASSCODE", "LATCHKEY_NEW_PASSCODE", "LATCHKEY_BACKUP_PASSWORD"]
        let r = try sandbox.run(
            ["exec", "--item", "TOKEN=https://db.example.com/v1/app", "--", "env"],
            env: ["LATCHKEY_NEW_PASSCODE": "new-secret", "LATCHKEY_BACKUP_PASSWORD": "backup-secret"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.contains("TOKEN=pg"), "\(r.out)")
        for name in secrets {
            #expect(!lines.contains { $0.hasPrefix(name + "=") }, "\(name) reached the child")
        }
        #expect(
            !r.out.contains(CLISandbox.passcode) && !r.out.contains("new-secret") && !r.out.contains("backup-secret"))
        #expect(lines.contains { $0.hasPrefix("LATCHKEY_KEYCHAIN=") }, "the rest of the environment is passed on")
        // An --item of that name is what the user asked for: it is set.
        let named = try sandbox.run(["exec", "--item", "LATCHKEY_PASSCODE=https://db.example.com/v1/app", "--", "env"])
        #expect(named.out.split(separator: "\n").contains("LATCHKEY_PASSCODE=pg"), "\(named.out) \(named.stderr)")
    }

    /// Thousands of --item options: each item is found once, and the run stays linear.
    @Test func env_thousandsOfItems_allRight_inLinearTime() throws {
        let sandbox = try sandbox()
        let n = 6_000
        var lines = ""
        for i in 0..<n {
            lines +=
                "{\"class\":\"genp\",\"svce\":\"s\(i)\",\"acct\":\"a\",\"v_Data\":\"\(Data("v\(i)".utf8).base64EncodedString())\"}\n"
        }
        let input = try sandbox.writeFile("items.jsonl", Array(lines.utf8))
        let imported = try sandbox.run(["import", input])
        #expect(imported.status == 0, "\(imported.stderr)")
        let args = ["env"] + (0..<n).flatMap { ["--item", "V\($0)=s\($0)/a"] }
        let start = Date()
        let r = try sandbox.run(args)
        let seconds = Date().timeIntervalSince(start)
        #expect(r.status == 0, "\(r.stderr)")
        let expected = (0..<n).map { "export V\($0)='v\($0)'\n" }.joined()
        #expect(r.out == expected)
        // A bound the quadratic run (ArgumentParser's, over a minute here) missed by far, with
        // room for a slow machine.
        #expect(seconds < 10, "\(n) items took \(seconds) s")
        // Items are taken only before `--`: what follows is the command's, --item included.
        let exec = try sandbox.run([
            "exec", "--item", "A=s1/a", "--item=B=s2/a", "--item", "C=s3/a", "--",
            "sh", "-c", "printf '%s|' \"$A\" \"$B\" \"$C\" \"$@\"", "sh", "--item", "D=s4/a", "--item=E"
        ])
        #expect(exec.out == "v1|v2|v3|--item|D=s4/a|--item=E|", "\(exec.out) \(exec.stderr)")
        let twice = try sandbox.run(["env", "--item", "A=s1/a", "--item", "B=s2/a", "--item", "A=s3/a"])
        #expect(twice.status == 2 && twice.stderr.contains("gives A twice"), "\(twice.stderr)")
    }

    @Test func exec_missingOrAmbiguousItem_runsNothing() throws {
        let sandbox = try sandbox()
        let marker = sandbox.directory.appendingPathComponent("ran").path
        let missing = try sandbox.run([
            "exec", "--item", "GH=github.com/alice", "--item", "NPM=npmjs.com/bob", "--", "touch", marker
        ])
        #expect(missing.status == 1, "errSecItemNotFound: \(missing.stderr)")
        #expect(
            missing.stderr.contains("NPM") && missing.stderr.contains("npmjs.com")
                && missing.stderr.contains("(errSecItemNotFound -25300)"),
            "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the child never started")

        try sandbox.add(account: "bob", service: "github.com", data: Array("b".utf8))
        let ambiguous = try sandbox.run(["exec", "--item", "GH=github.com", "--", "touch", marker])
        #expect(ambiguous.status == 2 && ambiguous.stderr.contains("more than one"), "\(ambiguous.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))

        sandbox.environment["LATCHKEY_PASSCODE"] = nil
        sandbox.environment["LATCHKEY_AGENT_SOCK"] = "none"
        let locked = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--", "touch", marker])
        #expect(locked.status == 4, "locked, no passcode: \(locked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func badSpecs_areUsageErrors() throws {
        let sandbox = try sandbox()
        for (spec, words) in [
            ("1GH=github.com/alice", "not a valid environment variable name"), ("G-H=github.com/alice", "not a valid"),
            ("GH", "no '='"), ("GH=/alice", "names no service")
        ] {
            let r = try sandbox.run(["exec", "--item", spec, "--", "true"])
            #expect(r.status == 2 && r.stderr.contains(words), "\(spec): \(r.stderr)")
            let e = try sandbox.run(["env", "--item", spec])
            #expect(e.status == 2 && e.stdout.isEmpty, "\(spec): \(e.stderr)")
        }
        let twice = try sandbox.run(["env", "--item", "GH=github.com/alice", "--item", "GH=github.com/alice"])
        #expect(twice.status == 2 && twice.stderr.contains("twice"), "\(twice.stderr)")
        let noCommand = try sandbox.run(["exec", "--item", "GH=github.com/alice"])
        #expect(noCommand.status == 2 && noCommand.stderr.contains("'--'"), "\(noCommand.stderr)")
        let noDashes = try sandbox.run(["exec", "--item", "GH=github.com/alice", "true"])
        #expect(noDashes.status == 2, "the command comes after --: \(noDashes.stderr)")
    }

    @Test func env_printsShellQuotedExports_thatEvalRestores() throws {
        let sandbox = try sandbox()
        let r = try sandbox.run(["env", "--item", "GH=github.com/alice", "--item", "DB=https://db.example.com/v1/app"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.out == "export GH='tok'\\''en $HOME `x`\nsecond line'\nexport DB='pg'\n", "\(r.out)")
        let file = try sandbox.writeFile("env.sh", r.stdout)
        let evaluated = try sandbox.runShell("eval \"$(cat \(file))\"; printf '%s|%s' \"$GH\" \"$DB\"")
        #expect(evaluated.out == Self.token + "|pg", "\(evaluated.out) \(evaluated.stderr)")
        let missing = try sandbox.run(["env", "--item", "GH=github.com/alice", "--item", "X=nowhere"])
        #expect(missing.status == 1 && missing.stdout.isEmpty && missing.stderr.contains("for X"), "\(missing.stderr)")
    }
}
