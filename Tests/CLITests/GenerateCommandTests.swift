import Foundation
import Testing

/// `latchkey generate` stores a new random password without it passing through argv or a pipe
/// (issue 18 §2).
@Suite struct GenerateCommandTests {
    @Test func generate_storesARandomPasswordOfTheChosenSet_printsOnlyWhenAsked() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let quiet = try sb.run(["generate", "--account", "a", "--service", "mail"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let stored = try sb.run(["find", "--account", "a", "--service", "mail"]).out
        #expect(stored.count == 24 && stored.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }, "\(stored)")

        let printed = try sb.run([
            "generate", "--account", "b", "--service", "mail", "--length", "40", "--charset", "hex", "--print"
        ])
        #expect(printed.status == 0)
        #expect(printed.out.count == 40 && printed.out.allSatisfy { "0123456789abcdef".contains($0) }, "\(printed.out)")
        #expect(
            try sb.run(["find", "--account", "b", "--service", "mail"]).out == printed.out,
            "what is printed is what is stored")

        let inet = try sb.run([
            "generate", "--class", "inet", "--server", "db.example.com", "--account", "app", "--charset", "ascii"
        ])
        #expect(inet.status == 0, "\(inet.stderr)")
        let ascii = try sb.run(["find", "--class", "inet", "--server", "db.example.com", "--account", "app"]).stdout
        #expect(ascii.count == 24 && ascii.allSatisfy { (0x21...0x7E).contains($0) })

        // Two passwords are never the same; an existing item is errSecDuplicateItem, as for add.
        #expect(stored != printed.out)
        #expect(try sb.run(["generate", "--account", "a", "--service", "mail"]).status == 3)
        #expect(try sb.run(["generate", "--class", "cert"]).status == 2)
        #expect(try sb.run(["generate", "--account", "c", "--length", "4"]).status == 2)
    }

    @Test func digits_coverTheWholeSet_evenly() throws {
        // 2,000 digits from one run: each of the ten appears (a biased or broken draw would
        // leave some out or pile up on others).
        let sb = try CLISandbox()
        try sb.initKeychain()
        let r = try sb.run([
            "generate", "--account", "d", "--service", "mail", "--length", "1024", "--charset", "digits", "--print"
        ])
        let r2 = try sb.run([
            "generate", "--account", "e", "--service", "mail", "--length", "1024", "--charset", "digits", "--print"
        ])
        var counts: [Character: Int] = [:]
        for c in r.out + r2.out { counts[c, default: 0] += 1 }
        #expect(counts.count == 10, "\(counts)")
        #expect(counts.values.allSatisfy { (120...290).contains($0) }, "each digit about 205 times: \(counts)")
    }
}
