import Foundation
import Testing

/// add / find / update / delete through the built binary (docs/CLI.md "Commands").
@Suite struct ItemCommandTests {
    @Test func addThenFind_roundTripsBinaryDataWithNUL() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let secret: [UInt8] = [0x73, 0x00, 0xFF, 0x0A, 0x63, 0x0D, 0x00]
        let added = try sandbox.run(["add", "--account", "alice", "--service", "mail"], stdin: secret)
        #expect(added.status == 0)
        #expect(added.stdout.isEmpty)
        #expect(added.stderr.isEmpty)

        let found = try sandbox.run(["find", "--account", "alice", "--service", "mail"])
        #expect(found.status == 0)
        #expect(found.stdout == secret)
        #expect(found.stderr.isEmpty)
    }

    @Test func add_fromDataFile_storesTheFileBytes() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let path = try sandbox.writeFile("secret.bin", [1, 2, 3, 0, 10])
        #expect(try sandbox.run(["add", "--account", "a", "--data-file", path]).status == 0)
        #expect(try sandbox.run(["find", "--account", "a"]).stdout == [1, 2, 3, 0, 10])
    }

    @Test func add_duplicate_exits3WithDuplicateItem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", data: Array("one".utf8))
        let again = try sandbox.run(["add", "--account", "alice", "--service", "mail"], stdin: Array("two".utf8))
        #expect(again.status == 3)
        #expect(again.stdout.isEmpty)
        #expect(again.stderr.hasPrefix("latchkey: "))
        #expect(again.stderr.hasSuffix("(errSecDuplicateItem -25299)\n"))
        #expect(!again.stderr.contains("two"))
        #expect(try sandbox.run(["find", "--account", "alice"]).stdout == Array("one".utf8))
    }

    @Test func find_whenNothingMatches_exits1WithExactMessage() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let result = try sandbox.run(["find", "--account", "nobody"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "latchkey: no item matches the query (errSecItemNotFound -25300)\n")
    }

    @Test func find_returnAttributesJSON_hasApplesKeysAndISODates() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(
            account: "alice", data: Array("pw".utf8), ["--label", "Mail", "--accessible", "AfterFirstUnlock"])
        let result = try sandbox.run(["find", "--account", "alice", "--return", "attributes", "--json"])
        #expect(result.status == 0)
        let object = try #require(try result.json() as? [String: Any])
        for key in ["acct", "svce", "agrp", "pdmn", "cdat", "mdat", "class", "labl"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        #expect(object["v_Data"] == nil)
        #expect(object["class"] as? String == "genp")
        #expect(object["acct"] as? String == "alice")
        #expect(object["agrp"] as? String == "latchkey.cli")
        #expect(object["pdmn"] as? String == "ck")
        let cdat = try #require(object["cdat"] as? String)
        #expect(
            cdat.hasSuffix("Z") && cdat.contains("T") && cdat.contains("."), "not ISO 8601 UTC with fractions: \(cdat)")
        // Sorted keys, pretty-printed.
        #expect(result.out.hasPrefix("{\n"))
        #expect(result.out.range(of: "\"acct\"")!.lowerBound < result.out.range(of: "\"svce\"")!.lowerBound)
    }

    @Test func find_limitAllReturnAll_printsArrayWithBase64Data() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [0, 1, 2])
        try sandbox.add(account: "b", data: Array("hello".utf8))
        try sandbox.add(account: "c", service: "other", data: [9])
        let result = try sandbox.run(["find", "--service", "mail", "--limit", "all", "--return", "all"])
        #expect(result.status == 0)
        let array = try #require(try result.json() as? [[String: Any]])
        #expect(array.count == 2)
        let byAccount = Dictionary(uniqueKeysWithValues: array.map { ($0["acct"] as! String, $0) })
        #expect(byAccount["a"]?["v_Data"] as? String == "AAEC")
        #expect(byAccount["b"]?["v_Data"] as? String == "aGVsbG8=")
    }

    @Test func find_returnDataJSON_wrapsTheSecretInBase64() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [0xFF, 0x00])
        let result = try sandbox.run(["find", "--account", "a", "--json"])
        #expect(result.status == 0)
        #expect((try result.json() as? [String: String]) == ["v_Data": "/wA="])
    }

    @Test func find_limitAllWithData_isAUsageError() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let result = try sandbox.run(["find", "--limit", "all"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--return attributes"))
    }

    @Test func inetItem_withProtocolAndPort_isFoundByThem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let add = try sandbox.run(
            [
                "add", "--class", "inet", "--server", "example.com", "--protocol", "htps", "--port", "443",
                "--account", "bob", "--path", "/login"
            ], stdin: Array("pw".utf8))
        #expect(add.status == 0)
        let found = try sandbox.run([
            "find", "--class", "inet", "--server", "example.com", "--port", "443", "--return", "attributes"
        ])
        #expect(found.status == 0)
        let object = try #require(try found.json() as? [String: Any])
        #expect(object["class"] as? String == "inet")
        #expect(object["port"] as? Int == 443)
        #expect(object["ptcl"] as? String == "htps")
        #expect(try sandbox.run(["find", "--class", "genp", "--account", "bob"]).status == 1)
    }

    @Test func update_changesAttributesAndData_thenFindSeesThem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", data: Array("old".utf8))
        let before = try #require(
            try sandbox.run(["find", "--account", "alice", "--return", "attributes"]).json() as? [String: Any])

        let update = try sandbox.run(
            ["update", "--account", "alice", "--service", "mail", "--set-label", "Work", "--set-data"],
            stdin: Array("new\u{0}secret".utf8))
        #expect(update.status == 0)
        #expect(update.stdout.isEmpty)
        #expect(update.stderr.isEmpty)

        #expect(try sandbox.run(["find", "--account", "alice"]).stdout == Array("new\u{0}secret".utf8))
        let after = try #require(
            try sandbox.run(["find", "--label", "Work", "--return", "attributes"]).json() as? [String: Any])
        #expect(after["labl"] as? String == "Work")
        #expect(after["cdat"] as? String == before["cdat"] as? String)

        let moved = try sandbox.run([
            "update", "--account", "alice", "--set-account", "alicia", "--set-accessible", "dk"
        ])
        #expect(moved.status == 0)
        #expect(try sandbox.run(["find", "--account", "alice"]).status == 1)
        let renamed = try #require(
            try sandbox.run(["find", "--account", "alicia", "--return", "attributes"]).json() as? [String: Any])
        #expect(renamed["pdmn"] as? String == "dk")
    }

    @Test func update_whenNothingMatches_exits1_andWithoutChanges_exits2() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let missing = try sandbox.run(["update", "--account", "ghost", "--set-label", "x"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasSuffix("(errSecItemNotFound -25300)\n"))
        #expect(try sandbox.run(["update", "--account", "ghost"]).status == 2)
    }

    @Test func delete_removesEveryMatch_stdoutEmpty_thenFindExits1() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        try sandbox.add(account: "b", data: [2])
        try sandbox.add(account: "c", service: "keep", data: [3])
        let deleted = try sandbox.run(["delete", "--service", "mail", "--yes"])
        #expect(deleted.status == 0)
        #expect(deleted.stdout.isEmpty)
        #expect(deleted.stderr.isEmpty, "the count goes to stderr only when it is a terminal")
        #expect(try sandbox.run(["find", "--account", "a"]).status == 1)
        #expect(try sandbox.run(["find", "--account", "b"]).status == 1)
        #expect(try sandbox.run(["find", "--account", "c"]).stdout == [3])
        #expect(try sandbox.run(["delete", "--service", "mail"]).status == 1)
    }

    /// `com.apple.security.application-groups` in --entitlements / LATCHKEY_ENTITLEMENTS adds
    /// the app groups after the application-identifier, as iOS does (issue 18 §1, item 2).
    @Test func applicationGroups_inEntitlements_shareItemsBetweenApps() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        func plist(_ name: String, _ app: String, _ groups: [String]) throws -> String {
            let path = sandbox.directory.appendingPathComponent(name).path
            try """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>application-identifier</key><string>\(app)</string>
              <key>com.apple.security.application-groups</key><array>\(groups.map { "<string>\($0)</string>" }.joined())</array>
            </dict></plist>
            """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let a = try plist("a.plist", "TEAM.com.example.a", ["group.example.shared"])
        let b = try plist("b.plist", "TEAM.com.example.b", ["group.example.shared"])
        let added = try sandbox.run(
            ["add", "--account", "s", "--access-group", "group.example.shared", "--entitlements", a], stdin: [7])
        #expect(added.status == 0, "\(added.stderr)")
        try sandbox.add(account: "own", data: [8], ["--entitlements", a])
        // App b reads it through LATCHKEY_ENTITLEMENTS, as a script would.
        #expect(try sandbox.run(["find", "--account", "s"], env: ["LATCHKEY_ENTITLEMENTS": b]).stdout == [7])
        let attrs = try #require(
            try sandbox.run(["find", "--account", "own", "--return", "attributes", "--entitlements", a]).json()
                as? [String: Any])
        #expect(attrs["agrp"] as? String == "TEAM.com.example.a", "the default group is the app id, not the app group")
        #expect(try sandbox.run(["find", "--account", "own", "--entitlements", b]).status == 1)
        #expect(try sandbox.run(["find", "--account", "s", "--app-id", "TEAM.com.example.c"]).status == 1)
        #expect(try sandbox.run(["delete", "--account", "s", "--entitlements", b]).status == 0)
        #expect(try sandbox.run(["find", "--account", "s", "--entitlements", a]).status == 1)
    }

    @Test func accessGroup_defaultsToAppID_andQueriesSeeOnlyTheCallersGroups() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1], env: ["LATCHKEY_APP_ID": "com.example.one"])
        try sandbox.add(account: "a", data: [2], ["--app-id", "com.example.two"])
        // Each app finds its own item; an explicit group it does not have finds nothing.
        #expect(try sandbox.run(["find", "--account", "a", "--app-id", "com.example.one"]).stdout == [1])
        #expect(try sandbox.run(["find", "--account", "a", "--app-id", "com.example.two"]).stdout == [2])
        #expect(
            try sandbox.run([
                "find", "--account", "a", "--app-id", "com.example.one", "--access-group", "com.example.two"
            ]).status == 1)
        #expect(try sandbox.run(["find", "--account", "a"]).status == 1, "the default app id latchkey.cli sees neither")
        // A caller whose entitlements list both groups sees both.
        let plist = sandbox.directory.appendingPathComponent("both.plist").path
        try """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>application-identifier</key><string>com.example.three</string>
          <key>keychain-access-groups</key><array><string>com.example.one</string><string>com.example.two</string></array>
        </dict></plist>
        """.write(toFile: plist, atomically: true, encoding: .utf8)
        let all = try #require(
            try sandbox.run([
                "find", "--account", "a", "--limit", "all", "--return", "attributes", "--entitlements", plist
            ]).json() as? [Any])
        #expect(all.count == 2)
        // Adding to a group the caller does not have is errSecNoAccessForItem (exit 6).
        let denied = try sandbox.run(
            ["add", "--account", "z", "--access-group", "com.example.one", "--app-id", "com.example.two"], stdin: [9])
        #expect(denied.status == 6)
        #expect(denied.stderr.contains("(errSecNoAccessForItem -25243)"))
    }
}
