#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// `backup-verify`, `backup-list`, `restore --replace` and `restore --json`'s per-item outcomes,
/// and `backup` through an unlocked agent (issue 18 §2 and §3).
@Suite struct BackupToolsTests {
    static let password = "backup password"

    /// A keychain with a migratory and a ThisDeviceOnly item, and its backup.
    static func sandbox() throws -> (CLISandbox, String) {
        let sb = try CLISandbox()
        sb.environment["LATCHKEY_BACKUP_PASSWORD"] = password
        sb.environment["LATCHKEY_AGENT_SOCK"] = "none"
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("alice-secret".utf8))
        try sb.add(
            account: "bob", service: "bank", data: Array("bob-secret".utf8),
            ["--accessible", "aku", "--label", "Bob's bank"])
        let backup = sb.directory.appendingPathComponent("k.backup").path
        let made = try sb.run(["backup", "--output", backup, "--kdf-log-n", "10"])
        guard made.status == 0 else { throw CLITestError("backup failed: \(made.stderr)") }
        return (sb, backup)
    }

    /// Another machine: no device secret there yet, and no keychain.
    static let elsewhere: [String: String?] = [
        "LATCHKEY_DEVICE": "/nonexistent/device.secret", "LATCHKEY_KEYCHAIN": "/nonexistent/k"
    ]

    // MARK: backup-verify

    @Test func verify_onTheSourceDevice_checksEveryItem() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(["backup-verify", backup, "--json"], env: ["LATCHKEY_KEYCHAIN": "/nonexistent/k"])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try r.json() as? [String: Any])
        #expect(json["intact"] as? Bool == true)
        #expect(json["itemsChecked"] as? Int == 2)
        #expect(json["itemsNotDecryptable"] as? Int == 0)
        let text = try sb.run(["backup-verify", backup])
        #expect(
            text.status == 0 && text.out.contains("intact") && text.out.contains("2 item(s) decrypted and checked"),
            "\(text.out)")
    }

    @Test func verify_elsewhere_needsNoKeychainNorDevice_andSaysWhatItCannotCheck() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(["backup-verify", backup, "--json"], env: BackupToolsTests.elsewhere)
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try r.json() as? [String: Any])
        #expect(json["itemsChecked"] as? Int == 1)
        #expect(json["itemsNotDecryptable"] as? Int == 1)
        #expect(json["itemsNotDecryptableByProtection"] as? [String: Int] == ["aku": 1])
        let text = try sb.run(["backup-verify", backup], env: BackupToolsTests.elsewhere)
        #expect(text.status == 0)
        #expect(
            text.out.contains("1 ThisDeviceOnly item(s) (aku 1)")
                && text.out.contains("can be decrypted only on device"), "\(text.out)")
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent/k"))
    }

    /// "Made on this device" only where the keys prove it (spec/BACKUP.md §9.2): a password
    /// backup's keybag may be genuine while its migratory records and manifest are anyone's
    /// who knows the password, so on the source device it claims only its ThisDeviceOnly items.
    @Test func verify_claimsOnlyWhatTheKeysProve() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let password = try sb.run(["backup-verify", backup])
        #expect(password.status == 0, "\(password.stderr)")
        #expect(
            password.out.contains(
                "its ThisDeviceOnly items made on this device (the password alone vouches for its other items)")
                && !password.out.contains(", made on this device"), "\(password.out)")
        let deviceOnly = sb.directory.appendingPathComponent("device-only.backup").path
        let made = try sb.run(
            ["backup", "--output", deviceOnly, "--no-password"], env: ["LATCHKEY_BACKUP_PASSWORD": nil])
        #expect(made.status == 0, "\(made.stderr)")
        let verified = try sb.run(["backup-verify", deviceOnly], env: ["LATCHKEY_BACKUP_PASSWORD": nil])
        #expect(verified.status == 0 && verified.out.contains("device-only, made on this device"), "\(verified.out)")
    }

    @Test func verify_wrongPassword_exits4_damage_exits5() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let wrong = try sb.run(["backup-verify", backup], env: ["LATCHKEY_BACKUP_PASSWORD": "not it"])
        #expect(wrong.status == 4 && wrong.stderr.contains("errSecAuthFailed -25293"), "\(wrong.stderr)")
        #expect(
            wrong.stderr.contains("wrong backup password") && !wrong.stderr.contains("restored"),
            "says what failed, not what a restore would not have done: \(wrong.stderr)")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: backup)))
        // A byte inside the first items entry's data (after the keybag entry: 512 + 512 + 512).
        bytes[1536 + 100] ^= 0x01
        let damaged = try sb.writeFile("damaged.backup", bytes)
        let r = try sb.run(["backup-verify", damaged])
        #expect(r.status == 5 && r.stderr.contains("errSecDecode -26275"), "\(r.stderr)")
    }

    @Test func verify_readsStdin() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(
            ["backup-verify", "-", "--json"], stdin: [UInt8](try Data(contentsOf: URL(fileURLWithPath: backup))))
        #expect(r.status == 0, "\(r.stderr)")
    }

    // MARK: backup-list

    @Test func list_showsTheItems_neverASecret() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(["backup-list", backup])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.out.contains("CLASS") && r.out.contains("alice") && r.out.contains("Bob's bank") && r.out.contains("aku"),
            "\(r.out)")
        let lines = try sb.run(["backup-list", backup, "--jsonl"])
        #expect(lines.status == 0, "\(lines.stderr)")
        let objects = try lines.out.split(separator: "\n").map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.count == 2)
        let bob = try #require(objects.first { $0["acct"] as? String == "bob" })
        #expect(
            bob["svce"] as? String == "bank" && bob["labl"] as? String == "Bob's bank"
                && bob["pdmn"] as? String == "aku")
        #expect(
            bob["class"] as? String == "genp" && bob["readable"] as? Bool == true
                && bob["agrp"] as? String == "latchkey.cli")
        #expect((bob["mdat"] as? String)?.hasSuffix("Z") == true)
        for output in [r.out, lines.out, try sb.run(["backup-list", backup, "--json"]).out] {
            #expect(!output.contains("secret"), "no secret in \(output)")
        }
        let array = try #require(try sb.run(["backup-list", backup, "--json"]).json() as? [[String: Any]])
        #expect(array.count == 2)
    }

    @Test func list_elsewhere_showsThisDeviceOnlyItemsAsUnreadable() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(["backup-list", backup, "--jsonl"], env: BackupToolsTests.elsewhere)
        #expect(r.status == 0, "\(r.stderr)")
        let objects = try r.out.split(separator: "\n").map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let unreadable = try #require(objects.first { $0["readable"] as? Bool == false })
        #expect(unreadable["pdmn"] as? String == "aku")
        #expect(unreadable["reason"] as? String == "thisDeviceOnlyFromAnotherDevice")
        #expect(unreadable["acct"] == nil && unreadable["class"] == nil)
        #expect(objects.contains { $0["acct"] as? String == "alice" })
        let table = try sb.run(["backup-list", backup], env: BackupToolsTests.elsewhere)
        #expect(table.out.contains("unreadable"), "\(table.out)")
        #expect(table.stderr.contains("1 ThisDeviceOnly item(s) are shown as unreadable"), "\(table.stderr)")
    }

    @Test func list_wrongPassword_exits4() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        let r = try sb.run(["backup-list", backup], env: ["LATCHKEY_BACKUP_PASSWORD": "not it"])
        #expect(r.status == 4 && r.out.isEmpty, "\(r.stderr)")
    }

    // MARK: restore --replace, --json

    @Test func restore_replace_andPerItemOutcomes() throws {
        let (sb, backup) = try BackupToolsTests.sandbox()
        // After the backup: alice edited here (newer than the backup's), carol new here.
        sleep(1)
        #expect(try sb.run(["update", "--account", "alice", "--set-data"], stdin: Array("edited".utf8)).status == 0)
        let merged = try sb.run(["restore", backup, "--merge", "--json", "--dry-run"])
        #expect(merged.status == 0, "\(merged.stderr)")
        let plan = try #require(try merged.json() as? [String: Any])
        #expect(
            plan["kept"] as? Int == 2 && plan["replaced"] as? Int == 0,
            "--merge keeps the newer alice and the same bob: \(plan)")

        let r = try sb.run(["restore", backup, "--replace", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let report = try #require(try r.json() as? [String: Any])
        #expect(report["conflicts"] as? String == "backupWins")
        let counts = ["restored", "replaced", "kept", "skipped"].map { report[$0] as? Int ?? -1 }
        #expect(counts == [0, 2, 0, 0], "\(report)")
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.count == 2 && items.allSatisfy { $0["outcome"] as? String == "replaced" })
        #expect(
            try sb.run(["find", "--account", "alice"]).stdout == Array("alice-secret".utf8), "the backup's alice won")

        let both = try sb.run(["restore", backup, "--replace", "--merge"])
        #expect(both.status == 2, "\(both.stderr)")
    }

    /// Another device's backup merged here: one item of each outcome.
    @Test func restore_json_everyOutcome_addsUpToTheBackup() throws {
        let (sb, _) = try BackupToolsTests.sandbox()
        let theirs: [String: String?] = [
            "LATCHKEY_KEYCHAIN": sb.directory.appendingPathComponent("theirs.keychain").path,
            "LATCHKEY_DEVICE": sb.directory.appendingPathComponent("theirs.device").path
        ]
        #expect(try sb.run(["init", "--kdf-log-n", "10"], env: theirs).status == 0)
        sleep(1)  // their items are newer than this keychain's alice
        for (account, accessible) in [("alice", "ak"), ("dave", "ak"), ("erin", "aku"), ("frank", "ck")] {
            try sb.add(account: account, data: Array("theirs".utf8), ["--accessible", accessible], env: theirs)
        }
        let backup = sb.directory.appendingPathComponent("theirs.backup").path
        #expect(try sb.run(["backup", "--output", backup, "--kdf-log-n", "10"], env: theirs).status == 0)
        sleep(1)
        try sb.add(account: "frank", data: Array("mine".utf8), ["--accessible", "ck"])  // newer here
        let r = try sb.run(["restore", backup, "--merge", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let report = try #require(try r.json() as? [String: Any])
        let items = try #require(report["items"] as? [[String: Any]])
        let outcome = Dictionary(
            uniqueKeysWithValues: items.map {
                ($0["uuid"] as! String, ($0["outcome"] as! String, $0["reason"] as? String))
            })
        #expect(items.count == 4)
        let total = ["restored", "replaced", "kept", "skipped"].reduce(0) { $0 + (report[$1] as? Int ?? 0) }
        #expect(total == (report["backup"] as? [String: Any])?["items"] as? Int)
        #expect(
            report["restored"] as? Int == 1 && report["replaced"] as? Int == 1 && report["kept"] as? Int == 1
                && report["skipped"] as? Int == 1, "\(report)")
        #expect(Set(outcome.values.map(\.0)) == ["restored", "replaced", "kept", "skipped"])
        #expect(outcome.values.contains { $0 == ("skipped", "thisDeviceOnlyFromAnotherDevice") })
        #expect(outcome.values.contains { $0 == ("kept", "destinationNewer") })
        #expect(try sb.run(["find", "--account", "alice"]).stdout == Array("theirs".utf8))
        #expect(try sb.run(["find", "--account", "frank"]).stdout == Array("mine".utf8))
    }
}
