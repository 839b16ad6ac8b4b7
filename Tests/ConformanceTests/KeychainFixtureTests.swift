import Foundation
import Latchkey
import LatchkeyFormat
import Testing

/// Every fixture of fixtures/keychain/ through the Latchkey engine: the outcome must be the one
/// its FIXTURE.txt names.
@Suite struct KeychainFixtureTests {
    /// Fixtures the suite must see; guards against a wrong path silently running nothing.
    static let required = [
        "golden_small", "golden_nopasscode", "golden_passwd",
        "header_bad_magic", "header_unknown_major", "header_flipped_byte",
        "keybag_wrap_tampered", "keybag_ak_wrap_tampered",
        "record_tag_flipped", "record_length_damaged", "torn_tail", "rolled_back",
        "unknown_record_type", "ancillary_record",
    ]

    @Test func fixtureDirectory_holdsEveryRequiredFixture() {
        let found = Set(KeychainFixture.all.map(\.name))
        for name in Self.required {
            #expect(found.contains(name), "fixtures/keychain/\(name) is missing; run 'make fixtures'")
        }
    }

    @Test(arguments: KeychainFixture.all)
    func fixture_hasTheOutcomeItsHeaderNames(_ fixture: KeychainFixture) throws {
        let w = try fixture.workspace()
        defer { w.remove() }
        let expect = try fixture.expectation()
        if expect == .success {
            try checkSuccess(fixture, w)
            return
        }
        guard let e = try failure(fixture, w) else { return }
        switch expect {
        case .success:
            break
        case .authFailure:
            #expect(e.status == .authFailed, "\(e)")
        case .integrityFailure:
            #expect(e.status == .decode, "\(e)")
            #expect(!mentionsNewerVersion(e) && !e.message.contains("rolled back"), "damage reported as something else: \(e)")
        case .unsupportedVersion:
            #expect(e.status == .decode, "\(e)")
            #expect(mentionsNewerVersion(e), "the message should say a newer Latchkey is needed: \(e)")
        case .rolledBack:
            #expect(e.status == .decode, "\(e)")
            #expect(e.message.contains("rolled back"), "\(e)")
        }
    }

    // MARK: Helpers

    func mentionsNewerVersion(_ e: KeychainError) -> Bool {
        let m = e.message.lowercased()
        return m.contains("upgrade latchkey") || m.contains("newer latchkey")
    }

    /// Open, unlock, read every item, verify: everything a reader does. Returns the first
    /// KeychainError, or records an issue when every step succeeded.
    func failure(_ fixture: KeychainFixture, _ w: Workspace) throws -> KeychainError? {
        let passcode = try fixture.passcode()
        do {
            let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
            if let p = passcode { try kc.unlock(passcode: p) }
            for c in ItemClass.allCases { _ = try kc.find(Query(c)) }
            let report = kc.verify()
            Issue.record("\(fixture.name): every step succeeded (verify problems: \(report.problems))")
            return nil
        } catch let e as KeychainError {
            return e
        }
    }

    func checkSuccess(_ fixture: KeychainFixture, _ w: Workspace) throws {
        let header = try fixture.header()
        let tail = try #require(header["recovered-tail-bytes"].flatMap { UInt64($0) }, "FIXTURE.txt lacks recovered-tail-bytes")
        let expected = try fixture.expectedItems()
        let passcode = try fixture.passcode()
        let sizeBefore = try fileSize(w.keychainPath)

        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        #expect(kc.recoveredTailBytes == tail)
        #expect(try fileSize(w.keychainPath) == sizeBefore - tail, "the incomplete tail is cut off on open")
        #expect(kc.hasPasscode == (passcode != nil), "passcode.txt present exactly when the keychain has a passcode")
        if let p = passcode { try kc.unlock(passcode: p) }

        var found: [String: Item] = [:]
        for c in ItemClass.allCases {
            for item in try kc.find(Query(c)) {
                #expect(found.updateValue(item, forKey: hexString(item.persistentRef)) == nil, "an item returned twice")
            }
        }
        #expect(Set(found.keys) == Set(expected.map(\.reference)), "the live items are exactly those of expected.json")
        for want in expected {
            guard let got = found[want.reference] else { continue }
            #expect(got.itemClass == want.itemClass)
            #expect(got.protection.code == want.protection)
            #expect(Int(got.protection.rawValue) == want.protectionClass)
            // The engine adds pdmn (from the protection class); it is not stored.
            #expect(got.attributes["pdmn"] == .string(want.protection))
            var attrs = got.attributes
            attrs["pdmn"] = nil
            #expect(attrs == want.attributes, "\(want.reference)")
            #expect(got.data == want.data, "\(want.reference): data differs")
        }

        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == expected.count)
        #expect(report.checkedItems == expected.count)
        #expect(report.recoveredTailBytes == tail)

        if let old = header["old-passcode-must-fail"] {
            let again = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
            let e = #expect(throws: KeychainError.self) { try again.unlock(passcode: Array(old.utf8)) }
            #expect(e?.status == .authFailed)
        }
    }

    func fileSize(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
