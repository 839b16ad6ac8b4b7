import Foundation
import Testing

/// `latchkey otp` (issue 31, part 5): an otpauth:// URI stored as the secret of a generic
/// password with service `otp:SERVICE`, and the codes it gives.
@Suite struct OTPCommandTests {
    static let sha1 = OneTimeCodeTests.sha1Secret

    static func store(_ sb: CLISandbox, _ name: String, _ uri: String, _ extra: [String] = []) throws -> CLIResult {
        try sb.run(["otp", "--set", name] + extra, stdin: Array((uri + "\n").utf8))
    }

    @Test func set_storesTheURIAsASecret_andOtpPrintsTheRFC6238Codes() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        for mode in ["SHA1", "SHA256", "SHA512"] {
            let r = try Self.store(sb, "acme/\(mode)", OneTimeCodeTests.uri(mode: mode))
            #expect(r.status == 0 && r.stdout.isEmpty, "\(r.stderr)")
        }
        for v in OneTimeCodeTests.rfc6238 {
            let r = try sb.run(["otp", "acme/\(v.mode)", "--at", String(v.time)])
            #expect(r.status == 0 && r.out == v.totp + "\n", "\(v.mode) at \(v.time): \(r.out) \(r.stderr)")
        }
        // --at as an ISO 8601 date: 2009-02-13T23:31:30Z is 1234567890.
        #expect(try sb.run(["otp", "acme/SHA1", "--at", "2009-02-13T23:31:30Z"]).out == "89005924\n")
        // Now: six... here eight digits, whatever the time.
        let now = try sb.run(["otp", "acme/SHA1"])
        #expect(now.status == 0 && now.out.count == 9 && now.out.dropLast().allSatisfy(\.isNumber), "\(now.out)")

        // The mapping other tools can rely on: a genp item, service otp:SERVICE, the URI as data.
        let item = try sb.run(["find", "--service", "otp:acme", "--account", "SHA1", "--return", "all"])
        let object = try #require(try item.json() as? [String: Any])
        #expect(object["class"] as? String == "genp" && object["desc"] as? String == "otpauth URI")
        #expect(object["v_Data"] as? String == Data(OneTimeCodeTests.uri(mode: "SHA1").utf8).base64EncodedString())
        #expect(!(try sb.run(["dump"]).out.contains(Self.sha1)), "dump never shows the URI")
    }

    @Test func set_refusesABadURI_aDuplicate_andReplacesOnlyWhenAsked() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let bad = try Self.store(sb, "acme/alice", "otpauth://totp/x?secret=GEZD1NBVGY3TQOJQ")
        #expect(bad.status == 2 && bad.stderr.contains("position 5"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("GEZD"), "the secret is never shown")
        #expect(try sb.run(["otp", "acme/alice"]).status == 1, "nothing was stored")
        let empty = try sb.run(["otp", "--set", "acme/alice"], stdin: Array("\n".utf8))
        #expect(empty.status == 2, "\(empty.stderr)")

        #expect(try Self.store(sb, "acme/alice", "otpauth://totp/x?secret=\(Self.sha1)&digits=8").status == 0)
        let again = try Self.store(sb, "acme/alice", "otpauth://totp/x?secret=\(Self.sha1)&digits=6")
        #expect(again.status == 3 && again.stderr.contains("--replace"), "\(again.stderr)")
        #expect(try sb.run(["otp", "acme/alice", "--at", "59"]).out == "94287082\n", "kept")
        let replaced = try Self.store(
            sb, "acme/alice", "otpauth://totp/x?secret=\(Self.sha1)&digits=6", ["--replace"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try sb.run(["otp", "acme/alice", "--at", "59"]).out == "287082\n")

        // A password item of the same service and account is another item.
        #expect(try sb.run(["add", "--service", "acme", "--account", "alice"], stdin: Array("pw".utf8)).status == 0)
        #expect(try sb.run(["otp", "acme/alice", "--at", "59"]).out == "287082\n")

        // Lookups: no item, several without an account, a bad --at, contradicting options.
        #expect(try sb.run(["otp", "acme/bob"]).status == 1)
        #expect(try Self.store(sb, "acme/bob", "otpauth://totp/x?secret=\(Self.sha1)").status == 0)
        let ambiguous = try sb.run(["otp", "acme"])
        #expect(ambiguous.status == 2 && ambiguous.stdout.isEmpty, "\(ambiguous.stderr)")
        for arguments in [
            ["otp", "acme/bob", "--at", "soon"], ["otp", "acme/bob", "--at", "-1"], ["otp", "/bob"],
            ["otp", "--set", "acme/bob", "--at", "5"], ["otp", "acme/bob", "--replace"]
        ] {
            #expect(try sb.run(arguments).status == 2, "\(arguments)")
        }
        // A stored item that holds no URI is named, not decoded at random.
        #expect(try sb.run(["add", "--service", "otp:junk"], stdin: Array("hunter2".utf8)).status == 0)
        let junk = try sb.run(["otp", "junk"])
        #expect(
            junk.status == 2 && junk.stderr.contains("not hold a valid otpauth") && !junk.stderr.contains("hunter2"))
    }

    @Test func set_onATerminal_asksTwiceWithoutEcho() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        let uri = "otpauth://totp/x?secret=\(Self.sha1)&digits=8"
        let same = try #require(
            try SecretInputTests().answering(sb, ["otp", "--set", "acme/t"], [("URI", uri), ("Repeat", uri)]))
        #expect(same.status == 0, "\(same.out)")
        #expect(!same.out.contains(Self.sha1), "not echoed: \(same.out)")
        #expect(try sb.run(["otp", "acme/t", "--at", "59"]).out == "94287082\n")
        let differ = try #require(
            try SecretInputTests().answering(
                sb, ["otp", "--set", "acme/u"], [("URI", uri), ("Repeat", uri.replacingOccurrences(of: "8", with: "6"))]
            ))
        #expect(differ.status == 2 && differ.out.contains("differ"), "\(differ.out)")
        #expect(try sb.run(["otp", "acme/u"]).status == 1, "nothing stored")
        let closed = try sb.run(["otp", "--set", "acme/v"], closeStdin: true)
        #expect(closed.status == 2 && closed.stderr.contains("stdin is closed"), "\(closed.stderr)")
    }

    @Test func hotp_printsRFC4226Codes_andStoresTheNextCounter() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        #expect(
            try Self.store(sb, "bank", "otpauth://hotp/Bank:me?secret=\(Self.sha1)&counter=0&issuer=Bank").status == 0)
        for v in OneTimeCodeTests.rfc4226.prefix(4) {
            #expect(try sb.run(["otp", "bank"]).out == v.hotp + "\n", "count \(v.count)")
        }
        #expect(
            try sb.run(["find", "--service", "otp:bank", "--account", ""]).out
                == "otpauth://hotp/Bank:me?secret=\(Self.sha1)&counter=4&issuer=Bank")
        let at = try sb.run(["otp", "bank", "--at", "59"])
        #expect(at.status == 2 && at.stderr.contains("HOTP"), "\(at.stderr)")
        #expect(try sb.run(["otp", "bank"]).out == "338314\n", "the refused --at used no counter value")
    }

    /// Eight processes ask for a code at once: each value of the counter is given exactly
    /// once (the update is a compare-and-swap on the item as read), and the stored counter
    /// moves by eight.
    @Test func hotp_concurrentProcesses_neverGetTheSameCode() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        #expect(try Self.store(sb, "bank/me", "otpauth://hotp/x?secret=\(Self.sha1)&counter=0").status == 0)
        let processes = try (0..<8).map { _ in
            try Spawned(["otp", "bank/me"], environment: sb.environment, in: sb.directory)
        }
        var codes: [String] = []
        for p in processes {
            #expect(p.wait() == .exited(0), "\(p.stderr)")
            codes += String(decoding: p.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        #expect(codes.count == 8, "\(codes)")
        #expect(Set(codes) == Set(OneTimeCodeTests.rfc4226.prefix(8).map(\.hotp)), "\(codes)")
        #expect(try sb.run(["find", "--service", "otp:bank", "--account", "me"]).out.hasSuffix("&counter=8"))
    }

    /// Through the agent, with no passcode in the commands: the counter moves by the same
    /// compare-and-swap update (the item's modification date crosses the agent's wire
    /// exactly), and generate --in-place is an update there too.
    @Test func throughTheAgent_hotpCountsOnce_andGenerateRotatesInPlace() throws {
        let sb = try AgentCLITests.sandbox()
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let none = AgentCLITests.noPasscode
        let uri = "otpauth://hotp/x?secret=\(Self.sha1)&counter=0"
        #expect(try sb.run(["otp", "--set", "bank/me"], stdin: Array(uri.utf8), env: none).status == 0)
        var environment = sb.environment
        environment["LATCHKEY_PASSCODE"] = nil
        let processes = try (0..<6).map { _ in
            try Spawned(["otp", "bank/me"], environment: environment, in: sb.directory)
        }
        var codes: [String] = []
        for p in processes {
            #expect(p.wait() == .exited(0), "\(p.stderr)")
            codes += String(decoding: p.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        #expect(Set(codes) == Set(OneTimeCodeTests.rfc4226.prefix(6).map(\.hotp)), "\(codes)")
        #expect(try sb.run(["find", "--service", "otp:bank", "--account", "me"], env: none).out.hasSuffix("&counter=6"))

        #expect(
            try sb.run(["add", "--service", "mail", "--account", "a"], stdin: Array("old".utf8), env: none).status == 0)
        let rotated = try sb.run(
            ["generate", "--service", "mail", "--account", "a", "--in-place", "--print"], env: none)
        #expect(rotated.status == 0 && rotated.out.count == 24, "\(rotated.stderr)")
        #expect(try sb.run(["find", "--service", "mail", "--account", "a"], env: none).out == rotated.out)
    }
}
