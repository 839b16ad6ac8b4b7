import Foundation
import Testing

/// `latchkey credential` as git's credential helper (issue 30, part 7), driven by real git:
/// `git credential approve | fill | reject` with `credential.helper latchkey`, which git runs
/// as `git-credential-latchkey` (the link `make install` makes).
@Suite struct CredentialHelperTests {
    /// A sandbox whose git knows only the helper latchkey and never prompts.
    func sandbox() throws -> CLISandbox {
        let m = try CLISandbox()
        try m.run(["init", "--kdf-log-n", CLISandbox.kdfLogN]).expectSuccess()
        let bin = m.directory.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: bin.appendingPathComponent("git-credential-latchkey").path,
            withDestinationPath: try CLISandbox.binary().path)
        let config = m.directory.appendingPathComponent("gitconfig")
        try Data("[credential]\n\thelper = latchkey\n".utf8).write(to: config)
        m.environment["PATH"] = bin.path + ":" + (m.environment["PATH"] ?? "/usr/bin:/bin")
        m.environment["GIT_CONFIG_GLOBAL"] = config.path
        m.environment["GIT_CONFIG_NOSYSTEM"] = "1"
        m.environment["GIT_TERMINAL_PROMPT"] = "0"
        return m
    }

    func git(_ m: CLISandbox, _ action: String, _ lines: [String]) throws -> CLIResult {
        try m.runShell(
            "exec git credential \(action)", stdin: Array((lines.joined(separator: "\n") + "\n\n").utf8))
    }

    @Test func gitStoresFillsAndErasesThroughLatchkey() throws {
        let m = try sandbox()
        let approve = try git(
            m, "approve", ["protocol=https", "host=example.com", "username=alice", "password=s3cret"])
        #expect(approve.status == 0, "\(approve.stderr)")
        let fill = try git(m, "fill", ["protocol=https", "host=example.com"])
        #expect(fill.status == 0, "\(fill.stderr)")
        #expect(fill.out.contains("username=alice\n") && fill.out.contains("password=s3cret\n"))

        // Stored as Apple (and git-credential-osxkeychain) store it: an internet password.
        let found = try m.run(["find", "--class", "inet", "--server", "example.com", "--return", "attributes", "--json"]
        )
        try found.expectSuccess()
        let item = try #require(try found.json() as? [String: Any])
        #expect(item["ptcl"] as? String == "htps" && item["acct"] as? String == "alice")
        #expect(item["labl"] as? String == "git: https://example.com")
        #expect(try m.run(["find", "--class", "inet", "--server", "example.com"]).out == "s3cret")

        // A new password for the same account replaces the old one.
        _ = try git(m, "approve", ["protocol=https", "host=example.com", "username=alice", "password=n3w"])
        #expect(try git(m, "fill", ["protocol=https", "host=example.com"]).out.contains("password=n3w\n"))
        #expect(
            try m.run([
                "find", "--class", "inet", "--server", "example.com", "--limit", "all", "--jsonl", "--return",
                "attributes"
            ])
            .out.split(separator: "\n").count == 1)

        // reject erases only the credential holding the password git names.
        _ = try git(m, "reject", ["protocol=https", "host=example.com", "username=alice", "password=stale"])
        #expect(try git(m, "fill", ["protocol=https", "host=example.com"]).out.contains("password=n3w\n"))
        _ = try git(m, "reject", ["protocol=https", "host=example.com", "username=alice", "password=n3w"])
        let gone = try git(m, "fill", ["protocol=https", "host=example.com"])
        #expect(gone.status != 0, "git found a credential after reject: \(gone.out)")
        #expect(try m.run(["find", "--class", "inet", "--server", "example.com"]).status == 1)
    }

    @Test func portsProtocolsAndUnknownKeysAreMatchedExactly() throws {
        let m = try sandbox()
        _ = try git(
            m, "approve",
            ["protocol=https", "host=git.example.org:8443", "username=bob", "password=p8443", "wwwauth[]=Basic realm=x"]
        )
        _ = try git(m, "approve", ["protocol=http", "host=git.example.org", "username=bob", "password=plain"])
        let withPort = try git(m, "fill", ["protocol=https", "host=git.example.org:8443"])
        #expect(withPort.out.contains("password=p8443\n"), "\(withPort.stderr)")
        // No port: only the credential stored without one, and only for its protocol.
        #expect(try git(m, "fill", ["protocol=https", "host=git.example.org"]).status != 0)
        #expect(try git(m, "fill", ["protocol=http", "host=git.example.org"]).out.contains("password=plain\n"))
        let attrs = try m.run([
            "find", "--class", "inet", "--server", "git.example.org", "--port", "8443", "--return", "attributes",
            "--json"
        ])
        #expect((try attrs.json() as? [String: Any])?["port"] as? Int == 8443, "\(attrs.out)")
        // An IPv6 host with a port.
        _ = try git(m, "approve", ["protocol=https", "host=[::1]:9000", "username=c", "password=v6"])
        #expect(try git(m, "fill", ["protocol=https", "host=[::1]:9000"]).out.contains("password=v6\n"))
    }

    @Test func aLockedKeychainAnswersNothingAndSaysWhy() throws {
        let m = try sandbox()
        _ = try git(m, "approve", ["protocol=https", "host=example.com", "username=alice", "password=s3cret"])
        // No passcode, no agent: the helper finds the keychain locked; git goes on without it.
        let r = try m.runShell(
            "printf 'protocol=https\\nhost=example.com\\n\\n' | exec \"$0\" credential get",
            env: ["LATCHKEY_PASSCODE": nil])
        #expect(r.status == 0)
        #expect(r.out.isEmpty)
        #expect(r.stderr.contains("locked") && r.stderr.contains("latchkey unlock"), "\(r.stderr)")
        #expect(try m.run(["credential", "fetch"]).status != 0, "an unknown operation is refused")
    }
}
