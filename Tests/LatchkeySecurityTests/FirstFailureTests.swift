import Foundation
import Testing
import Latchkey
import LatchkeySecurity
#if canImport(Glibc)
    import Glibc
#endif

/// Out of the box every SecItem call failed with errSecNotAvailable and said nothing; the
/// reason was only in `lastError`. Now the first failure that comes from the setup writes one
/// line to stderr that names what is missing and what fixes it (issue 18 §1). Serialized: the
/// tests redirect this process's stderr while they run.
@Suite(.serialized) struct FirstFailureTests {
    /// Runs `body` with file descriptor 2 sent to a temporary file; returns what was written
    /// there, and writes it on to the real stderr afterwards (other suites' output included).
    static func capturingStandardError(_ body: () throws -> Void) throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/latchkey-stderr-" + UUID().uuidString
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        try #require(fd >= 0)
        defer { unlink(path) }
        let saved = dup(2)
        dup2(fd, 2)
        var failure: Error?
        do { try body() } catch { failure = error }
        dup2(saved, 2)
        close(saved)
        close(fd)
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        FileHandle.standardError.write(Data(text.utf8))
        if let failure { throw failure }
        return text
    }

    /// The lines of `text` that mention `marker` (a path unique to the test).
    static func lines(_ text: String, mentioning marker: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.contains(marker) }
    }

    static func emptyHome() throws -> String {
        let home = FileManager.default.temporaryDirectory.path + "/latchkey-home-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return home
    }

    @Test func outOfTheBox_firstFailureNamesTheMissingKeychainAndTheFix_once() throws {
        let home = try Self.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        // A fresh machine: no keychain, no passcode, nothing configured but HOME.
        let config = LatchkeySecurityConfiguration(environment: ["HOME": home])
        let text = try Self.capturingStandardError {
            config.use {
                #expect(add(genpItem("a")) == errSecNotAvailable)
                #expect(copy(genp("a")).0 == errSecNotAvailable)
            }
        }
        let said = Self.lines(text, mentioning: home)
        #expect(said.count == 1, "one line, once: \(text)")
        let line = String(said.first ?? "")
        #expect(line.hasPrefix("LatchkeySecurity: no keychain at \(home)/.local/share/latchkey/login.keychain"))
        #expect(line.contains("(errSecNotAvailable -25291)"))
        for fix in [
            "latchkey init", "LATCHKEY_KEYCHAIN", "LATCHKEY_PASSCODE", "LatchkeySecurityConfiguration",
            "lastError", "LATCHKEY_SECURITY_QUIET=1"
        ] {
            #expect(line.contains(fix), "the line names \(fix): \(line)")
        }
        #expect(config.lastError?.status == .notAvailable)
    }

    @Test func quiet_byEnvironmentOrProperty_writesNothing() throws {
        let home = try Self.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let byEnvironment = LatchkeySecurityConfiguration(environment: ["HOME": home, "LATCHKEY_SECURITY_QUIET": "1"])
        #expect(byEnvironment.explainsFirstFailure == false)
        let byProperty = LatchkeySecurityConfiguration(environment: ["HOME": home, "LATCHKEY_SECURITY_QUIET": "0"])
        #expect(byProperty.explainsFirstFailure == true)
        byProperty.explainsFirstFailure = false
        let text = try Self.capturingStandardError {
            for config in [byEnvironment, byProperty] {
                config.use { #expect(add(genpItem("a")) == errSecNotAvailable) }
                #expect(config.lastError?.status == .notAvailable, "the reason is still kept")
            }
        }
        #expect(Self.lines(text, mentioning: home).isEmpty, "\(text)")
    }

    @Test func lockedKeychainWithoutPasscode_namesThePasscodeVariable() throws {
        let kc = try SecTestKeychain(unlocked: false)
        kc.config.explainsFirstFailure = true
        let text = try Self.capturingStandardError {
            kc.run {
                #expect(add(genpItem("a")) == errSecInteractionNotAllowed)
                #expect(add(genpItem("b")) == errSecInteractionNotAllowed)
            }
        }
        let said = Self.lines(text, mentioning: kc.directory)
        #expect(said.count == 1, "\(text)")
        let line = String(said.first ?? "")
        #expect(line.contains("is locked and no passcode was given (errSecInteractionNotAllowed -25308)"), "\(line)")
        #expect(
            line.contains("LATCHKEY_PASSCODE") && line.contains("passcodeSource") && line.contains("latchkey unlock"),
            "\(line)")
    }

    @Test func ordinaryResults_writeNothing() throws {
        let kc = try SecTestKeychain()
        kc.config.explainsFirstFailure = true
        let text = try Self.capturingStandardError {
            kc.run {
                #expect(copy(genp("absent")).0 == errSecItemNotFound)
                #expect(add(genpItem("a")) == errSecSuccess)
                #expect(add(genpItem("a")) == errSecDuplicateItem)
                #expect(add([kSecAttrAccount as String: "no class"]) == errSecParam)
            }
        }
        #expect(!text.contains("LatchkeySecurity:"), "\(text)")
    }
}
