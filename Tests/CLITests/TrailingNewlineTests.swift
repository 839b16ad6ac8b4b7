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
        #expect(piped.status == 0 && piped.stdout == Array("s3cret".utf8), "a pipe gets the stored bytes: \(piped.stdout)")

        guard let shown = try sb.runOnTerminal(["find", "--account", "alice", "--service", "mail"]) else {
            Issue.record("script(1) is needed for this test (util-linux, Debian's bsdutils)")
            return
        }
        #expect(shown.status == 0)
        #expect(shown.out == "s3cret\r\n", "the terminal shows the secret and then a newline: \(shown.out.debugDescription)")
        // A secret that ends in a newline gets no second one.
        let own = try #require(try sb.runOnTerminal(["find", "--account", "bob", "--service", "mail"]))
        #expect(own.out == "line\r\n", "\(own.out.debugDescription)")
    }
}
