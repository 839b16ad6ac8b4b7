import Foundation
import Testing

/// An ambiguous query is never answered silently (issue 31, part 1): `find` with several
/// matches and neither --limit nor --first fails, naming how many; `update` with several asks
/// on a terminal and refuses without one unless --yes, as `delete` does.
@Suite struct AmbiguityTests {
    func twoMailItems() throws -> CLISandbox {
        let m = try CLISandbox()
        try m.run(["init", "--kdf-log-n", CLISandbox.kdfLogN]).expectSuccess()
        try m.run(["add", "--service", "mail", "--account", "alice"], stdin: Array("a-secret".utf8)).expectSuccess()
        try m.run(["add", "--service", "mail", "--account", "bob"], stdin: Array("b-secret".utf8)).expectSuccess()
        return m
    }

    @Test func findWithSeveralMatchesFailsAndSaysHowToChoose() throws {
        let m = try twoMailItems()
        // The fast parser's path and ArgumentParser's (--jsonl is not on the fast path).
        for args in [["find", "--service", "mail"], ["find", "--service", "mail", "--return", "attributes", "--jsonl"]]
        {
            let r = try m.run(args)
            #expect(r.status == 2, "\(args): \(r.status)")
            #expect(r.stdout.isEmpty, "\(args) printed something")
            #expect(r.stderr.contains("2 items match") && r.stderr.contains("--first"), "\(r.stderr)")
            #expect(!r.stderr.contains("secret"))
        }
        // Taking one on purpose, or listing them, still works; so does a query that says which.
        let first = try m.run(["find", "--service", "mail", "--first"])
        #expect(first.status == 0 && ["a-secret", "b-secret"].contains(first.out))
        #expect(try m.run(["find", "--service", "mail", "--limit", "one"]).status == 0)
        let all = try m.run(["find", "--service", "mail", "--limit", "all", "--return", "attributes"])
        #expect((try all.json() as? [Any])?.count == 2)
        #expect(try m.run(["find", "--service", "mail", "--account", "bob"]).out == "b-secret")
        #expect(try m.run(["find", "--service", "mail", "--first", "--limit", "all"]).status == 2)
    }

    @Test func updateWithSeveralMatchesChangesNothingWithoutYes() throws {
        let m = try twoMailItems()
        let refused = try m.run(["update", "--service", "mail", "--set-label", "Mail"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("2 items match") && refused.stderr.contains("--yes"))
        let dry = try m.run(["update", "--service", "mail", "--set-label", "Mail", "--dry-run"])
        #expect(dry.status == 0 && dry.out.contains("alice") && dry.out.contains("bob"))
        let labels = try m.run(["find", "--service", "mail", "--limit", "all", "--return", "attributes"])
        #expect(!labels.out.contains("Mail\""), "an update that was refused changed something")
        // New data from stdin, refused too: the secrets stay.
        #expect(try m.run(["update", "--service", "mail", "--set-data"], stdin: Array("x".utf8)).status == 2)
        #expect(try m.run(["find", "--service", "mail", "--account", "alice"]).out == "a-secret")
        // One match needs no --yes; several with --yes all change.
        try m.run(["update", "--service", "mail", "--account", "alice", "--set-label", "A"]).expectSuccess()
        try m.run(["update", "--service", "mail", "--set-label", "Both", "--yes"]).expectSuccess()
        let after = try m.run(["find", "--service", "mail", "--limit", "all", "--return", "attributes"])
        #expect((try after.json() as? [[String: Any]])?.allSatisfy { $0["labl"] as? String == "Both" } == true)
    }
}
