import Foundation
import Testing

/// `find` prints a newline after the secret on a terminal, so the shell prompt does not run
/// into it, and never in a pipe, where the bytes are exactly the stored ones (issue 18 §2).
@Suite struct TrailingNewlineTests {
    @Test func find_addsANewlineOnATerminalOnly() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        try sb.add(account: "bob", data: Array("line\n".utf8))

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

/// `echo pw | latchkey add` stores "pw\n"; `--strip-newline` drops it, and without the flag a
/// user at a terminal is told (issue 18 §2).
@Suite struct StripNewlineTests {
    @Test func stripNewline_dropsOneLFOrCRLF_inBothParsers() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "kept", data: Array("pw\n".utf8))
        try sb.add(account: "lf", data: Array("pw\n".utf8), ["--strip-newline"])
        try sb.add(account: "crlf", data: Array("pw\r\n".utf8), ["--strip-newline"])
        // Another class goes through ArgumentParser rather than the fast parser.
        let inet = try sb.run(
            ["add", "--class", "inet", "--server", "example.com", "--account", "a", "--strip-newline"],
            stdin: Array("pw2\n".utf8))
        #expect(inet.status == 0, "\(inet.stderr)")
        #expect(try sb.run(["find", "--account", "kept", "--service", "mail"]).stdout == Array("pw\n".utf8))
        #expect(try sb.run(["find", "--account", "lf", "--service", "mail"]).stdout == Array("pw".utf8))
        #expect(try sb.run(["find", "--account", "crlf", "--service", "mail"]).stdout == Array("pw".utf8))
        #expect(
            try sb.run(["find", "--class", "inet", "--server", "example.com", "--account", "a"]).stdout
                == Array("pw2".utf8))
    }

    @Test func aPipedSecretEndingInANewline_isPointedOutOnATerminal() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let shown = try sb.runShell(#"script -qec "printf 'pw\n' | '$0' add --account a --service mail" /dev/null"#)
        #expect(shown.status == 0, "\(shown.out)")
        #expect(shown.out.contains("--strip-newline"), "the terminal is told: \(shown.out)")
        // In a script (stderr not a terminal) nothing is printed.
        let quiet = try sb.run(["add", "--account", "b", "--service", "mail"], stdin: Array("pw\n".utf8))
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }
}
