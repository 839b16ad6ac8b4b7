import Foundation
import Testing

/// One test per row of docs/CLI.md "Errors and exit status": the status, stdout, and the
/// stderr form `latchkey: <what happened and what to do> (<errSecName> <number>)`.
@Suite struct ExitStatusTests {
    /// stderr is exactly one `latchkey: …` line ending in `(name number)`.
    func expectError(
        _ result: CLIResult, status: Int32, _ name: String, _ number: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == status, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("latchkey: "), sourceLocation: sourceLocation)
        #expect(result.stderr.hasSuffix("(\(name) \(number))\n"), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.filter { $0 == "\n" }.count == 1, sourceLocation: sourceLocation)
    }

    @Test func exit0_success_dataOnStdoutNothingOnStderr() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let add = try sandbox.run(["add", "--account", "a"], stdin: Array("s3cret".utf8))
        #expect(add.status == 0 && add.stdout.isEmpty && add.stderr.isEmpty)
        let find = try sandbox.run(["find", "--account", "a"])
        #expect(find.status == 0)
        #expect(find.stdout == Array("s3cret".utf8))
        #expect(find.stderr.isEmpty)
    }

    @Test func exit1_itemNotFound() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for args in [
            ["find", "--account", "nobody"], ["update", "--account", "nobody", "--set-label", "x"],
            ["delete", "--account", "nobody"]
        ] {
            expectError(try sandbox.run(args), status: 1, "errSecItemNotFound", -25300)
        }
    }

    @Test func exit2_usageError_saysWhatToDo() throws {
        let sandbox = try CLISandbox()
        let unknown = try sandbox.run(["find", "--acount", "a"])
        #expect(unknown.status == 2)
        #expect(unknown.stdout.isEmpty)
        #expect(unknown.stderr.hasPrefix("latchkey: "))
        #expect(unknown.stderr.contains("--acount"))
        #expect(unknown.stderr.contains("See 'latchkey find --help'"))
    }

    @Test func exit2_errSecParam_fromABadImportLine() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let file = try sandbox.writeFile(
            "items.jsonl",
            Array("{\"class\":\"genp\",\"acct\":\"a\"}\n{\"class\":\"genp\",\"v_Data\":\"not base64!\"}\n".utf8))
        let result = try sandbox.run(["import", file])
        expectError(result, status: 2, "errSecParam", -50)
        #expect(result.stderr.contains("line 2"))
    }

    /// Issue 13 §2: a passcode given (environment or file) for a keychain that has none is an
    /// error that says so, never ignored — through every command, with or without the agent.
    @Test func exit2_passcodeGivenForAKeychainWithoutOne() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain(noPasscode: true)
        try sandbox.add(account: "a", data: [1], env: ["LATCHKEY_PASSCODE": nil])
        for args in [["find", "--account", "a"], ["dump"], ["info"], ["compact"]] {
            let result = try sandbox.run(args)  // the sandbox sets LATCHKEY_PASSCODE
            expectError(result, status: 2, "errSecParam", -50)
            #expect(result.stderr.contains("has no passcode"), "\(args): \(result.stderr)")
        }
        #expect(try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": nil]).stdout == [1])
        let both = try sandbox.run([
            "init", "--no-passcode", "--keychain", sandbox.directory.appendingPathComponent("other").path
        ])
        #expect(both.status == 2, "--no-passcode with LATCHKEY_PASSCODE set: \(both.stderr)")
        #expect(both.stderr.contains("--no-passcode and LATCHKEY_PASSCODE contradict each other"), "\(both.stderr)")
        // restore into a new keychain refuses the same contradiction, in the same words, and
        // makes nothing (it used to make a keychain without the passcode it was given).
        let backup = sandbox.directory.appendingPathComponent("kc.backup").path
        #expect(
            try sandbox.run(["backup", "--no-password", "--output", backup], env: ["LATCHKEY_PASSCODE": nil]).status
                == 0)
        let restored = sandbox.directory.appendingPathComponent("restored").path
        let restore = try sandbox.run(["restore", "--keychain", restored, "--no-passcode", backup])
        #expect(restore.status == 2, "--no-passcode with LATCHKEY_PASSCODE set: \(restore.stderr)")
        #expect(
            restore.stderr.contains("--no-passcode and LATCHKEY_PASSCODE contradict each other"), "\(restore.stderr)")
        #expect(!FileManager.default.fileExists(atPath: restored))
        let passcodeFile = try sandbox.writeFile("passcode", Array("p".utf8))
        for (name, value) in [("LATCHKEY_PASSCODE_FILE", passcodeFile), ("LATCHKEY_PASSCODE_COMMAND", "echo p")] {
            for command in [
                ["init", "--no-passcode", "--keychain", restored],
                ["restore", "--keychain", restored, "--no-passcode", backup]
            ] {
                let r = try sandbox.run(command, env: ["LATCHKEY_PASSCODE": nil, name: value])
                #expect(
                    r.status == 2 && r.stderr.contains("--no-passcode and \(name) contradict each other"),
                    "\(command): \(r.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: restored))
        #expect(
            try sandbox.run(
                ["restore", "--keychain", restored, "--no-passcode", backup], env: ["LATCHKEY_PASSCODE": nil]
            ).status == 0)
    }

    @Test func exit3_duplicateItem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        expectError(
            try sandbox.run(["add", "--account", "a", "--service", "mail"], stdin: [2]), status: 3,
            "errSecDuplicateItem", -25299)
    }

    @Test func exit4_wrongPasscode_locked_andNotAvailable() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        expectError(
            try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": "wrong"]), status: 4,
            "errSecAuthFailed", -25293)
        let locked = try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": nil])
        expectError(locked, status: 4, "errSecInteractionNotAllowed", -25308)
        #expect(locked.stderr.contains("LATCHKEY_PASSCODE"), "the message says how to unlock")

        let bare = try CLISandbox()
        try bare.initKeychain(noPasscode: true)
        let akpu = try bare.run(
            ["add", "--account", "a", "--accessible", "akpu"], stdin: [1], env: ["LATCHKEY_PASSCODE": nil])
        expectError(akpu, status: 4, "errSecNotAvailable", -25291)
    }

    @Test func exit5_damagedKeychain() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for i in 0..<4 { try sandbox.add(account: "a\(i)", data: [UInt8(i)]) }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: sandbox.keychainPath))
        expectError(try sandbox.run(["dump"]), status: 5, "errSecDecode", -26275)
    }

    @Test func exit6_foreignGroup_andMissingEntitlement() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let foreign = try sandbox.run(["add", "--account", "a", "--access-group", "com.other"], stdin: [1])
        expectError(foreign, status: 6, "errSecNoAccessForItem", -25243)
        let nobody = try sandbox.entitlements("nobody.plist", applicationIdentifier: "", groups: [])
        let missing = try sandbox.run(["find", "--account", "a", "--entitlements", nobody])
        expectError(missing, status: 6, "errSecMissingEntitlement", -34018)
    }

    @Test func exit7_otherFailures_IOAndDeviceSecretPermissions() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let missing = try sandbox.run([
            "add", "--account", "a", "--data-file", sandbox.directory.appendingPathComponent("nope").path
        ])
        expectError(missing, status: 7, "errSecIO", -36)
        #expect(missing.stderr.contains("nope") && missing.stderr.contains("No such file"))

        expectError(
            try sandbox.run(["init", "--kdf-log-n", CLISandbox.kdfLogN]), status: 7, "errSecDuplicateKeychain", -25296)

        try FileManager.default.setAttributes(
            [.posixPermissions: 0o644], ofItemAtPath: sandbox.environment["LATCHKEY_DEVICE"]!)
        let loose = try sandbox.run(["find", "--account", "a"])
        #expect(loose.status == 7, "\(loose.stderr)")
        #expect(loose.stderr.hasPrefix("latchkey: ") && loose.stderr.contains("device"))
    }
}
