import Foundation
import Latchkey
import LatchkeyFormat
import Testing
@testable import latchkey

/// Issue 3 item 9: every attribute of every class is reachable from add/find/update/delete,
/// with Apple's 4-character keys in the JSON.
@Suite struct AttributeOptionTests {
    /// Attributes with an option of their own; pdmn is --accessible, sync --synchronizable,
    /// cdat/mdat are the keychain's.
    @Test func everySchemaAttributeHasAnOption_forEachOfItsClasses() {
        for c in ItemClass.allCases {
            for code in ItemSchema.attributes(of: c).keys where !["pdmn", "sync", "cdat", "mdat"].contains(code) {
                let options = AttributeOption.all.filter { $0.code == code && $0.classes.contains(c) }
                #expect(options.count == 1, "\(c.rawValue).\(code) has \(options.count) options")
            }
        }
        for option in AttributeOption.all {
            for c in option.classes { #expect(ItemSchema.kind(option.code, in: c) != nil, "--\(option.flag) on \(c)") }
        }
    }

    /// Every text attribute that can hold data has a hex form, and only those.
    @Test func hexForms_areThoseOfTheTextAttributesThatHoldData() {
        let flags = Set(AttributeOption.allBytes.map(\.flag))
        #expect(
            flags == [
                "label-hex", "alias-hex", "account-hex", "description-hex", "comment-hex", "protected-hex",
                "service-hex",
                "generic-hex", "security-domain-hex", "server-hex", "authentication-type-hex", "path-hex",
                "application-tag-hex"
            ])
        for option in AttributeOption.allBytes {
            #expect(option.syntax == .hex && option.help.abstract.contains("as bytes in hex"), "--\(option.flag)")
        }
    }

    @Test func help_listsEveryOption_andEverySettableOneAsSetX() throws {
        let sandbox = try CLISandbox()
        // --help shows the common ones; --help-all every one (HelpAndCompletionTests).
        let add = try sandbox.run(["add", "--help-all"]).out
        let find = try sandbox.run(["find", "--help-all"]).out
        let update = try sandbox.run(["update", "--help-all"]).out
        for option in AttributeOption.all + AttributeOption.allBytes {
            #expect(add.contains("--\(option.flag) <"), "add lacks --\(option.flag)")
            #expect(find.contains("--\(option.flag) <"), "find lacks --\(option.flag)")
            #expect(update.contains("--set-\(option.flag) <") == !option.derived, "update and --set-\(option.flag)")
        }
        for flag in ["--class", "--accessible", "--synchronizable", "--limit", "--case-insensitive", "--return"] {
            #expect(find.contains(flag))
        }
        #expect(update.contains("--set-accessible") && update.contains("--set-synchronizable"))
    }

    @Test func passwordAttributes_roundTripThroughJSON() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let args = [
            "--account", "a", "--service", "s", "--description", "note", "--comment", "hi", "--generic", "g",
            "--creator", "aapl", "--type", "1234", "--alias", "a@example.com", "--is-invisible", "yes",
            "--is-negative", "no", "--has-custom-icon", "true", "--protected", "p", "--script-code", "7",
            "--label", "L", "--sync-view-hint", "v", "--token-id", "t"
        ]
        #expect(try sandbox.run(["add"] + args, stdin: [1]).status == 0)
        let result = try sandbox.run(["find", "--return", "attributes"] + args)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try result.json() as? [String: Any])
        let expected: [String: Any] = [
            "acct": "a", "svce": "s", "desc": "note", "icmt": "hi", "gena": "g", "crtr": "aapl",
            "type": 1234, "alis": "a@example.com", "invi": 1, "nega": 0, "cusi": 1, "prot": "p",
            "scrp": 7, "labl": "L", "vwht": "v", "tkid": "t"
        ]
        for (key, value) in expected { #expect("\(object[key] ?? "missing")" == "\(value)", "\(key)") }
    }

    @Test func internetPasswordAttributes_eachSelects() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let item = [
            "--class", "inet", "--server", "example.com", "--protocol", "htps", "--port", "8443", "--path", "/a",
            "--security-domain", "realm", "--authentication-type", "form", "--account", "bob"
        ]
        #expect(try sandbox.run(["add"] + item, stdin: Array("pw".utf8)).status == 0)
        #expect(
            try sandbox.run(["add", "--class", "inet", "--server", "example.com", "--account", "eve"], stdin: [1])
                .status == 0)
        for pair in stride(from: 2, to: item.count, by: 2) {
            let result = try sandbox.run([
                "find", "--class", "inet", item[pair], item[pair + 1], "--limit", "all", "--return", "attributes"
            ])
            let array = try #require(try result.json() as? [[String: Any]], "\(item[pair]): \(result.stderr)")
            #expect(array.count == (item[pair] == "--server" ? 2 : 1), "\(item[pair])")
        }
        #expect(try sandbox.run(["find", "--class", "inet", "--authentication-type", "http"]).status == 1)
    }

    @Test func keyAttributes_derivedFromDER_andGiven_areSelectable_andUpdatable() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let key = CLISandbox.fixture("certs/rsa2048-key.der")
        #expect(
            try sandbox.run([
                "add", "--class", "keys", "--data-file", key, "--application-tag", "com.example.rsa",
                "--can-sign", "yes", "--start-date", "2026-01-02"
            ]).status == 0)
        let aes: [UInt8] = Array(repeating: 0x42, count: 32)
        #expect(
            try sandbox.run(
                [
                    "add", "--class", "keys", "--key-class", "symmetric", "--application-tag", "com.example.aes",
                    "--key-size-in-bits", "256", "--effective-key-size", "256", "--can-encrypt", "yes"
                ], stdin: aes
            ).status == 0)

        let rsa = try #require(
            try sandbox.run([
                "find", "--class", "keys", "--key-type", "rsa", "--key-class", "private",
                "--key-size-in-bits", "2048", "--return", "attributes"
            ]).json() as? [String: Any])
        #expect(rsa["atag"] as? String == "com.example.rsa")
        #expect(rsa["type"] as? Int == 42)
        #expect(rsa["sign"] as? Int == 1)
        #expect(rsa["sdat"] as? String == "2026-01-02T00:00:00.000Z")
        // The application label (SHA-1 of the public key) selects it, given in hex.
        let klblText = try #require(rsa["klbl"] as? String)
        let klbl = try #require(Data(base64Encoded: klblText))
        let hex = klbl.map { String(format: "%02x", $0) }.joined()
        #expect(
            try sandbox.run(["find", "--class", "keys", "--application-label", hex]).stdout
                == [UInt8](try Data(contentsOf: URL(fileURLWithPath: key))))

        #expect(try sandbox.run(["find", "--class", "keys", "--key-class", "symmetric"]).stdout == aes)
        let update = try sandbox.run([
            "update", "--class", "keys", "--application-tag", "com.example.aes",
            "--set-can-encrypt", "no", "--set-can-decrypt", "yes", "--set-label", "AES"
        ])
        #expect(update.status == 0, "\(update.stderr)")
        let after = try #require(
            try sandbox.run([
                "find", "--class", "keys", "--label", "AES", "--can-decrypt", "yes", "--return", "attributes"
            ]).json() as? [String: Any])
        #expect(after["encr"] as? Int == 0)
        #expect(try sandbox.run(["delete", "--class", "keys", "--can-sign", "yes"]).status == 0)
        #expect(try sandbox.run(["find", "--class", "keys", "--key-type", "rsa"]).status == 1)
    }

    @Test func certificateAttributes_areDerived_andSelectInQueries() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        #expect(
            try sandbox.run(["add", "--class", "cert", "--data-file", CLISandbox.fixture("certs/ec-p256-cert.der")])
                .status == 0)
        let cert = try #require(
            try sandbox.run(["find", "--class", "cert", "--return", "attributes"]).json() as? [String: Any])
        #expect(cert["pdmn"] as? String == "dk", "certificates default to Always")
        for key in ["ctyp", "cenc", "subj", "issr", "slnr", "pkhh"] { #expect(cert[key] != nil, "\(key)") }
        func hex(_ key: String) throws -> String {
            let text = try #require(cert[key] as? String)
            return try #require(Data(base64Encoded: text)).map { String(format: "%02x", $0) }.joined()
        }
        for (flag, key) in [
            ("--serial-number", "slnr"), ("--issuer", "issr"), ("--subject", "subj"), ("--public-key-hash", "pkhh")
        ] {
            let found = try sandbox.run(["find", "--class", "cert", flag, try hex(key), "--return", "attributes"])
            #expect(found.status == 0, "\(flag): \(found.stderr)")
        }
        #expect(try sandbox.run(["find", "--class", "cert", "--serial-number", "00"]).status == 1)
        #expect(
            try sandbox.run([
                "find", "--class", "cert", "--certificate-type", "\(cert["ctyp"]!)", "--certificate-encoding", "3"
            ]).status == 0)
    }

    @Test func synchronizable_isStoredAndFiltered_asOnIOS() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        #expect(try sandbox.run(["add", "--account", "s", "--synchronizable", "yes"], stdin: [1]).status == 0)
        try sandbox.add(account: "n", data: [2])
        #expect(try sandbox.run(["find", "--account", "s"]).status == 1, "queries see sync = 0 only by default")
        #expect(try sandbox.run(["find", "--account", "s", "--synchronizable", "yes"]).stdout == [1])
        let any = try #require(
            try sandbox.run(["find", "--synchronizable", "any", "--limit", "all", "--return", "attributes"]).json()
                as? [[String: Any]])
        #expect(any.count == 2)
        #expect(
            try sandbox.run(["update", "--account", "s", "--synchronizable", "yes", "--set-synchronizable", "no"])
                .status == 0)
        #expect(try sandbox.run(["find", "--account", "s"]).stdout == [1])
    }

    @Test func limitN_andCaseInsensitive() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for name in ["Alice", "bob", "carol"] { try sandbox.add(account: name, data: Array(name.utf8)) }
        let two = try #require(
            try sandbox.run(["find", "--service", "mail", "--limit", "2", "--return", "attributes"]).json() as? [Any])
        #expect(two.count == 2)
        let one = try #require(
            try sandbox.run(["find", "--service", "mail", "--limit", "1", "--return", "attributes"]).json()
                as? [String: Any])
        #expect(one["class"] as? String == "genp", "--limit 1 is one: an object")
        #expect(try sandbox.run(["find", "--account", "ALICE"]).status == 1)
        #expect(try sandbox.run(["find", "--account", "ALICE", "--case-insensitive"]).stdout == Array("Alice".utf8))
    }
}
