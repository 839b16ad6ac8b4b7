import Foundation
import Testing
@testable import latchkey

/// Flags, help and version: usage errors exit 2 (docs/CLI.md), help goes to stdout.
@Suite struct UsageTests {
    @Test(arguments: [
        ["find", "--bogus"],
        ["frobnicate"],
        ["find", "--account"],
        ["find", "--class", "idnt-nope"],
        ["find", "--accessible", "Sometimes"],
        ["find", "--limit", "some"],
        ["add", "--port", "eighty"],
        ["init", "--kdf-log-n", "5"],
        ["find", "--passcode", "secret"]
    ])
    func badCommandLine_exits2WithMessageOnStderr(_ args: [String]) throws {
        let sandbox = try CLISandbox()
        let result = try sandbox.run(args)
        #expect(result.status == 2, "\(args): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("latchkey: "), "\(args): \(result.stderr)")
        #expect(!result.stderr.contains("secret") || !args.contains("secret"), "a passcode-like value was echoed")
    }

    @Test func version_printsAndExits0() throws {
        let result = try CLISandbox().run(["--version"])
        #expect(result.status == 0)
        #expect(result.out.split(separator: ".").count == 3)
    }

    /// `--version` alone skips ArgumentParser (start-up); it prints what ArgumentParser prints.
    @Test func version_fastPath_printsWhatArgumentParserPrints() throws {
        var expected = ""
        do {
            _ = try LatchkeyCommand.parseAsRoot(["--version"])
        } catch {
            #expect(LatchkeyCommand.exitCode(for: error) == .success)
            expected = LatchkeyCommand.fullMessage(for: error) + "\n"
        }
        let result = try CLISandbox().run(["--version"])
        #expect(result.status == 0 && result.stderr.isEmpty)
        #expect(result.out == expected && !expected.isEmpty)
    }

    @Test(arguments: ["init", "add", "find", "update", "delete", "verify", "compact", "info", "passwd"])
    func help_hasAbstractOptionsAndExample(_ command: String) throws {
        let result = try CLISandbox().run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("OVERVIEW: "))
        #expect(result.out.contains("Example:"))
        #expect(result.out.contains("--keychain <path>"))
        #expect(result.out.contains("--passcode-file <path>"))
        if ["init", "passwd"].contains(command) {
            #expect(result.out.contains("--kdf-log-n <n>"), "the scrypt cost is a documented choice (issue 13 §5)")
        }
    }

    @Test func update_helpListsASetOptionForEveryAttribute() throws {
        let help = try CLISandbox().run(["update", "--help-all"]).out
        for name in [
            "account", "service", "access-group", "accessible", "label", "description", "comment", "generic",
            "server", "protocol", "port", "path", "security-domain", "authentication-type"
        ] {
            #expect(help.contains("--\(name) "), "missing --\(name)")
            #expect(help.contains("--set-\(name) "), "missing --set-\(name)")
        }
        #expect(help.contains("--set-data"))
    }
}

/// ArgumentParser runs a command's `validate()` before it looks for unknown options: a
/// mistyped option must be named, not hidden behind what its absence made `validate()` say
/// (`update --set-lable X` said "nothing to change").
@Suite struct MistypedOptionTests {
    @Test(arguments: [
        (["update", "--account", "a", "--set-lable", "X"], "--set-lable", "--set-label"),
        (["update", "--set-lable", "X"], "--set-lable", "--set-label"),
        (["exec", "--itme", "A=mail/a", "--", "true"], "--itme", "--item"),
        (["env", "--itme", "A=mail/a"], "--itme", "--item"),
        (["find", "--jsonl", "--lmit", "all"], "--lmit", "--limit"),
        (["dump", "--json", "--jsonl", "--keychian", "k"], "--keychian", "--keychain")
    ])
    func aMistypedOption_isNamed_beforeWhatValidateWouldSay(_ args: [String], _ typo: String, _ meant: String) throws {
        let r = try CLISandbox().run(args)
        #expect(r.status == 2, "\(args): \(r.stderr)")
        #expect(r.stderr.contains("'\(typo)'") && r.stderr.contains("'\(meant)'"), "\(args): \(r.stderr)")
        #expect(!r.stderr.contains("nothing to change") && !r.stderr.contains("give at least one"), "\(r.stderr)")
    }

    /// Each `validate()` of the CLI steps aside for the second parse (`LatchkeyCommand.parse`).
    @Test func everyValidate_stepsAsideForTheSecondParse() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/latchkey")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        var checked = 0
        for file in files {
            let lines = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
                .components(separatedBy: "\n")
            for (i, line) in lines.enumerated() where line.contains("func validate() throws {") {
                checked += 1
                #expect(
                    lines[i + 1].trimmingCharacters(in: .whitespaces)
                        == "guard CommandLineForms.validating else { return }", "\(file):\(i + 1)")
            }
        }
        #expect(checked >= 16)
    }
}
