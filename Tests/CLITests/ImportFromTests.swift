import Foundation
import Testing

/// `import --from`: other managers' exports made by the real tools (pass with a throw-away GPG
/// key, keepassxc-cli; Makefile APT_DEPS installs both), Bitwarden's JSON export written from
/// its documented format, and a CSV with a column mapping. Every source feeds the one
/// transaction of `import`: all or none, duplicates refused or skipped, a report per entry.
@Suite struct ImportFromTests {
    // MARK: - helpers

    /// Runs a shell script in the sandbox; fails the test unless it exits 0.
    @discardableResult
    static func shell(_ sb: CLISandbox, _ script: String, stdin: String = "", env: [String: String?] = [:]) throws
        -> CLIResult
    {
        let r = try sb.runShell(script, stdin: Array(stdin.utf8), env: env)
        guard r.status == 0 else { throw CLITestError("'\(script)' failed (\(r.status)): \(r.stderr)") }
        return r
    }

    /// A password store made by pass itself, encrypted to a key without a passphrase in a
    /// GnuPG home of its own; its gpg-agent is stopped when the store goes.
    final class PassStore {
        let sandbox: CLISandbox
        let env: [String: String?]
        var directory: String { sandbox.directory.appendingPathComponent("store").path }

        init(_ sb: CLISandbox) throws {
            sandbox = sb
            let home = sb.directory.appendingPathComponent("gnupg").path
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            env = ["GNUPGHOME": home, "PASSWORD_STORE_DIR": sb.directory.appendingPathComponent("store").path]
            let parameters = """
                %no-protection
                Key-Type: EDDSA
                Key-Curve: ed25519
                Subkey-Type: ECDH
                Subkey-Curve: cv25519
                Name-Real: Latchkey Test
                Name-Email: test@latchkey.invalid
                Expire-Date: 0
                %commit

                """
            try ImportFromTests.shell(sb, "gpg --batch --quiet --generate-key", stdin: parameters, env: env)
            try ImportFromTests.shell(sb, "pass init test@latchkey.invalid >/dev/null", env: env)
        }

        func insert(_ name: String, _ content: String) throws {
            try ImportFromTests.shell(sb: sandbox, "pass insert -m \"$1\" >/dev/null", name, stdin: content, env: env)
        }

        deinit { _ = try? sandbox.runShell("gpgconf --kill all", env: env) }
    }

    /// `sh -c script $0 arg`: for an argument that must not be quoted into the script.
    @discardableResult
    static func shell(sb: CLISandbox, _ script: String, _ arg: String, stdin: String, env: [String: String?]) throws
        -> CLIResult
    {
        let r = try sb.run(
            executable: URL(fileURLWithPath: "/bin/sh"), ["-c", script, "sh", arg], stdin: Array(stdin.utf8), env: env)
        guard r.status == 0 else { throw CLITestError("'\(script)' failed (\(r.status)): \(r.stderr)") }
        return r
    }

    static func count(_ sb: CLISandbox) throws -> Int {
        (try sb.run(["dump", "--json"]).json() as? [Any])?.count ?? -1
    }

    static func attributes(_ sb: CLISandbox, _ query: [String]) throws -> [String: Any] {
        let r = try sb.run(["find"] + query + ["--return", "attributes"])
        guard r.status == 0, let object = try r.json() as? [String: Any] else {
            throw CLITestError("find \(query) failed (\(r.status)): \(r.stderr)")
        }
        return object
    }

    // MARK: - pass

    @Test func pass_realStore_everyEntryDecryptedByPassShow_reportedAndImported() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let store = try PassStore(sb)
        try store.insert(
            "web/example.com",
            "pw-1 with, comma\nuser: alice\nurl: https://example.com/login\nrecovery: in the safe\notpauth://totp/x?secret=JBSWY3DPEHPK3PXP\n"
        )
        try store.insert("email/bob", "pw-2\n")
        try store.insert("dir with space/entry", "pw-3\nlogin: carol\n")

        let dry = try sb.run(["import", "--from", "pass", "--dry-run"], env: store.env)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.out == """
                would import dir with space/entry as genp, account carol
                would import email/bob as genp
                would import web/example.com as inet https://example.com/login, account alice; not imported: TOTP (an otpauth:// line)
                would import 3 item(s), skip 0 of 3 entries; nothing imported (--dry-run)

                """)
        #expect(try ImportFromTests.count(sb) == 0)

        // The store given as DIR, the environment's left aside.
        let r = try sb.run(
            ["import", "--from", "pass", store.directory],
            env: store.env.merging(["PASSWORD_STORE_DIR": "/nonexistent"]) { $1 })
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.out.hasPrefix("imported dir with space/entry as genp, account carol\n"))
        #expect(r.out.hasSuffix("imported 3 item(s) into \(sb.keychainPath), skipped 0 of 3 entries\n"))
        for secret in ["pw-1", "pw-2", "pw-3", "JBSWY3DPEHPK3PXP"] {
            #expect(!r.out.contains(secret) && !r.stderr.contains(secret))
        }
        #expect(try sb.run(["find", "--service", "email/bob"]).stdout == Array("pw-2".utf8))
        #expect(
            try sb.run(["find", "--service", "dir with space/entry", "--account", "carol"]).stdout == Array("pw-3".utf8)
        )
        let web = try ImportFromTests.attributes(sb, ["--class", "inet", "--server", "example.com"])
        #expect(
            web["acct"] as? String == "alice" && web["ptcl"] as? String == "htps" && web["path"] as? String == "login")
        #expect(web["labl"] as? String == "web/example.com")
        #expect(web["icmt"] as? String == "recovery: in the safe", "the TOTP seed never lands in an attribute")
        #expect(
            try sb.run(["find", "--class", "inet", "--server", "example.com"]).stdout == Array("pw-1 with, comma".utf8))
        // dump shows git's form of a path (no leading slash) as a URL.
        #expect(try sb.run(["dump"]).out.contains("htps://example.com/login "))
        // What git's credential helper asks for finds it.
        let git = try sb.run(["credential", "get"], stdin: Array("protocol=https\nhost=example.com\n\n".utf8))
        #expect(git.out == "username=alice\npassword=pw-1 with, comma\n")
    }

    @Test func pass_anEntryThatCannotBeDecrypted_importsNothing_andNamesIt() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let store = try PassStore(sb)
        try store.insert("a/good", "pw\n")
        try sb.writeFile("store/a/zz-broken.gpg", Array("not an OpenPGP message".utf8))
        let r = try sb.run(["import", "--from", "pass"], env: store.env)
        #expect(r.status == 7, "\(r.stderr)")
        #expect(r.stderr.contains("entry 2 (a/zz-broken): 'pass show' exited with status"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was imported"))
        #expect(r.out.isEmpty)
        #expect(try ImportFromTests.count(sb) == 0)
    }

    // MARK: - KeePassXC

    /// A KeePassXC database made by keepassxc-cli: an entry with a custom field and TOTP
    /// (read from KeePass XML by `keepassxc-cli import`), an attachment and two older versions
    /// (the attachment and a new password each make one), an entry in the recycle bin, and one whose password and notes hold quotes,
    /// commas and a line break; then both of its exports.
    static func keePassXCExports(_ sb: CLISandbox) throws -> (csv: String, xml: String) {
        let seed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Root><Group><Name>Passwords</Name>
            <Entry>
            <String><Key>Title</Key><Value>Bank</Value></String>
            <String><Key>UserName</Key><Value>carol</Value></String>
            <String><Key>Password</Key><Value>old-bank-pw</Value></String>
            <String><Key>URL</Key><Value>https://bank.example/login</Value></String>
            <String><Key>PIN</Key><Value>4321</Value></String>
            <String><Key>otp</Key><Value>otpauth://totp/Bank:carol?secret=JBSWY3DPEHPK3PXP&amp;issuer=Bank</Value></String>
            </Entry>
            </Group></Root></KeePassFile>

            """
        _ = try sb.writeFile("seed.xml", Array(seed.utf8))
        _ = try sb.writeFile("id.txt", Array("attachment".utf8))
        let cli = "keepassxc-cli"
        try shell(sb, "printf 'dbpw\\ndbpw\\n' | \(cli) import -q -p -t 100 seed.xml k.kdbx")
        try shell(sb, "printf 'dbpw\\n' | \(cli) mkdir -q k.kdbx Web")
        try shell(
            sb,
            "printf 'dbpw\\npw \"quoted\", with comma\\n' | \(cli) add -q -u dave --url https://example.com:8443/x"
                + " --notes \"$(printf 'line 1, \"q\"\\nline 2')\" -p k.kdbx Web/Example")
        try shell(sb, "printf 'dbpw\\nold-pw\\n' | \(cli) add -q -u erin --url https://old.example -p k.kdbx Old")
        try shell(sb, "printf 'dbpw\\n' | \(cli) rm -q k.kdbx Old")
        try shell(sb, "printf 'dbpw\\n' | \(cli) attachment-import -q k.kdbx Bank id.txt id.txt")
        try shell(sb, "printf 'dbpw\\nnew-bank-pw\\n' | \(cli) edit -q -p k.kdbx Bank")
        try shell(sb, "printf 'dbpw\\n' | \(cli) export -q -f csv k.kdbx > k.csv")
        try shell(sb, "printf 'dbpw\\n' | \(cli) export -q -f xml k.kdbx > k.xml")
        return (
            sb.directory.appendingPathComponent("k.csv").path, sb.directory.appendingPathComponent("k.xml").path
        )
    }

    @Test func keepassxc_realExports_XMLReportsWhatCSVCannot_CSVWithSkipExisting() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let (csv, xml) = try ImportFromTests.keePassXCExports(sb)

        let r = try sb.run(["import", "--from", "keepassxc", xml])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.out == """
                imported Bank as inet https://bank.example/login, account carol; not imported: TOTP, field "PIN", attachment "id.txt", 2 older version(s) (history)
                imported Web/Example as inet https://example.com:8443/x, account dave
                skipped Recycle Bin/Old: in the recycle bin
                imported 2 item(s) into \(sb.keychainPath), skipped 1 of 3 entries

                """)
        for secret in ["new-bank-pw", "old-bank-pw", "4321", "JBSWY3DP", "quoted", "old-pw"] {
            #expect(!r.out.contains(secret) && !r.stderr.contains(secret))
        }
        #expect(try sb.run(["find", "--class", "inet", "--server", "bank.example"]).stdout == Array("new-bank-pw".utf8))
        #expect(
            try sb.run(["find", "--class", "inet", "--server", "example.com", "--port", "8443"]).stdout
                == Array("pw \"quoted\", with comma".utf8))
        let example = try ImportFromTests.attributes(sb, ["--class", "inet", "--server", "example.com"])
        #expect(example["icmt"] as? String == "line 1, \"q\"\nline 2")
        #expect(example["labl"] as? String == "Web/Example" && example["path"] as? String == "x")

        // The CSV export of the same database: the same items, so every one is already there.
        let again = try sb.run(["import", "--from", "keepassxc", csv])
        #expect(again.status == 3, "\(again.stderr)")
        #expect(
            again.stderr.hasPrefix(
                "latchkey: entry 1 (Bank): an item with the same unique key is already in the keychain (--skip-existing skips it); nothing was imported"
            ), "\(again.stderr)")
        let skipping = try sb.run(["import", "--from", "keepassxc", "--skip-existing", csv])
        #expect(skipping.status == 0, "\(skipping.stderr)")
        #expect(
            skipping.out == """
                skipped Bank: already in the keychain; not imported: TOTP
                skipped Web/Example: already in the keychain
                skipped Recycle Bin/Old: in the recycle bin
                imported 0 item(s) into \(sb.keychainPath), skipped 3 of 3 entries

                """)
        #expect(try ImportFromTests.count(sb) == 2)

        // Into an empty keychain the CSV gives the same secrets and notes (RFC 4180 quoting).
        let other = try CLISandbox()
        try other.initKeychain()
        let fromCSV = try other.run(["import", "--from", "keepassxc", csv, "--json"])
        #expect(fromCSV.status == 0, "\(fromCSV.stderr)")
        let json = try #require(try fromCSV.json() as? [String: Any])
        #expect(json["imported"] as? Int == 2 && json["skipped"] as? Int == 1)
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["status"] as? String } == ["imported", "imported", "skipped"])
        #expect(entries[0]["notImported"] as? [String] == ["TOTP"])
        #expect(
            try other.run(["find", "--class", "inet", "--server", "example.com", "--port", "8443"]).stdout
                == Array("pw \"quoted\", with comma".utf8))
        let viaCSV = try ImportFromTests.attributes(other, ["--class", "inet", "--server", "example.com"])
        #expect(viaCSV["icmt"] as? String == "line 1, \"q\"\nline 2")
    }

    @Test func keepassxc_malformedExports_importNothing_andNameTheLine() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let header = "\"Group\",\"Title\",\"Username\",\"Password\",\"URL\",\"Notes\"\n"
        let csv = try sb.writeFile(
            "bad.csv",
            Array((header + "\"Root\",\"A\",\"u\",\"p\",\"\",\"\"\n\"Root\",\"B\",\"u\",\"p\",\"\",\"open\n").utf8))
        let r = try sb.run(["import", "--from", "keepassxc", csv])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("latchkey: line 3 of the KeePassXC export \(csv): a quoted field"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was imported"))
        let short = try sb.writeFile("short.csv", Array((header + "\"Root\",\"A\",\"u\"\n").utf8))
        let s = try sb.run(["import", "--from", "keepassxc", short])
        #expect(
            s.status == 2 && s.stderr.contains("entry 1 (line 2)") && s.stderr.contains("has 3 fields"), "\(s.stderr)")
        let xml = try sb.writeFile(
            "bad.xml",
            Array(
                """
                <KeePassFile><Root><Group><Name>R</Name>
                <Entry><String><Key>Title</Key><Value>A</Value></String>
                <String><Key>Password</Key><Value>p</Value></String></Entry>
                <Entry><String><Key>Password</Key><Value>p</Value></Entry>
                </Group></Root></KeePassFile>
                """.utf8))
        let x = try sb.run(["import", "--from", "keepassxc", xml])
        #expect(x.status == 2)
        #expect(
            x.stderr.hasPrefix("latchkey: line 4 of the KeePassXC export \(xml): the end tag </Entry>"), "\(x.stderr)")
        let inner = try sb.writeFile(
            "inner.xml",
            Array(
                """
                <KeePassFile><Root><Group><Name>R</Name><Entry>
                <String><Key>Password</Key><Value Protected="True">aGk=</Value></String></Entry>
                </Group></Root></KeePassFile>
                """.utf8))
        let i = try sb.run(["import", "--from", "keepassxc", inner])
        #expect(i.status == 2 && i.stderr.contains("this is not an export"), "\(i.stderr)")
        #expect(try ImportFromTests.count(sb) == 0)
    }

    // MARK: - Bitwarden

    /// An unencrypted export as Bitwarden documents it (help: "Export vault data"; "Condition a
    /// Bitwarden .json"): folders, a login with two URIs, TOTP, a custom field and password
    /// history, a secure note, a card, a login without URI, one in an organization collection.
    static let bitwarden = """
        {
          "encrypted": false,
          "folders": [{ "id": "f0a1b2c3-0000-4000-8000-000000000001", "name": "Work" }],
          "items": [
            {
              "id": "a0000000-0000-4000-8000-000000000001", "organizationId": null,
              "folderId": "f0a1b2c3-0000-4000-8000-000000000001", "type": 1, "reprompt": 0,
              "name": "GitLab", "notes": "work account", "favorite": false,
              "fields": [{ "name": "Recovery code", "value": "rc-123", "type": 1, "linkedId": null }],
              "login": {
                "uris": [
                  { "match": null, "uri": "https://gitlab.example.com/users/sign_in" },
                  { "match": null, "uri": "https://gitlab.example.com:8443/" }
                ],
                "username": "alice", "password": "gl-pw \\"1\\"",
                "totp": "otpauth://totp/GitLab:alice?secret=JBSWY3DPEHPK3PXP"
              },
              "passwordHistory": [{ "lastUsedDate": "2026-01-02T03:04:05.000Z", "password": "gl-old" }],
              "collectionIds": null,
              "revisionDate": "2026-02-03T04:05:06.000Z", "creationDate": "2026-01-01T00:00:00.000Z",
              "deletedDate": null
            },
            {
              "id": "a0000000-0000-4000-8000-000000000002", "organizationId": null, "folderId": null,
              "type": 2, "reprompt": 0, "name": "Wi-Fi", "notes": "long passphrase", "favorite": false,
              "secureNote": { "type": 0 }, "collectionIds": null,
              "revisionDate": "2026-02-03T04:05:06.000Z", "creationDate": "2026-01-01T00:00:00.000Z",
              "deletedDate": null
            },
            {
              "id": "a0000000-0000-4000-8000-000000000003", "organizationId": null, "folderId": null,
              "type": 3, "reprompt": 0, "name": "Visa", "notes": null, "favorite": false,
              "card": { "cardholderName": "A B", "brand": "Visa", "number": "4111111111111111",
                        "expMonth": "1", "expYear": "2030", "code": "123" },
              "collectionIds": null,
              "revisionDate": "2026-02-03T04:05:06.000Z", "creationDate": "2026-01-01T00:00:00.000Z",
              "deletedDate": null
            },
            {
              "id": "a0000000-0000-4000-8000-000000000004", "organizationId": null, "folderId": null,
              "type": 1, "reprompt": 0, "name": "Router", "notes": null, "favorite": false,
              "login": { "uris": [], "username": "admin", "password": "r0uter", "totp": null },
              "collectionIds": null,
              "revisionDate": "2026-02-03T04:05:06.000Z", "creationDate": "2026-01-01T00:00:00.000Z",
              "deletedDate": null
            }
          ]
        }

        """

    @Test func bitwarden_documentedExport_loginsAndNotes_othersSkippedWithTheReason() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let file = try sb.writeFile("bitwarden.json", Array(ImportFromTests.bitwarden.utf8))
        let r = try sb.run(["import", "--from", "bitwarden", file])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.out == """
                imported Work/GitLab as inet https://gitlab.example.com/users/sign_in, account alice; not imported: field "Recovery code", 1 older password(s) (history), 1 more URI(s), TOTP
                imported Wi-Fi as genp
                skipped Visa: a card (latchkey imports logins and secure notes)
                imported Router as genp, account admin
                imported 3 item(s) into \(sb.keychainPath), skipped 1 of 4 entries

                """)
        for secret in ["gl-pw", "rc-123", "gl-old", "JBSWY3DP", "4111", "r0uter", "long passphrase"] {
            #expect(!r.out.contains(secret) && !r.stderr.contains(secret))
        }
        #expect(
            try sb.run(["find", "--class", "inet", "--server", "gitlab.example.com"]).stdout
                == Array("gl-pw \"1\"".utf8))
        #expect(try sb.run(["find", "--service", "Wi-Fi"]).stdout == Array("long passphrase".utf8))
        #expect(try sb.run(["find", "--service", "Router", "--account", "admin"]).stdout == Array("r0uter".utf8))
        let gitlab = try ImportFromTests.attributes(sb, ["--class", "inet", "--server", "gitlab.example.com"])
        #expect(gitlab["labl"] as? String == "Work/GitLab" && gitlab["icmt"] as? String == "work account")

        // From stdin as well; an encrypted export is refused with what to do.
        let again = try sb.run(
            ["import", "--from", "bitwarden", "--dry-run", "--skip-existing", "-"],
            stdin: Array(ImportFromTests.bitwarden.utf8))
        #expect(
            again.status == 0
                && again.out.hasSuffix("would import 0 item(s), skip 4 of 4 entries; nothing imported (--dry-run)\n"),
            "\(again.out)\(again.stderr)")
        let encrypted = try sb.writeFile(
            "enc.json", Array(#"{"encrypted": true, "encKeyValidation_DO_NOT_EDIT": "2.x|y", "data": "2.a|b"}"#.utf8))
        let e = try sb.run(["import", "--from", "bitwarden", encrypted])
        #expect(e.status == 2 && e.stderr.contains("is encrypted; export the vault again as unencrypted JSON"))
        let broken = try sb.writeFile("broken.json", Array("{\n  \"items\": [\n    {\"type\": 1,,}\n  ]\n}\n".utf8))
        let b = try sb.run(["import", "--from", "bitwarden", broken])
        #expect(
            b.status == 2 && b.stderr.hasPrefix("latchkey: line 3 of the Bitwarden export \(broken): not valid JSON"),
            "\(b.stderr)")
        #expect(try ImportFromTests.count(sb) == 3)
    }

    // MARK: - CSV with a mapping

    @Test func csv_mapChoosesTheColumns_unmappedOnesReported_badMapsRefused() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let file = try sb.writeFile(
            "logins.csv",
            Array(
                "name,url,username,password,extra\r\nGitHub,https://github.com,al,\"p,w\",x\r\nMail,,bo,pw2,\r\n".utf8))
        let asService = try sb.run([
            "import", "--from", "csv", "--map", "service=url,account=username,secret=password,label=name", file,
            "--dry-run"
        ])
        #expect(asService.status == 0, "\(asService.stderr)")
        #expect(
            asService.out == """
                would import GitHub as genp, service https://github.com, account al; not imported: column "extra"
                would import Mail as genp, account bo
                would import 2 item(s), skip 0 of 2 entries; nothing imported (--dry-run)

                """)
        let r = try sb.run([
            "import", "--from", "csv", "--map", "url=URL, account=Username, secret=Password", "--map",
            "label=Name,ignore=extra", file
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.out.hasPrefix(
                "imported GitHub as inet https://github.com, account al\nimported Mail as genp, account bo\n"))
        #expect(try sb.run(["find", "--class", "inet", "--server", "github.com"]).stdout == Array("p,w".utf8))
        #expect(try sb.run(["find", "--service", "Mail"]).stdout == Array("pw2".utf8))

        for (map, message) in [
            ("account=username", "--map must name the column of the secret"),
            ("secret=password,colour=name", "'colour' is not a target"),
            ("secret=nope", "has no column named 'nope'"),
            ("secret=password,secret=name", "--map names secret twice")
        ] {
            let bad = try sb.run(["import", "--from", "csv", "--map", map, file])
            #expect(bad.status == 2 && bad.stderr.contains(message), "\(map): \(bad.stderr)")
        }
        let noMap = try sb.run(["import", "--from", "csv", file])
        #expect(noMap.status == 2 && noMap.stderr.contains("--from csv needs --map"))
        let mapWithoutCSV = try sb.run(["import", "--from", "bitwarden", "--map", "secret=a", file])
        #expect(mapWithoutCSV.status == 2 && mapWithoutCSV.stderr.contains("--map goes with --from csv"))
        #expect(try ImportFromTests.count(sb) == 2)
    }

    /// Two entries of one export with the same unique key: refused naming both (nothing
    /// imported), or the second skipped with --skip-existing.
    @Test func duplicatesWithinTheExport_refusedOrSkipped() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let file = try sb.writeFile(
            "dup.csv", Array("site,user,pw\nhttps://a.example/x,al,1\nother,al,2\nhttps://a.example/x,al,3\n".utf8))
        let refused = try sb.run(["import", "--from", "csv", "--map", "url=site,account=user,secret=pw", file])
        #expect(refused.status == 3)
        #expect(
            refused.stderr.hasPrefix(
                "latchkey: entry 3 (al) has the same unique key as entry 1 (al) (--skip-existing keeps the first); nothing was imported"
            ), "\(refused.stderr)")
        #expect(try ImportFromTests.count(sb) == 0)
        let skipped = try sb.run([
            "import", "--from", "csv", "--map", "url=site,account=user,secret=pw,label=site", "--skip-existing", file
        ])
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(
            skipped.out.contains("skipped https://a.example/x: the same unique key as entry 1 (https://a.example/x)\n"))
        #expect(try sb.run(["find", "--class", "inet", "--server", "a.example"]).stdout == Array("1".utf8))
    }

    /// Through the agent the entries go the agent's way (batches), and --skip-existing asks
    /// the agent what is there.
    @Test func throughTheAgent_importAndSkipExisting() throws {
        let sb = try AgentCLITests.sandbox()
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let file = try sb.writeFile("bitwarden.json", Array(ImportFromTests.bitwarden.utf8))
        let first = try sb.run(["import", "--from", "bitwarden", file], env: AgentCLITests.noPasscode)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            try sb.run(["find", "--service", "Wi-Fi"], env: AgentCLITests.noPasscode).stdout
                == Array("long passphrase".utf8))
        let again = try sb.run(["import", "--from", "bitwarden", file], env: AgentCLITests.noPasscode)
        #expect(again.status == 3, "\(again.stderr)")
        let skipping = try sb.run(
            ["import", "--from", "bitwarden", "--skip-existing", file], env: AgentCLITests.noPasscode)
        #expect(skipping.status == 0, "\(skipping.stderr)")
        #expect(
            skipping.out.hasSuffix("imported 0 item(s) into \(sb.keychainPath), skipped 4 of 4 entries\n"),
            "\(skipping.out)")
    }
}
