import Foundation
import Testing

/// `latchkey history` and `compact --drop-history` end to end (issue 31, part 7): the versions
/// every update and delete keeps, listed without a secret and put back, with the file opened
/// here and through an agent; the settings that bound them.
@Suite struct HistoryCommandTests {
    /// One line of the listing: N, DATE, WHAT, WHERE, ITEM (LABEL left out).
    struct Row: Equatable {
        var n: Int
        var date: String
        var what: String
        var place: String
        var item: String
    }

    /// The rows of `history`'s table (its first line is the header).
    static func rows(_ r: CLIResult) throws -> [Row] {
        let lines = r.out.split(separator: "\n")
        guard let header = lines.first else { return [] }
        #expect(header.split(separator: " ").prefix(5) == ["N", "DATE", "WHAT", "WHERE", "ITEM"], "\(r.out)")
        return try lines.dropFirst().map { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard f.count >= 5, let n = Int(f[0]) else { throw CLITestError("not a row: \(line)") }
            return Row(n: n, date: f[1], what: f[2], place: f[3], item: f[4])
        }
    }

    static let secrets = ["secret-one", "secret-two", "secret-three"]

    static func expectNoSecret(_ r: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for s in secrets {
            #expect(!r.out.contains(s) && !r.stderr.contains(s), "\(s) shown", sourceLocation: sourceLocation)
        }
    }

    /// add, two updates of the secret, then history, restore, delete and restore again: what a
    /// user does, with `env` (the passcode or not) on every command.
    static func flow(_ sb: CLISandbox, env: [String: String?]) throws {
        try sb.add(account: "alice", data: Array(secrets[0].utf8), ["--label", "Mail"], env: env)
        for s in secrets.dropFirst() {
            try sb.run(
                ["update", "--service", "mail", "--account", "alice", "--set-data"], stdin: Array(s.utf8), env: env
            )
            .expectSuccess()
        }
        let listed = try sb.run(["history", "mail/alice"], env: env)
        try listed.expectSuccess()
        expectNoSecret(listed)
        let listedRows = try rows(listed)
        #expect(listedRows.map(\.n) == [1, 2, 3])
        #expect(listedRows.map(\.what) == ["current", "changed", "changed"], "\(listed.out)")
        #expect(listedRows.allSatisfy { $0.place == "here" && $0.item == "mail/alice" })
        #expect(
            listedRows[0].date > listedRows[1].date && listedRows[1].date > listedRows[2].date,
            "newest first: \(listed.out)")
        #expect(listed.out.contains("Mail"), "the label")

        // Entry 2 is the version before the current one.
        let restored = try sb.run(["history", "mail/alice", "--restore", "2"], env: env)
        try restored.expectSuccess()
        #expect(restored.stderr.contains("restored version 2 of mail/alice") && !restored.stderr.contains("new item"))
        expectNoSecret(restored)
        #expect(try sb.run(["find", "mail/alice"], env: env).out == "secret-two")
        // The current version it replaced joined the history.
        #expect(
            try rows(sb.run(["history", "mail/alice"], env: env)).map(\.what) == [
                "current", "changed", "changed", "changed"
            ])

        // A deleted item keeps its versions and comes back as a new item.
        try sb.run(["delete", "mail/alice", "--yes"], env: env).expectSuccess()
        #expect(try sb.run(["find", "mail/alice"], env: env).status == 1)
        let deleted = try rows(sb.run(["history", "mail/alice"], env: env))
        #expect(deleted.map(\.what) == ["deleted", "changed", "changed", "changed"], "\(deleted)")
        let back = try sb.run(["history", "mail/alice", "--restore", "1"], env: env)
        try back.expectSuccess()
        #expect(back.stderr.contains("restored version 1 of mail/alice as a new item"), "\(back.stderr)")
        #expect(try sb.run(["find", "mail/alice"], env: env).out == "secret-two")
        let again = try rows(sb.run(["history", "mail/alice"], env: env))
        #expect(again.first?.what == "current" && again.dropFirst().first?.what == "deleted", "\(again)")

        // The script contract: no match, no such entry (1); the current version (2).
        let none = try sb.run(["history", "mail/nobody"], env: env)
        #expect(none.status == 1 && none.stderr.contains("no item matches"), "\(none.stderr)")
        #expect(none.out.isEmpty)
        let gone = try sb.run(["history", "mail/alice", "--restore", "99"], env: env)
        #expect(gone.status == 1 && gone.stderr.contains("there is no entry 99"), "\(gone.stderr)")
        let current = try sb.run(["history", "mail/alice", "--restore", "1"], env: env)
        #expect(current.status == 2 && current.stderr.contains("current version"), "\(current.stderr)")
        #expect(try sb.run(["history", "--restore", "0"], env: env).status == 2)

        // verify decrypts and counts the versions (opened here; an agent's report has no such count).
        let verified = try sb.run(["verify"], env: env)
        try verified.expectSuccess()
        if env.isEmpty { #expect(verified.out.contains("earlier versions ("), "\(verified.out)") }

        // compact keeps the versions; --drop-history drops every one of them.
        try sb.run(["compact"], env: env).expectSuccess()
        #expect(try rows(sb.run(["history", "mail/alice"], env: env)).count == again.count)
        let dropped = try sb.run(["compact", "--drop-history"], env: env)
        try dropped.expectSuccess()
        #expect(dropped.stderr.contains("every earlier version dropped"), "\(dropped.stderr)")
        #expect(try rows(sb.run(["history", "mail/alice"], env: env)).map(\.what) == ["current"])
        #expect(try sb.run(["find", "mail/alice"], env: env).out == "secret-two")
    }

    @Test func history_listsAndRestores_theKeychainOpenedHere() throws {
        let sb = try CLISandbox()
        sb.environment["LATCHKEY_AGENT_SOCK"] = "none"
        try sb.initKeychain()
        try Self.flow(sb, env: [:])
        // Locked (a passcode, none given, no agent, no terminal): exit 4, nothing listed; with
        // no earlier version (after the flow's --drop-history) and with one.
        let noPasscode: [String: String?] = ["LATCHKEY_PASSCODE": nil]
        let locked = try sb.run(["history", "mail/alice"], env: noPasscode)
        #expect(locked.status == 4 && locked.out.isEmpty, "\(locked.stderr)")
        try sb.run(["update", "--service", "mail", "--account", "alice", "--set-label", "New"]).expectSuccess()
        let lockedVersion = try sb.run(["history", "mail/alice"], env: noPasscode)
        #expect(lockedVersion.status == 4 && lockedVersion.out.isEmpty, "\(lockedVersion.stderr)")
        #expect(lockedVersion.stderr.contains("1 earlier version(s) are locked"), "\(lockedVersion.stderr)")
    }

    /// The same, every command through a started agent: no passcode is given to any of them,
    /// so each one that succeeds was served by the agent (the keychain file is locked without
    /// one).
    @Test func history_listsAndRestores_throughAnAgent() throws {
        let sb = try AgentCLITests.sandbox()
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        try sb.run(["unlock"]).expectSuccess()
        try Self.flow(sb, env: AgentCLITests.noPasscode)
    }

    /// LATCHKEY_HISTORY_VERSIONS bounds what each change keeps (0 keeps none); a malformed
    /// value of either variable fails every command that opens the keychain (exit 2, naming the
    /// variable) before it changes anything, and stops an agent from starting.
    @Test func historySettings_boundTheVersions_andAMalformedOneIsRefused() throws {
        let sb = try CLISandbox()
        sb.environment["LATCHKEY_AGENT_SOCK"] = "none"
        try sb.initKeychain()
        for (account, versions, kept) in [("one", "1", 1), ("none", "0", 0)] {
            let env: [String: String?] = ["LATCHKEY_HISTORY_VERSIONS": versions]
            try sb.add(account: account, data: Array("v0".utf8), env: env)
            for i in 1...3 {
                try sb.run(
                    ["update", "--service", "mail", "--account", account, "--set-data"], stdin: Array("v\(i)".utf8),
                    env: env
                ).expectSuccess()
            }
            let rows = try Self.rows(sb.run(["history", "mail/" + account]))
            #expect(rows.map(\.what) == ["current"] + Array(repeating: "changed", count: kept), "\(versions): \(rows)")
            // The one kept is the newest earlier version.
            if kept == 1 {
                try sb.run(["history", "mail/" + account, "--restore", "2"]).expectSuccess()
                #expect(try sb.run(["find", "mail/" + account]).out == "v2")
            }
        }

        try sb.add(account: "alice", data: Array("kept".utf8))
        let commands: [([String], [UInt8])] = [
            (["add", "--service", "mail", "--account", "bob"], Array("x".utf8)),
            (["update", "--service", "mail", "--account", "alice", "--set-data"], Array("changed".utf8)),
            (["update", "--service", "mail", "--account", "alice", "--set-label", "L"], []),
            (["delete", "mail/alice", "--yes"], []),
            (["delete", "--service", "mail", "--account", "alice"], []),
            (["generate", "--service", "mail", "--account", "carol"], []),
            (["import", "-"], Array(#"{"class":"genp","svce":"mail","acct":"dave","v_Data":"eA=="}"#.utf8)),
            (["history", "mail/one", "--restore", "2"], []),
            (["history", "mail/alice"], []),
            (["compact"], [])
        ]
        for (variable, value) in [("LATCHKEY_HISTORY_VERSIONS", "abc"), ("LATCHKEY_HISTORY_DAYS", "-1")] {
            for (arguments, stdin) in commands {
                let r = try sb.run(arguments, stdin: stdin, env: [variable: value])
                #expect(r.status == 2, "\(variable)=\(value) \(arguments): exit \(r.status) \(r.stderr)")
                #expect(r.stderr.contains("\(variable) is '\(value)'"), "\(arguments): \(r.stderr)")
            }
        }
        #expect(try sb.run(["find", "mail/alice"]).out == "kept", "nothing changed")
        #expect(try sb.run(["find", "mail/bob"]).status == 1)
        #expect(try sb.run(["find", "mail/one"]).out == "v2")
        // `timeout`: an agent that started anyway would serve until it is stopped.
        let agent = try sb.runShell(
            "exec timeout 20 \"$0\" agent", env: ["LATCHKEY_HISTORY_VERSIONS": "256", "LATCHKEY_AGENT_SOCK": nil])
        #expect(agent.status == 2 && agent.stderr.contains("LATCHKEY_HISTORY_VERSIONS is '256'"), "\(agent.stderr)")
    }
}
