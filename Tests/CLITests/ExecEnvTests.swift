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
        let r = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--item", "DB=https://db.example.com/v1/",
                                 "--", "sh", "-c", "printf '%s|%s|%s' \"$GH\" \"$DB\" \"$0\"", "arg0"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.out == Self.token + "|pg|arg0", "\(r.out)")
        // The exit status and a signal are the child's own.
        let status = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--", "sh", "-c", "exit 42"])
        #expect(status.status == 42, "\(status.stderr)")
        let signalled = try sandbox.runShell("\"$0\" exec --item GH=github.com/alice -- sh -c 'kill -TERM $$'; echo \"rc=$?\"")
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

    @Test func exec_missingOrAmbiguousItem_runsNothing() throws {
        let sandbox = try sandbox()
        let marker = sandbox.directory.appendingPathComponent("ran").path
        let missing = try sandbox.run(["exec", "--item", "GH=github.com/alice", "--item", "NPM=npmjs.com/bob", "--", "touch", marker])
        #expect(missing.status == 1, "errSecItemNotFound: \(missing.stderr)")
        #expect(missing.stderr.contains("NPM") && missing.stderr.contains("npmjs.com") && missing.stderr.contains("(errSecItemNotFound -25300)"),
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
        for (spec, words) in [("1GH=github.com/alice", "not a valid environment variable name"), ("G-H=github.com/alice", "not a valid"),
                              ("GH", "no '='"), ("GH=/alice", "names no service")] {
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
