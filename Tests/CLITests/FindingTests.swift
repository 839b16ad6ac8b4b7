import Foundation
import Testing

/// Finding things as pass, gopass and 1Password CLI users expect (issue 31, part 3): `list`
/// (`ls`), `search`, `show`, `SERVICE/ACCOUNT` for find, show and delete, and the nearest
/// command for a mistyped one.
@Suite struct FindingTests {
    /// A keychain with three generic passwords and an internet password.
    static func sandbox() throws -> CLISandbox {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", service: "mail", data: Array("pw-alice".utf8), ["--label", "Work mail"])
        try sb.add(account: "bob", service: "mail", data: Array("pw-bob".utf8))
        try sb.add(
            account: "carol", service: "github.com", data: Array("pw-carol".utf8), ["--description", "CI Token"])
        let inet = try sb.run(
            ["add", "--class", "inet", "--server", "db.example.com", "--account", "app", "--protocol", "htps"],
            stdin: Array("pw-app".utf8))
        #expect(inet.status == 0, "\(inet.stderr)")
        return sb
    }

    static let secrets = ["pw-alice", "pw-bob", "pw-carol", "pw-app"]

    @Test func list_groupsByServiceAndAccount_neverASecret() throws {
        let sb = try Self.sandbox()
        let r = try sb.run(["list"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.out.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(lines.first == ["SERVICE", "ACCOUNT", "LABEL", "CLASS"], "\(r.out)")
        #expect(
            lines.dropFirst().map { $0.first.map(String.init) ?? "" } == [
                "github.com", "htps://db.example.com", "mail", "bob"
            ], "each service named once, then its accounts: \(r.out)")
        #expect(r.out.range(of: "alice +Work mail", options: .regularExpression) != nil, "\(r.out)")
        for secret in Self.secrets { #expect(!r.out.contains(secret)) }
        #expect(try sb.run(["ls"]).out == r.out, "ls is list")

        let mail = try sb.run(["ls", "mail"])
        #expect(mail.out.contains("alice") && mail.out.contains("bob") && !mail.out.contains("carol"), "\(mail.out)")
        #expect(try sb.run(["list", "db.example.com"]).out.contains("app"), "a server lists its inet items")
        let none = try sb.run(["list", "nowhere"])
        #expect(none.status == 1 && none.stderr.contains("errSecItemNotFound"), "\(none.stderr)")

        let json = try #require(try sb.run(["list", "--json"]).json() as? [[String: Any]])
        #expect(json.count == 4)
        #expect(json.allSatisfy { $0["v_Data"] == nil })
        #expect(json.compactMap { $0["acct"] as? String } == ["carol", "app", "alice", "bob"])
    }

    @Test func search_matchesSubstringsIgnoringCase_inLabelServiceAccountServerAndDescription() throws {
        let sb = try Self.sandbox()
        for (text, accounts) in [
            ("WORK", ["alice"]), ("mAiL", ["alice", "bob"]), ("aro", ["carol"]), ("example", ["app"]),
            ("ci tok", ["carol"])
        ] {
            let r = try sb.run(["search", text, "--json"])
            #expect(r.status == 0, "\(text): \(r.stderr)")
            let found = try #require(try r.json() as? [[String: Any]]).compactMap { $0["acct"] as? String }
            #expect(found == accounts, "\(text)")
        }
        let table = try sb.run(["search", "mail"])
        #expect(table.out.hasPrefix("SERVICE") && table.out.contains("bob"), "\(table.out)")
        for secret in Self.secrets { #expect(!table.out.contains(secret)) }
        let none = try sb.run(["search", "pw-alice"])
        #expect(none.status == 1, "the secret is not searched: \(none.out)")
        #expect(none.stderr.contains("contains 'pw-alice'") && none.stderr.contains("errSecItemNotFound"))
    }

    /// list and search see what find sees: the caller's access groups, and through the agent
    /// exactly what without it.
    @Test func listAndSearch_respectAccessGroups_withAndWithoutTheAgent() throws {
        let sb = try Self.sandbox()
        try sb.add(account: "dave", service: "mail", data: Array("pw-dave".utf8), ["--app-id", "com.example.other"])
        #expect(!(try sb.run(["list"]).out.contains("dave")))
        let other = try sb.run(["list"], env: ["LATCHKEY_APP_ID": "com.example.other"])
        #expect(other.out.contains("dave") && !other.out.contains("alice"), "\(other.out)")
        #expect(try sb.run(["search", "dav"]).status == 1)
        #expect(try sb.run(["search", "dav", "--app-id", "com.example.other"]).status == 0)

        let direct = try sb.run(["list", "--json"]).out
        let searched = try sb.run(["search", "a", "--json"]).out
        sb.environment["LATCHKEY_AGENT_SOCK"] = sb.directory.appendingPathComponent("a/agent.sock").path
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let none: [String: String?] = ["LATCHKEY_PASSCODE": nil]
        #expect(try sb.run(["list", "--json"], env: none).out == direct)
        #expect(try sb.run(["search", "a", "--json"], env: none).out == searched)
    }

    /// Without the passcode and without a terminal, a locked keychain lists what it can and
    /// says what it leaves out.
    @Test func list_ofALockedKeychain_showsTheAvailableClasses_andSaysWhatIsLeftOut() throws {
        let sb = try Self.sandbox()
        try sb.add(account: "always", service: "dk", data: Array("x".utf8), ["--accessible", "dk"])
        let r = try sb.run(["list"], env: ["LATCHKEY_PASSCODE": nil, "LATCHKEY_AGENT_SOCK": "none"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.out.contains("always") && !r.out.contains("alice"), "\(r.out)")
        #expect(r.stderr.contains("locked") && r.stderr.contains("4 item(s)"), "\(r.stderr)")
    }

    @Test func serviceAccount_selectsForFindShowAndDelete_asExecParsesIt() throws {
        let sb = try Self.sandbox()
        #expect(try sb.run(["find", "mail/alice"]).out == "pw-alice")
        #expect(try sb.run(["find", "github.com"]).out == "pw-carol", "SERVICE alone: any account")
        let several = try sb.run(["find", "mail"])
        #expect(several.status == 2 && several.stderr.contains("2 items match"), "\(several.stderr)")
        #expect(try sb.run(["find", "mail/", "--first"]).status == 0, "nothing after the last '/': any account")
        let both = try sb.run(["find", "mail/alice", "--service", "mail"])
        #expect(both.status == 2 && both.stderr.contains("--service"), "\(both.stderr)")
        let inet = try sb.run(["find", "mail/alice", "--class", "inet"])
        #expect(inet.status == 2 && inet.stderr.contains("generic password"), "\(inet.stderr)")
        // The account is what follows the last '/', as exec's --item.
        try sb.add(account: "eve", service: "https://example.com/api", data: Array("pw-eve".utf8))
        #expect(try sb.run(["find", "https://example.com/api/eve"]).out == "pw-eve")
        let exec = try sb.run(["exec", "--item", "T=https://example.com/api/eve", "--", "sh", "-c", "printf %s \"$T\""])
        #expect(exec.out == "pw-eve")

        let dry = try sb.run(["delete", "mail/bob", "--dry-run"])
        #expect(dry.status == 0 && dry.out.contains("bob") && !dry.out.contains("alice"), "\(dry.out)")
        #expect(try sb.run(["delete", "mail/bob"]).status == 0)
        #expect(try sb.run(["find", "mail/bob"]).status == 1)
        #expect(try sb.run(["find", "mail/alice"]).status == 0, "only bob was deleted")
    }

    @Test func show_printsTheAttributes_andTheSecretOnlyWithPrint() throws {
        let sb = try Self.sandbox()
        let r = try sb.run(["show", "mail/alice"])
        #expect(r.status == 0, "\(r.stderr)")
        for text in ["service       mail", "account       alice", "label         Work mail", "protection    ak"] {
            #expect(r.out.contains(text), "\(text): \(r.out)")
        }
        #expect(!r.out.contains("pw-alice"), "no secret without --print")
        let printed = try sb.run(["show", "mail/alice", "--print"])
        #expect(printed.out.contains("secret        pw-alice"), "\(printed.out)")
        let json = try #require(try sb.run(["show", "mail/alice", "--json"]).json() as? [String: Any])
        #expect(json["acct"] as? String == "alice" && json["v_Data"] == nil)
        let withData = try #require(try sb.run(["show", "mail/alice", "--json", "--print"]).json() as? [String: Any])
        #expect(withData["v_Data"] as? String == Data("pw-alice".utf8).base64EncodedString())
        let several = try sb.run(["show", "mail"])
        #expect(
            several.status == 2 && several.stdout.isEmpty && several.stderr.contains("--first"), "\(several.stderr)")
        #expect(try sb.run(["show", "mail", "--first"]).status == 0)
        #expect(try sb.run(["show", "nowhere/x"]).status == 1)
    }

    @Test(arguments: [
        ("serch", "search"), ("lst", "list"), ("fnd", "find"), ("shwo", "show"), ("delet", "delete"), ("get", "find"),
        ("rm", "delete")
    ])
    func unknownCommand_suggestsTheNearest(_ typed: String, _ meant: String) throws {
        let r = try CLISandbox().run([typed, "x"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("unknown command '\(typed)'; did you mean '\(meant)'?"), "\(r.stderr)")
    }

    @Test func unknownCommand_farFromEveryCommand_suggestsNothing() throws {
        let r = try CLISandbox().run(["xyzzy"])
        #expect(r.status == 2 && !r.stderr.contains("did you mean") && r.stderr.contains("the commands are"))
    }
}
