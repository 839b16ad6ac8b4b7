import Foundation
import Testing

/// Issue 5 "Bad input": each case gives a clear message saying what to do, and the contract's
/// exit status; nothing is changed.
@Suite struct BadInputTests {
    @Test func unknownCommand_exits2_andPointsToHelp() throws {
        let result = try CLISandbox().run(["frobnicate"])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("latchkey: "))
        #expect(result.stderr.contains("frobnicate"))
        #expect(result.stderr.contains("latchkey --help"))
    }

    @Test(arguments: [
        (["find", "--colour"], "--colour"),
        (["find", "--account"], "Missing value for '--account"),
        (["add", "--is-invisible", "maybe"], "--is-invisible takes yes or no"),
        (["find", "--class", "keys", "--key-type", "rsb"], "--key-type takes rsa, dsa, ec"),
        (["find", "--class", "keys", "--application-label", "xyz"], "--application-label takes bytes in hex"),
        (["find", "--class", "keys", "--start-date", "yesterday"], "--start-date takes an ISO 8601 date"),
        (["find", "--class", "inet", "--service", "mail"], "--service is not an attribute of class inet"),
        (["find", "--type", "note", "--class", "keys"], "--type is not an attribute of class keys"),
        (["add", "--class", "cert", "--subject", "3000"], "--subject is derived from the certificate"),
        (["add", "--synchronizable", "any"], "--synchronizable any selects items in queries"),
        (["update", "--account", "a", "--set-synchronizable", "any"], "--set-synchronizable takes yes or no"),
        (["find", "--limit", "0"], "--limit"),
        (["find", "--limit", "3"], "--return attributes"),
        (["update", "--account", "a"], "nothing to change"),
        (["import"], "Missing expected argument")
    ])
    func badOption_exits2_namingTheProblem(_ args: [String], _ message: String) throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let result = try sandbox.run(args)
        #expect(result.status == 2, "\(args): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("latchkey: "), "\(args): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
        #expect(result.stderr.contains("--help"), "points to the help: \(result.stderr)")
    }

    @Test(arguments: [
        ["add", "--account", "a", "--data-file", "missing.bin"],
        ["add", "--account", "a", "--passcode-file", "missing.txt"],
        ["find", "--account", "a", "--entitlements", "missing.plist"],
        ["import", "missing.jsonl"],
        ["import", "."]
    ])
    func unreadableFile_exits7WithErrSecIO_namingIt(_ args: [String]) throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let result = try sandbox.run(args, stdin: [1])
        #expect(result.status == 7, "\(args): \(result.stderr)")
        #expect(result.stderr.hasPrefix("latchkey: cannot read the "), "\(result.stderr)")
        #expect(result.stderr.contains(args.last!))
        #expect(result.stderr.hasSuffix("(errSecIO -36)\n"))
        #expect(try sandbox.run(["find", "--account", "a"]).status == 1, "nothing was added")
    }

    @Test(arguments: [
        (["add", "--account", "a"], "--data-file"),
        (["update", "--account", "a", "--set-data"], "--data-file"),
        (["import", "-"], "give a FILE")
    ])
    func stdinClosed_whenASecretIsNeeded_exits2_andChangesNothing(_ args: [String], _ hint: String) throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: Array("kept".utf8))
        let result = try sandbox.run(args, closeStdin: true)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("stdin is closed"), "\(result.stderr)")
        #expect(result.stderr.contains(hint))
        #expect(try sandbox.run(["find", "--account", "a"]).stdout == Array("kept".utf8))
    }

    @Test func stdinClosed_whereNoSecretIsNeeded_isFine() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [7])
        let find = try sandbox.run(["find", "--account", "a"], closeStdin: true)
        #expect(find.status == 0)
        #expect(find.stdout == [7])
    }

    @Test func noTerminal_whenAPromptIsNeeded_saysWhichVariableToSet() throws {
        let sandbox = try CLISandbox()
        let noPasscode: [String: String?] = ["LATCHKEY_PASSCODE": nil]

        let initResult = try sandbox.run(["init"], env: noPasscode)
        #expect(initResult.status == 2)
        #expect(initResult.stderr.contains("no terminal") && initResult.stderr.contains("LATCHKEY_PASSCODE"))

        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let passwd = try sandbox.run(["passwd"], env: noPasscode)
        #expect(passwd.status == 2)
        #expect(passwd.stderr.contains("no terminal") && passwd.stderr.contains("LATCHKEY_PASSCODE"))

        let find = try sandbox.run(["find", "--account", "a"], env: noPasscode)
        #expect(find.status == 4)
        #expect(find.stderr.contains("LATCHKEY_PASSCODE") && find.stderr.contains("--passcode-file"))
    }

    @Test func aPasscodeIsNeverAnArgument() throws {
        let sandbox = try CLISandbox()
        for args in [
            ["init", "--passcode", "secret"], ["passwd", "--new-passcode", "secret"], ["add", "--data", "secret"]
        ] {
            let result = try sandbox.run(args)
            #expect(result.status == 2, "\(args)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.keychainPath))
        }
    }
}
