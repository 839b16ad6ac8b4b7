import Foundation
import Testing

/// init, passcodes and lock state, verify, compact, info through the built binary.
@Suite struct KeychainCommandTests {
    @Test func init_createsKeychainAndDevice_andRefusesToOverwrite() throws {
        let sandbox = try CLISandbox()
        let first = try sandbox.run(["init", "--kdf-log-n", CLISandbox.kdfLogN])
        #expect(first.status == 0)
        #expect(first.stdout.isEmpty)
        #expect(FileManager.default.fileExists(atPath: sandbox.keychainPath))
        let mode =
            try FileManager.default.attributesOfItem(atPath: sandbox.environment["LATCHKEY_DEVICE"]!)[.posixPermissions]
            as? Int
        #expect(mode == 0o600)

        let again = try sandbox.run(["init", "--kdf-log-n", CLISandbox.kdfLogN])
        #expect(again.status == 7)
        #expect(again.stderr.hasPrefix("latchkey: "))
        #expect(again.stderr.hasSuffix("(errSecDuplicateKeychain -25296)\n"))
    }

    @Test func init_defaultsToXDGDataHome() throws {
        let sandbox = try CLISandbox()
        let result = try sandbox.run(
            ["init", "--no-passcode"], env: ["LATCHKEY_KEYCHAIN": nil, "LATCHKEY_DEVICE": nil, "LATCHKEY_PASSCODE": nil]
        )
        #expect(result.status == 0)
        let dir = sandbox.directory.appendingPathComponent("xdg/latchkey")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("login.keychain").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("device.secret").path))
    }

    @Test func init_withoutPasscodeOrTerminal_isAUsageErrorNamingTheWays() throws {
        let sandbox = try CLISandbox()
        let result = try sandbox.run(["init"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(result.status == 2)
        for hint in ["LATCHKEY_PASSCODE", "--passcode-file", "--no-passcode"] {
            #expect(result.stderr.contains(hint), "stderr lacks \(hint): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.keychainPath))
    }

    @Test func init_noPasscode_itemsNeedNoPasscode() throws {
        let sandbox = try CLISandbox()
        let env: [String: String?] = ["LATCHKEY_PASSCODE": nil]
        #expect(try sandbox.run(["init", "--no-passcode"], env: env).status == 0)
        try sandbox.add(account: "a", data: Array("x".utf8), env: env)
        #expect(try sandbox.run(["find", "--account", "a"], env: env).stdout == Array("x".utf8))
        let info = try #require(try sandbox.run(["info", "--json"], env: env).json() as? [String: Any])
        #expect(info["hasPasscode"] as? Bool == false)
    }

    @Test func passcodeFile_ignoresOneTrailingNewline() throws {
        let sandbox = try CLISandbox()
        let file = try sandbox.writeFile("passcode", Array("file pass\n".utf8))
        let env: [String: String?] = ["LATCHKEY_PASSCODE": nil]
        #expect(
            try sandbox.run(["init", "--kdf-log-n", CLISandbox.kdfLogN, "--passcode-file", file], env: env).status == 0)
        try sandbox.add(account: "a", data: [7], ["--passcode-file", file], env: env)
        // The same passcode given without the newline opens it.
        #expect(try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": "file pass"]).stdout == [7])
    }

    @Test func wrongPasscode_exits4WithAuthFailed() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let result = try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": "wrong horse"])
        #expect(result.status == 4)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasSuffix("(errSecAuthFailed -25293)\n"))
        #expect(!result.stderr.contains("wrong horse"))
    }

    @Test func lockedKeychain_akItemExits4_whileDkItemIsReadable() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "ak-item", data: Array("ak".utf8))
        try sandbox.add(account: "dk-item", data: Array("dk".utf8), ["--accessible", "dk"])
        let locked: [String: String?] = ["LATCHKEY_PASSCODE": nil]

        let ak = try sandbox.run(
            ["find", "--account", "ak-item", "--service", "mail", "--access-group", "latchkey.cli"], env: locked)
        #expect(ak.status == 4)
        #expect(ak.stderr.hasSuffix("(errSecInteractionNotAllowed -25308)\n"))

        // The full unique key, or a protection-class filter, reaches the dk item without
        // decrypting the locked ones.
        let dk = try sandbox.run(
            ["find", "--account", "dk-item", "--service", "mail", "--access-group", "latchkey.cli"], env: locked)
        #expect(dk.status == 0)
        #expect(dk.stdout == Array("dk".utf8))
        #expect(try sandbox.run(["find", "--accessible", "Always"], env: locked).stdout == Array("dk".utf8))

        // Adding is the same: dk works locked, ak does not.
        #expect(try sandbox.run(["add", "--account", "dk2", "--accessible", "dk"], stdin: [1], env: locked).status == 0)
        #expect(try sandbox.run(["add", "--account", "ak2"], stdin: [1], env: locked).status == 4)
    }

    @Test func passwd_oldPasscodeFails_newWorks() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: Array("kept".utf8))
        let changed = try sandbox.run(
            ["passwd", "--kdf-log-n", CLISandbox.kdfLogN], env: ["LATCHKEY_NEW_PASSCODE": "battery staple"])
        #expect(changed.status == 0)
        #expect(changed.stdout.isEmpty)

        let old = try sandbox.run(["find", "--account", "a"])
        #expect(old.status == 4)
        #expect(old.stderr.hasSuffix("(errSecAuthFailed -25293)\n"))
        let new = try sandbox.run(["find", "--account", "a"], env: ["LATCHKEY_PASSCODE": "battery staple"])
        #expect(new.status == 0)
        #expect(new.stdout == Array("kept".utf8))
    }

    @Test func passwd_withoutNewPasscode_exits2_andWithWrongOld_exits4() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let noNew = try sandbox.run(["passwd"])
        #expect(noNew.status == 2)
        #expect(noNew.stderr.contains("LATCHKEY_NEW_PASSCODE"))
        let wrongOld = try sandbox.run(
            ["passwd", "--kdf-log-n", CLISandbox.kdfLogN],
            env: ["LATCHKEY_PASSCODE": "nope", "LATCHKEY_NEW_PASSCODE": "x"])
        #expect(wrongOld.status == 4)
    }

    /// Issue 14 §2: `verify --repair` shows what cutting a damaged keychain back would drop,
    /// changes nothing without agreement (no terminal here, no --yes), and cuts with --yes.
    @Test func verifyRepair_showsWhatItDrops_andCutsOnlyWithYes() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for i in 0..<4 { try sandbox.add(account: "acct\(i)", data: Array("secret \(i)".utf8)) }
        let url = URL(fileURLWithPath: sandbox.keychainPath)
        let intact = [UInt8](try Data(contentsOf: url))
        try sandbox.add(account: "acct4", data: Array("secret 4".utf8))
        try sandbox.add(account: "acct5", data: Array("secret 5".utf8))
        var bytes = [UInt8](try Data(contentsOf: url))
        bytes[intact.count + 60] ^= 0x01  // inside acct4's record; acct5's verifies
        try Data(bytes).write(to: url)

        let shown = try sandbox.run(["verify", "--repair"])
        #expect(shown.status == 5, "\(shown.stderr)")
        #expect(shown.out.contains("repair: cut the file from \(bytes.count) to \(intact.count) bytes"), "\(shown.out)")
        #expect(shown.out.contains("acct=acct5"), "names the intact item it would drop: \(shown.out)")
        #expect(shown.stderr.contains("--repair --yes"))
        #expect([UInt8](try Data(contentsOf: url)) == bytes, "nothing changes without agreement")

        let cut = try sandbox.run(["verify", "--repair", "--yes"])
        #expect(cut.status == 0, "\(cut.stderr)")
        #expect([UInt8](try Data(contentsOf: url)) == intact)
        #expect(try sandbox.run(["find", "--account", "acct3"]).stdout == Array("secret 3".utf8))
        #expect(try sandbox.run(["find", "--account", "acct5"]).status == 1)
    }

    /// Issue 14 §8: verify of a rolled-back keychain repeats the rollback's own remedy
    /// (--accept-rollback), never "restore from a backup" after it.
    @Test func verifyOfARolledBackKeychain_givesTheRollbackRemedyOnly() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let url = URL(fileURLWithPath: sandbox.keychainPath)
        let old = try Data(contentsOf: url)
        try sandbox.add(account: "b", data: [2])
        try old.write(to: url)
        let verify = try sandbox.run(["verify"])
        #expect(verify.status == 5)
        #expect(verify.out.hasPrefix("rolled back: "), "\(verify.out)")
        #expect(
            verify.stderr.contains("--accept-rollback") && !verify.stderr.contains("restore it from a backup"),
            "\(verify.stderr)")
    }

    @Test func damagedKeychain_exits5OnFindAndVerify() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for i in 0..<6 { try sandbox.add(account: "acct\(i)", data: Array("secret \(i)".utf8)) }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sandbox.keychainPath)))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: sandbox.keychainPath))

        let find = try sandbox.run(["find", "--account", "acct0"])
        #expect(find.status == 5)
        #expect(find.stdout.isEmpty)
        #expect(find.stderr.hasSuffix("(errSecDecode -26275)\n"))

        let verify = try sandbox.run(["verify"])
        #expect(verify.status == 5)
        #expect(verify.out.hasPrefix("damaged: "))
        #expect(verify.stderr.hasSuffix("(errSecDecode -26275)\n"))

        let json = try sandbox.run(["verify", "--json"])
        #expect(json.status == 5)
        let report = try #require(try json.json() as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        #expect((report["problems"] as? [String])?.isEmpty == false)
    }

    @Test func verify_soundKeychain_exits0() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let plain = try sandbox.run(["verify"])
        #expect(plain.status == 0)
        #expect(plain.out.hasPrefix("ok: "))
        let json = try sandbox.run(["verify", "--json"])
        #expect(json.status == 0)
        let report = try #require(try json.json() as? [String: Any])
        #expect(report["ok"] as? Bool == true)
        #expect(report["checkedItems"] as? Int == 1)
    }

    @Test func rolledBackKeychain_exits5_untilVerifyAcceptRollback() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let url = URL(fileURLWithPath: sandbox.keychainPath)
        let older = try Data(contentsOf: url)
        try sandbox.add(account: "b", data: [2])
        try older.write(to: url)

        let find = try sandbox.run(["find", "--account", "a"])
        #expect(find.status == 5)
        #expect(find.stderr.contains("--accept-rollback"))
        #expect(try sandbox.run(["verify"]).status == 5)
        #expect(try sandbox.run(["verify", "--accept-rollback"]).status == 0)
        #expect(try sandbox.run(["find", "--account", "a"]).stdout == [1])
        #expect(try sandbox.run(["find", "--account", "b"]).status == 1)
    }

    @Test func incompleteTail_isCutOffWithANotice() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: sandbox.keychainPath))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1, 2, 3, 4, 5]))
        try handle.close()
        let result = try sandbox.run(["find", "--account", "a"])
        #expect(result.status == 0)
        #expect(result.stdout == [1])
        #expect(result.stderr == "latchkey: recovered: removed 5 bytes of an incomplete write\n")
    }

    @Test func compact_keepsLiveItems_andReportsSizesOnStderr() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        for i in 0..<4 { try sandbox.add(account: "acct\(i)", data: [UInt8(i)]) }
        #expect(try sandbox.run(["delete", "--account", "acct1"]).status == 0)
        #expect(try sandbox.run(["update", "--account", "acct2", "--set-label", "L"]).status == 0)
        let compact = try sandbox.run(["compact"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(compact.status == 0)
        #expect(compact.stdout.isEmpty)
        #expect(compact.stderr.contains("compacted") && compact.stderr.contains(" -> "))

        for i in [0, 2, 3] { #expect(try sandbox.run(["find", "--account", "acct\(i)"]).stdout == [UInt8(i)]) }
        #expect(try sandbox.run(["find", "--account", "acct1"]).status == 1)
        #expect(try sandbox.run(["verify"]).status == 0)
    }

    @Test func info_jsonParses_andHumanTableNamesTheFacts() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        try sandbox.add(account: "b", data: [2], ["--accessible", "dku"])
        let result = try sandbox.run(["info", "--json"])
        #expect(result.status == 0)
        let info = try #require(try result.json() as? [String: Any])
        #expect(info["formatVersion"] as? String == "1.0")
        #expect(info["liveItems"] as? Int == 2)
        #expect(info["hasPasscode"] as? Bool == true)
        #expect((info["itemsByClass"] as? [String: Int])?["genp"] == 2)
        #expect((info["itemsByProtection"] as? [String: Int]) == ["ak": 1, "dku": 1])

        let table = try sandbox.run(["info"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(table.status == 0)
        for row in ["format version", "live items", "device UUID", "unlocked"] { #expect(table.out.contains(row)) }
    }
}
