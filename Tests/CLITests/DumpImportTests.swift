import Foundation
import Testing

/// `dump` and `import` through the built binary.
@Suite struct DumpImportTests {
    @Test func dump_tableHasOneRowPerItem_andJSONHasNoSecrets() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", data: Array("hunter2".utf8), ["--label", "Mail"])
        #expect(
            try sandbox.run(
                [
                    "add", "--class", "inet", "--server", "example.com", "--protocol", "htps", "--port", "443",
                    "--account", "bob", "--accessible", "aku"
                ], stdin: Array("pw".utf8)
            ).status == 0)
        #expect(
            try sandbox.run(
                ["add", "--class", "keys", "--key-class", "symmetric", "--application-tag", "com.example.aes"],
                stdin: Array(repeating: 7, count: 32)
            ).status == 0)

        let table = try sandbox.run(["dump"])
        #expect(table.status == 0)
        #expect(table.stderr.isEmpty)
        let lines = table.out.split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("CLASS  NAME"))
        #expect(lines[1].hasPrefix("genp   alice") && lines[1].contains("Mail") && lines[1].contains(" ak "))
        #expect(lines[2].contains("htps://example.com:443") && lines[2].contains(" aku "))
        #expect(lines[3].contains("com.example.aes") && lines[3].contains("symmetric"))
        #expect(!table.out.contains("hunter2") && !table.out.contains("\u{1B}"))

        let json = try #require(try sandbox.run(["dump", "--json"]).json() as? [[String: Any]])
        #expect(json.map { $0["class"] as? String } == ["genp", "inet", "keys"])
        #expect(json.allSatisfy { $0["v_Data"] == nil && $0["agrp"] != nil && $0["pdmn"] != nil })
    }

    /// Rows come in creation order, not file order: an update rewrites an item at the end of
    /// the file, and its row stays where its cdat puts it.
    @Test func dump_ordersByCreationDate_notByFilePosition() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for name in ["zed", "alice", "mike"] { try sandbox.add(account: name, data: Array(name.utf8)) }
        #expect(try sandbox.run(["update", "--account", "zed", "--set-data"], stdin: [9]).status == 0)
        let json = try #require(try sandbox.run(["dump", "--json"]).json() as? [[String: Any]])
        #expect(json.map { $0["acct"] as? String } == ["zed", "alice", "mike"])
        let rows = try sandbox.run(["dump"]).out.split(separator: "\n").dropFirst()
        #expect(rows.map { $0.split(separator: " ", omittingEmptySubsequences: true)[1] } == ["zed", "alice", "mike"])
    }

    @Test func dump_locked_showsTheAvailableClasses_andSaysWhatIsLeftOut() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "ak", data: [1])
        try sandbox.add(account: "dk", data: [2], ["--accessible", "dk"])
        let result = try sandbox.run(["dump", "--json"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(result.status == 0)
        let items = try #require(try result.json() as? [[String: Any]])
        #expect(items.map { $0["acct"] as? String } == ["dk"])
        #expect(result.stderr.hasPrefix("latchkey: the keychain is locked: 1 item(s) protected ak"))
        #expect(result.stderr.contains("LATCHKEY_PASSCODE"))
    }

    @Test func dump_perApp_twoAppsShareAGroup_aThirdSeesOnlyItsOwn() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let mail = try sandbox.entitlements(
            "mail.plist", applicationIdentifier: "T1.com.example.mail",
            groups: ["T1.com.example.shared", "T1.com.example.mail"])
        let calendar = try sandbox.entitlements(
            "calendar.plist", applicationIdentifier: "T1.com.example.calendar", groups: ["T1.com.example.shared"])
        let other = try sandbox.entitlements(
            "other.plist", applicationIdentifier: "T2.org.other", groups: ["T2.org.other"])
        #expect(try sandbox.run(["add", "--account", "shared", "--entitlements", mail], stdin: [1]).status == 0)
        #expect(
            try sandbox.run(
                ["add", "--account", "mail-only", "--access-group", "T1.com.example.mail", "--entitlements", mail],
                stdin: [2]
            ).status == 0)
        #expect(
            try sandbox.run(
                [
                    "add", "--account", "cal-only", "--access-group", "T1.com.example.calendar", "--entitlements",
                    calendar
                ], stdin: [3]
            ).status == 0)
        #expect(try sandbox.run(["add", "--account", "other", "--entitlements", other], stdin: [4]).status == 0)

        func accounts(_ plist: String) throws -> Set<String> {
            let items = try #require(
                try sandbox.run(["dump", "--json", "--entitlements", plist]).json() as? [[String: Any]])
            return Set(items.compactMap { $0["acct"] as? String })
        }
        #expect(try accounts(mail) == ["shared", "mail-only"])
        #expect(try accounts(calendar) == ["shared", "cal-only"])
        #expect(try accounts(other) == ["other"])
    }

    @Test func import_addsEveryLine_reportsTheCount_andReadsStdin() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let lines = [
            #"{"class":"genp","acct":"alice","svce":"mail","v_Data":"aHVudGVyMg==","pdmn":"ck"}"#,
            "",
            #"{"class":"inet","acct":"bob","srvr":"example.com","ptcl":"htps","port":443,"invi":true,"v_Data":"cHc="}"#,
            #"{"class":"keys","kcls":2,"atag":"com.example.aes","v_Data":"AAECAw==","sdat":"2026-01-02T00:00:00Z"}"#
        ]
        let file = try sandbox.writeFile("items.jsonl", Array((lines.joined(separator: "\n") + "\n").utf8))
        let result = try sandbox.run(["import", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.out == "imported 3 item(s) into \(sandbox.keychainPath)\n")
        #expect(result.stderr.isEmpty, "no progress bar when stderr is not a terminal")

        #expect(try sandbox.run(["find", "--account", "alice"]).stdout == Array("hunter2".utf8))
        let inet = try #require(
            try sandbox.run(["find", "--class", "inet", "--server", "example.com", "--return", "attributes"]).json()
                as? [String: Any])
        #expect(inet["port"] as? Int == 443 && inet["invi"] as? Int == 1 && inet["pdmn"] as? String == "ak")
        #expect(
            try sandbox.run(["find", "--class", "keys", "--application-tag", "com.example.aes"]).stdout == [0, 1, 2, 3])
        let alice = try #require(
            try sandbox.run(["find", "--account", "alice", "--return", "attributes"]).json() as? [String: Any])
        #expect(alice["pdmn"] as? String == "ck")

        let stdin = try sandbox.run(["import", "-", "--json"], stdin: Array(#"{"class":"genp","acct":"carol"}"#.utf8))
        #expect(stdin.status == 0)
        #expect((try stdin.json() as? [String: Any])?["imported"] as? Int == 1)
    }

    @Test func import_aBadLine_namesIt_andImportsNothing() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let cases: [(String, String)] = [
            (#"{"class":"genp","acct":"x","bogus":1}"#, "\"bogus\" is not an attribute of class genp"),
            (#"{"acct":"x"}"#, "no \"class\""),
            (#"{"class":"idnt"}"#, "class 'idnt' cannot be imported"),
            (#"{"class":"genp","pdmn":"sometimes"}"#, "\"pdmn\" must be one of"),
            (#"{"class":"genp","v_Data":"***"}"#, "\"v_Data\" must be the secret in base64"),
            (#"{"class":"cert","v_Data":"AAAA"}"#, "DER X.509 certificate"),
            (#"["class","genp"]"#, "not a JSON object"),
            (#"{"class":"genp","acct":"x""#, "not valid JSON"),
            (#"{"class":"genp","acct":[1]}"#, "\"acct\" must be a string, a number or true/false")
        ]
        for (line, message) in cases {
            let file = try sandbox.writeFile(
                "bad.jsonl", Array("{\"class\":\"genp\",\"acct\":\"good\"}\n\(line)\n".utf8))
            let result = try sandbox.run(["import", file])
            #expect(result.status == 2, "\(line): \(result.stderr)")
            #expect(result.stderr.hasPrefix("latchkey: line 2: "), "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(line): \(result.stderr)")
            #expect(result.stderr.hasSuffix("nothing was imported (errSecParam -50)\n"))
        }
        #expect(try sandbox.run(["find", "--account", "good"]).status == 1, "the good line was not imported either")
    }

    /// The streaming transaction writes its records as it goes (in 1 MiB batches); a bad line
    /// after several megabytes were written cuts the file back to its size before the import.
    @Test func import_aBadLineAfterMegabytesWereWritten_leavesTheFileAsItWas() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "before", data: [1])
        let before = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        let secret = Data(repeating: 7, count: 1 << 20).base64EncodedString()
        var lines = (0..<4).map { "{\"class\":\"genp\",\"acct\":\"big\($0)\",\"v_Data\":\"\(secret)\"}" }
        lines.append(#"{"class":"genp","acct":"bad","v_Data":"***"}"#)
        let file = try sandbox.writeFile("items.jsonl", Array(lines.joined(separator: "\n").utf8))
        let result = try sandbox.run(["import", file])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr
                == "latchkey: line 5: \"v_Data\" must be the secret in base64; nothing was imported (errSecParam -50)\n"
        )
        let after = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        #expect(after == before, "the keychain is \(after.count) bytes, was \(before.count)")
        #expect(try sandbox.run(["find", "--account", "big0"]).status == 1)
        #expect(try sandbox.run(["verify"]).status == 0)
    }

    /// In a large import the items are sealed and written on a worker thread, batches behind
    /// the line being read; a unique key already in the keychain is still refused on its own
    /// line, and nothing of the batches already written stays.
    @Test func largeImport_itemAlreadyInTheKeychain_namesItsLine_andNothingStays() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "user2345", data: [1])
        let before = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        let lines = (0..<3000).map {
            "{\"class\":\"genp\",\"acct\":\"user\($0)\",\"svce\":\"mail\",\"v_Data\":\"\(Data(repeating: 0x41, count: 600).base64EncodedString())\"}\n"
        }
        let result = try sandbox.run(["import", "-"], stdin: Array(lines.joined().utf8))
        #expect(result.status == 3)
        #expect(
            result.stderr.hasPrefix(
                "latchkey: line 2346: an item with the same unique key is already in the keychain; nothing was imported"
            ), "\(result.stderr)")
        let after = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        #expect(after == before, "the keychain is \(after.count) bytes, was \(before.count)")
        #expect(try sandbox.run(["verify"]).status == 0)
    }

    @Test func import_duplicates_andForeignGroups_nameTheLine() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "taken", data: [1])
        let repeated = try sandbox.run(
            ["import", "-"],
            stdin: Array(
                "{\"class\":\"genp\",\"acct\":\"n\"}\n{\"class\":\"genp\",\"acct\":\"m\"}\n{\"class\":\"genp\",\"acct\":\"n\"}\n"
                    .utf8))
        #expect(repeated.status == 3)
        #expect(
            repeated.stderr
                == "latchkey: line 3 has the same unique key as line 1; nothing was imported (errSecDuplicateItem -25299)\n"
        )

        let existing = try sandbox.run(
            ["import", "-"],
            stdin: Array(
                "{\"class\":\"genp\",\"acct\":\"new\"}\n{\"class\":\"genp\",\"acct\":\"taken\",\"svce\":\"mail\"}\n"
                    .utf8))
        #expect(existing.status == 3)
        #expect(
            existing.stderr.hasPrefix("latchkey: line 2: an item with the same unique key is already in the keychain"))
        #expect(try sandbox.run(["find", "--account", "new"]).status == 1)

        let foreign = try sandbox.run(
            ["import", "-"], stdin: Array("{\"class\":\"genp\",\"acct\":\"f\",\"agrp\":\"com.other\"}\n".utf8))
        #expect(foreign.status == 6)
        #expect(foreign.stderr.hasPrefix("latchkey: line 1: the caller may not use access group com.other"))
    }

    @Test func import_dryRun_checksWithoutWriting() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let result = try sandbox.run(
            ["import", "-", "--dry-run"], stdin: Array("{\"class\":\"genp\",\"acct\":\"a\"}\n".utf8))
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("1 item(s) checked; nothing imported"))
        #expect(try sandbox.run(["find", "--account", "a"]).status == 1)
    }

    @Test func findOutput_importsIntoAnotherKeychain_asTheSameItems() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [0, 1, 255], ["--label", "A", "--accessible", "ck"])
        #expect(
            try sandbox.run(
                ["add", "--class", "inet", "--server", "s.example", "--port", "22", "--account", "b"], stdin: [9]
            ).status == 0)
        var lines: [String] = []
        for c in ["genp", "inet"] {
            let array = try #require(
                try sandbox.run(["find", "--class", c, "--limit", "all", "--return", "all"]).json() as? [Any])
            for object in array {
                lines.append(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
            }
        }
        let other = sandbox.directory.appendingPathComponent("other.keychain").path
        #expect(try sandbox.run(["init", "--keychain", other, "--kdf-log-n", CLISandbox.kdfLogN]).status == 0)
        let imported = try sandbox.run(
            ["import", "-", "--keychain", other], stdin: Array(lines.joined(separator: "\n").utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try sandbox.run(["find", "--account", "a", "--keychain", other]).stdout == [0, 1, 255])
        let a = try #require(
            try sandbox.run(["find", "--account", "a", "--keychain", other, "--return", "attributes"]).json()
                as? [String: Any])
        #expect(a["labl"] as? String == "A" && a["pdmn"] as? String == "ck")
        #expect(try sandbox.run(["find", "--class", "inet", "--port", "22", "--keychain", other]).stdout == [9])
    }
}

/// Access groups compare bytes in every command (issue 13 §4): an identity whose group differs
/// from another's only in case or Unicode normalization reaches none of the other's items.
@Suite struct AccessGroupBytesCLITests {
    static let nfc = "caf\u{E9}.shared"
    static let nfd = "cafe\u{301}.shared"

    @Test func findCaseInsensitive_withAnUppercaseCopyOfAGroup_findsNothingOfIt() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", service: "bank", data: Array("victim".utf8), ["--app-id", "com.victim.bank"])
        let attack = try sandbox.run([
            "find", "--account", "ALICE", "--case-insensitive", "--access-group", "COM.VICTIM.BANK",
            "--app-id", "COM.VICTIM.BANK"
        ])
        #expect(attack.status == 1, "\(attack.out)")
        #expect(attack.stdout.isEmpty)
        #expect(
            try sandbox.run(["find", "--account", "ALICE", "--case-insensitive", "--app-id", "COM.VICTIM.BANK"]).status
                == 1)
        // The owner's case-insensitive search still folds the account.
        #expect(
            try sandbox.run(["find", "--account", "ALICE", "--case-insensitive", "--app-id", "com.victim.bank"]).stdout
                == Array("victim".utf8))
    }

    @Test func nfcAndNFDEntitlements_dumpUpdateDeleteAddAndImport_stayInTheirOwnGroup() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let nfcPlist = try sandbox.entitlements("nfc.plist", applicationIdentifier: "T1.app.nfc", groups: [Self.nfc])
        let nfdPlist = try sandbox.entitlements("nfd.plist", applicationIdentifier: "T1.app.nfd", groups: [Self.nfd])
        try sandbox.add(account: "alice", service: "bank", data: Array("nfd secret".utf8), ["--entitlements", nfdPlist])
        try sandbox.add(account: "mine", service: "other", data: [1], ["--entitlements", nfcPlist])

        let dump = try #require(
            try sandbox.run(["dump", "--json", "--entitlements", nfcPlist]).json() as? [[String: Any]])
        #expect(dump.compactMap { $0["acct"] as? String } == ["mine"])
        let update = try sandbox.run(["update", "--service", "bank", "--set-label", "owned", "--entitlements", nfcPlist]
        )
        #expect(update.status == 1, "\(update.stderr)")
        #expect(try sandbox.run(["delete", "--service", "bank", "--entitlements", nfcPlist]).status == 1)
        let add = try sandbox.run(
            ["add", "--account", "x", "--access-group", Self.nfd, "--entitlements", nfcPlist], stdin: [2])
        #expect(add.status == 6)
        #expect(add.stderr.contains("(errSecNoAccessForItem -25243)"))
        let line = Array(
            ("{\"class\":\"genp\",\"acct\":\"y\",\"agrp\":\"" + Self.nfd + "\",\"v_Data\":\"AA==\"}\n").utf8)
        let imported = try sandbox.run(["import", "-", "--entitlements", nfcPlist], stdin: line)
        #expect(imported.status == 6, "\(imported.stderr)")
        #expect(imported.stderr.contains("line 1"))

        // The NFD app's item is untouched, and the only one in its group.
        let theirs = try #require(
            try sandbox.run(["dump", "--json", "--entitlements", nfdPlist]).json() as? [[String: Any]])
        #expect(theirs.compactMap { $0["acct"] as? String } == ["alice"])
        #expect(theirs.first?["labl"] == nil)
        #expect(
            try sandbox.run(["find", "--account", "alice", "--entitlements", nfdPlist]).stdout
                == Array("nfd secret".utf8))
    }
}
