import Foundation
import Testing

/// Issue 14 point 9: `latchkey delete` does not delete more than the user meant. A query
/// without attributes needs --all; several matches need a yes on the terminal, or --yes
/// (or --all) without one; --dry-run shows what would go.
@Suite struct DeleteGuardTests {
    func sandbox(items: Int) throws -> CLISandbox {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for n in 0..<items { try sandbox.add(account: "user\(n)", data: Array("secret\(n)".utf8)) }
        return sandbox
    }

    func count(_ sandbox: CLISandbox) throws -> Int {
        let result = try sandbox.run(["dump", "--json"])
        return (try result.json() as? [Any])?.count ?? -1
    }

    @Test(arguments: [
        ["delete"], ["delete", "--class", "keys"], ["delete", "--yes"], ["delete", "--synchronizable", "any"]
    ])
    func emptyQuery_withoutAll_isRefused_namingAll(_ args: [String]) throws {
        let sandbox = try sandbox(items: 2)
        let result = try sandbox.run(args)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--all") && result.stderr.contains("nothing was deleted"), "\(result.stderr)")
        #expect(result.stderr.contains("(errSecParam -50)"))
        #expect(try count(sandbox) == 2)
    }

    @Test func emptyQuery_withAll_deletesEveryItemOfTheClass() throws {
        let sandbox = try sandbox(items: 3)
        let result = try sandbox.run(["delete", "--all"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try count(sandbox) == 0)
        #expect(try sandbox.run(["delete", "--all"]).status == 1, "then nothing matches")
    }

    @Test func severalMatches_withoutATerminal_areRefused_unlessYesOrAll() throws {
        let sandbox = try sandbox(items: 3)
        let refused = try sandbox.run(["delete", "--service", "mail"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("3 items match") && refused.stderr.contains("--yes")
                && refused.stderr.contains("nothing was deleted"),
            "\(refused.stderr)")
        #expect(try count(sandbox) == 3)

        let one = try sandbox.run(["delete", "--account", "user0", "--service", "mail"])
        #expect(one.status == 0 && one.stderr.isEmpty, "one match needs no confirmation: \(one.stderr)")
        #expect(try sandbox.run(["delete", "--service", "mail", "--yes"]).status == 0)
        #expect(try count(sandbox) == 0)

        let again = try self.sandbox(items: 2)
        #expect(try again.run(["delete", "--service", "mail", "--all"]).status == 0)
        #expect(try count(again) == 0)
    }

    @Test func dryRun_listsTheMatches_withoutSecrets_andChangesNothing() throws {
        let sandbox = try sandbox(items: 2)
        let result = try sandbox.run(["delete", "--service", "mail", "--dry-run"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.out.split(separator: "\n")
        #expect(
            lines.count == 3 && lines[0].hasPrefix("CLASS") && lines[1].contains("user0") && lines[2].contains("user1"),
            "\(result.out)")
        #expect(!result.out.contains("secret") && !result.stderr.contains("secret"))
        #expect(result.stderr.contains("2 item(s) would be deleted; nothing was deleted"))
        #expect(try count(sandbox) == 2)
        #expect(try sandbox.run(["delete", "--all", "--dry-run", "--yes"]).status == 0)
        #expect(try count(sandbox) == 2, "--dry-run wins over --yes")
        #expect(try sandbox.run(["delete", "--account", "nobody", "--dry-run"]).status == 1)
        #expect(try sandbox.run(["delete", "--dry-run"]).status == 2, "--dry-run checks what delete would")
    }

    @Test func onATerminal_severalMatches_areListed_andDeletedOnlyOnYes() throws {
        let sandbox = try sandbox(items: 3)
        guard let no = try sandbox.runOnTerminal(["delete", "--service", "mail"], input: Array("n\n".utf8)) else {
            return
        }
        #expect(no.status == 4, "\(no.out)")
        #expect(no.out.contains("3 items match") && no.out.contains("user0") && no.out.contains("user2"), "\(no.out)")
        #expect(no.out.contains("Delete these 3 items? [y/N]") && no.out.contains("nothing was deleted"), "\(no.out)")
        #expect(!no.out.contains("secret"), "never a secret")
        #expect(try count(sandbox) == 3)

        let yes = try #require(try sandbox.runOnTerminal(["delete", "--service", "mail"], input: Array("yes\n".utf8)))
        #expect(yes.status == 0, "\(yes.out)")
        #expect(yes.out.contains("deleted 3 item(s)"))
        #expect(try count(sandbox) == 0)
    }

    @Test func onATerminal_yes_andASingleMatch_askNothing() throws {
        let sandbox = try sandbox(items: 3)
        guard let one = try sandbox.runOnTerminal(["delete", "--account", "user0", "--service", "mail"], input: [])
        else { return }
        #expect(one.status == 0 && !one.out.contains("[y/N]"), "\(one.out)")
        let all = try #require(try sandbox.runOnTerminal(["delete", "--all", "--yes"], input: []))
        #expect(all.status == 0 && !all.out.contains("[y/N]"), "\(all.out)")
        #expect(try count(sandbox) == 0)
    }
}
