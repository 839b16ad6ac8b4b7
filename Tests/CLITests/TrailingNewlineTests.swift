import Foundation
import Testing

/// `find` prints a newline after the secret on a terminal, so the shell prompt does not run
/// into it, and never in a pipe, where the bytes are exactly the stored ones (issue 18 §2).
@Suite struct TrailingNewlineTests {
    @Test func find_addsANewlineOnATerminalOnly() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        try sb.add(account: "bob", data: Array("line\n".utf8), ["--keep-newline"])

        let piped = try sb.run(["find", "--account", "alice", "--service", "mail"])
        #expect(
            piped.status == 0 && piped.stdout == Array("s3cret".utf8), "a pipe gets the stored bytes: \(piped.stdout)")

        guard let shown = try sb.runOnTerminal(["find", "--account", "alice", "--service", "mail"]) else {
            Issue.record("script(1) is needed for this test (util-linux, Debian's bsdutils)")
            return
        }
        #expect(shown.status == 0)
        #expect(
            shown.out == "s3cret\r\n", "the terminal shows the secret and then a newline: \(shown.out.debugDescription)"
        )
        // A secret that ends in a newline gets no second one.
        let own = try #require(try sb.runOnTerminal(["find", "--account", "bob", "--service", "mail"]))
        #expect(own.out == "line\r\n", "\(own.out.debugDescription)")
    }
}

/// A secret piped in loses one trailing newline unless --keep-newline, an empty one is refused
/// unless --allow-empty, and on a terminal it is asked twice (issue 31, part 2; before, `echo pw |
/// latchkey add` stored "pw\n" and `add </dev/null` an empty secret, with exit 0).
@Suite struct SecretInputTests {
    @Test func aPipedSecretLosesOneNewline_unlessKept_inBothParsers() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "lf", data: Array("pw\n".utf8))
        try sb.add(account: "crlf", data: Array("pw\r\n".utf8))
        try sb.add(account: "two", data: Array("pw\n\n".utf8))
        try sb.add(account: "kept", data: Array("pw\n".utf8), ["--keep-newline"])
        // Another class goes through ArgumentParser rather than the fast parser.
        let inet = try sb.run(
            ["add", "--class", "inet", "--server", "example.com", "--account", "a"], stdin: Array("pw2\n".utf8))
        #expect(inet.status == 0, "\(inet.stderr)")
        #expect(try sb.run(["find", "--account", "lf", "--service", "mail"]).stdout == Array("pw".utf8))
        #expect(try sb.run(["find", "--account", "crlf", "--service", "mail"]).stdout == Array("pw".utf8))
        #expect(try sb.run(["find", "--account", "two", "--service", "mail"]).stdout == Array("pw\n".utf8))
        #expect(try sb.run(["find", "--account", "kept", "--service", "mail"]).stdout == Array("pw\n".utf8))
        #expect(
            try sb.run(["find", "--class", "inet", "--server", "example.com", "--account", "a"]).stdout
                == Array("pw2".utf8))
        // update --set-data reads the same way.
        try sb.run(["update", "--account", "lf", "--service", "mail", "--set-data"], stdin: Array("n3w\n".utf8))
            .expectSuccess()
        #expect(try sb.run(["find", "--account", "lf", "--service", "mail"]).stdout == Array("n3w".utf8))
        #expect(try sb.run(["add", "--account", "x", "--keep-newline", "--strip-newline"], stdin: [1]).status == 2)
    }

    @Test func anEmptySecretIsRefusedUnlessAllowed() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        for input in [[], Array("\n".utf8)] as [[UInt8]] {
            let r = try sb.run(["add", "--account", "e", "--service", "mail"], stdin: input)
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr.contains("empty") && r.stderr.contains("--allow-empty"))
        }
        #expect(try sb.run(["find", "--account", "e", "--service", "mail"]).status == 1, "nothing was stored")
        try sb.run(["add", "--account", "e", "--service", "mail", "--allow-empty"], stdin: []).expectSuccess()
        #expect(try sb.run(["find", "--account", "e", "--service", "mail"]).stdout.isEmpty)
        #expect(try sb.run(["update", "--account", "e", "--service", "mail", "--set-data"], stdin: []).status == 2)
    }

    /// Answers each prompt of `latchkey args…` on a pseudo-terminal once it is shown (a secret
    /// prompt discards what was typed ahead), through python3's pty module; nil without python3.
    func answering(_ sb: CLISandbox, _ args: [String], _ answers: [(prompt: String, line: String)]) throws -> CLIResult?
    {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
        let driver = #"""
            import os, pty, sys, json, signal
            signal.alarm(30)  # a prompt that never comes fails the test instead of hanging it
            answers = json.loads(sys.argv[1]); argv = sys.argv[2:]
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(argv[0], argv)
            out = b""
            def read_until(text):
                global out
                while text.encode() not in out:
                    try: chunk = os.read(fd, 1024)
                    except OSError: return False
                    if not chunk: return False
                    out += chunk
                return True
            for prompt, line in answers:
                if not read_until(prompt): break
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
        let json = "[" + answers.map { "[\"\($0.prompt)\", \"\($0.line)\"]" }.joined(separator: ",") + "]"
        return try sb.run(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", driver, json, try CLISandbox.binary().path] + args, env: [:])
    }

    @Test func onATerminalTheSecretIsAskedTwice() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        guard
            let same = try answering(
                sb, ["add", "--account", "t", "--service", "mail"], [("Secret", "pw"), ("confirm", "pw")])
        else {
            Issue.record("python3 is needed for this test (its pty module drives the prompts)")
            return
        }
        #expect(same.status == 0, "\(same.out)")
        #expect(try sb.run(["find", "--account", "t", "--service", "mail"]).stdout == Array("pw".utf8))
        let differ = try #require(
            try answering(sb, ["add", "--account", "u", "--service", "mail"], [("Secret", "pw"), ("confirm", "px")]))
        #expect(differ.status == 2 && differ.out.contains("differ"), "\(differ.out)")
        #expect(try sb.run(["find", "--account", "u", "--service", "mail"]).status == 1)
    }
}
