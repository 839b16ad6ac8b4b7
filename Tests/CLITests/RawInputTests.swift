import Foundation
import Testing
@testable import latchkey

/// Issue 14 point 7: arguments and environment values are the bytes the user gave, or they
/// are refused. Swift repairs argv into Strings (every non-UTF-8 byte becomes U+FFFD), so
/// before this `--account $'\xfe'` found the item stored under `$'\xff'`.
@Suite struct RawInputTests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func nonUTF8Account_isRefused_andNeverSelectsAnotherItem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let add = try sandbox.runBytes(
            [Self.bytes("add"), Self.bytes("--account"), [0xFF]], stdin: Self.bytes("secret-ff"))
        #expect(add.status == 2, "\(add.stderr)")
        #expect(
            add.stderr.contains("--account") && add.stderr.contains("UTF-8") && add.stderr.contains("--account-hex"),
            "\(add.stderr)")
        #expect(add.stderr.contains("(errSecParam -50)"), "\(add.stderr)")

        // Stored under the exact byte ff (hex form); the neighbour fe finds nothing, whichever way it is written.
        try sandbox.add(account: "ignored", data: [0])  // another item, so an empty result is not an empty keychain
        let exact = try sandbox.run(["add", "--account-hex", "ff", "--service", "mail"], stdin: Self.bytes("secret-ff"))
        #expect(exact.status == 0, "\(exact.stderr)")
        let raw = try sandbox.runBytes([
            Self.bytes("find"), Self.bytes("--account"), [0xFE], Self.bytes("--service"), Self.bytes("mail")
        ])
        #expect(raw.status == 2, "\(raw.stderr)")
        #expect(raw.stdout.isEmpty, "the secret stored under ff is not printed for fe")
        let inline = try sandbox.runBytes([Self.bytes("find"), Self.bytes("--account=") + [0xFE]])
        #expect(inline.status == 2 && inline.stdout.isEmpty && inline.stderr.contains("--account"), "\(inline.stderr)")
        #expect(try sandbox.run(["find", "--account-hex", "fe", "--service", "mail"]).status == 1)
        #expect(try sandbox.run(["find", "--account-hex", "ff", "--service", "mail"]).stdout == Self.bytes("secret-ff"))
        #expect(
            try sandbox.run(["find", "--account-hex", "0xFF", "--service", "mail"]).stdout == Self.bytes("secret-ff"))
    }

    @Test func theRefusal_namesTheOption_neverTheValue() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let value = Self.bytes("hunter2-") + [0xC3, 0x28]  // an invalid two-byte sequence after text
        for (args, option) in [
            (
                [Self.bytes("update"), Self.bytes("--account"), Self.bytes("a"), Self.bytes("--set-label"), value],
                "--set-label"
            ),
            ([Self.bytes("find"), Self.bytes("--keychain"), value], "--keychain"),
            ([Self.bytes("import"), value], "argument 2")
        ] {
            let result = try sandbox.runBytes(args)
            #expect(result.status == 2, "\(option): \(result.stderr)")
            #expect(result.stderr.contains(option), "\(result.stderr)")
            #expect(!result.stderr.contains("hunter2"), "the value is never echoed: \(result.stderr)")
            #expect(result.stderr.contains("(errSecParam -50)"))
        }
        let label = try sandbox.runBytes([
            Self.bytes("update"), Self.bytes("--account"), Self.bytes("a"), Self.bytes("--set-label"), value
        ])
        #expect(label.stderr.contains("--set-label-hex"), "the hex form is named: \(label.stderr)")
    }

    @Test func nonUTF8PathVariable_isRefused_namingIt() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for name in ["LATCHKEY_KEYCHAIN", "LATCHKEY_APP_ID", "LATCHKEY_PASSCODE_FILE"] {
            let result = try sandbox.runBytes([Self.bytes("dump")], env: [name: Self.bytes("/tmp/x") + [0xFE]])
            #expect(result.status == 2, "\(name): \(result.stderr)")
            #expect(result.stderr.contains(name) && result.stderr.contains("UTF-8"), "\(result.stderr)")
            #expect(result.stderr.contains("(errSecParam -50)"))
        }
    }

    /// A passcode is bytes: LATCHKEY_PASSCODE is taken as it is, so ff and fe are two
    /// passcodes (before, both became U+FFFD and each unlocked the other's keychain).
    @Test func passcodeInTheEnvironment_isTakenByteForByte() throws {
        let sandbox = try CLISandbox()
        let ff: [String: [UInt8]] = ["LATCHKEY_PASSCODE": Self.bytes("pw") + [0xFF]]
        let made = try sandbox.runBytes(
            [Self.bytes("init"), Self.bytes("--kdf-log-n"), Self.bytes(CLISandbox.kdfLogN)], env: ff)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(
            try sandbox.runBytes([Self.bytes("add"), Self.bytes("--account"), Self.bytes("a")], env: ff, stdin: [7])
                .status == 0)
        let wrong = try sandbox.runBytes(
            [Self.bytes("find"), Self.bytes("--account"), Self.bytes("a")],
            env: ["LATCHKEY_PASSCODE": Self.bytes("pw") + [0xFE]])
        #expect(wrong.status == 4, "another byte is another passcode: \(wrong.stderr)")
        #expect(wrong.stdout.isEmpty)
        #expect(
            try sandbox.runBytes([Self.bytes("find"), Self.bytes("--account"), Self.bytes("a")], env: ff).stdout == [7])
    }

    @Test func hexForms_ofEveryTextAttributeThatHoldsData() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        // Bytes given in hex match the same bytes given as text.
        try sandbox.add(account: "alice", service: "mail", data: [1], ["--label", "Mail"])
        #expect(try sandbox.run(["find", "--account-hex", "616c696365", "--service-hex", "6d:61:69:6c"]).stdout == [1])
        let update = try sandbox.run(["update", "--account", "alice", "--set-label-hex", "ff00fe"])
        #expect(update.status == 0, "\(update.stderr)")
        let attributes = try #require(
            try sandbox.run(["find", "--label-hex", "ff00fe", "--return", "attributes"]).json() as? [String: Any])
        #expect(attributes["labl"] as? String == Data([0xFF, 0x00, 0xFE]).base64EncodedString())
        let both = try sandbox.run(["find", "--account", "alice", "--account-hex", "616c696365"])
        #expect(
            both.status == 2 && both.stderr.contains("--account") && both.stderr.contains("--account-hex"),
            "\(both.stderr)")
        let notHex = try sandbox.run(["find", "--account-hex", "zz"])
        #expect(notHex.status == 2 && notHex.stderr.contains("--account-hex takes bytes in hex"), "\(notHex.stderr)")
        for flag in ["--server-hex", "--path-hex"] {
            #expect(try sandbox.run(["find", flag, "00"]).stderr.contains("is not an attribute of class genp"))
        }
    }

    @Test func checkArguments_findsTheOptionOfEachForm() throws {
        func message(_ args: [[UInt8]]) -> String? {
            do { try RawInput.checkArguments(args); return nil } catch { return "\(error)" }
        }
        #expect(message([Array("find".utf8), Array("--account".utf8), Array("alice".utf8)]) == nil)
        #expect(
            message([Array("find".utf8), Array("--account".utf8), [0x80]])?.contains("the value of --account ") == true)
        #expect(message([Array("find".utf8), Array("--service=".utf8) + [0xFF]])?.contains("--service-hex") == true)
        #expect(
            message([Array("find".utf8), Array("--set-comment".utf8), [0xFF]])?.contains("--set-comment-hex") == true)
        #expect(
            message([Array("find".utf8), Array("--json".utf8), Array("--keychain".utf8), [0xED, 0xA0, 0x80]])?
                .contains("the value of --keychain ") == true, "an encoded surrogate is not UTF-8")
        #expect(message([[0xFF]])?.contains("argument 1 ") == true)
        #expect(message([[0xFF]])?.contains("'latchkey --help'") == true)
        #expect(RawInput.hexForm(of: "--access-group") == nil, "agrp holds text only")
        #expect(RawInput.hexForm(of: "--application-tag") == "--application-tag-hex")
    }
}
