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
        "file_shorter_than_magic", "state_truncated", "akpu_item_without_passcode", "golden_passcode_removed",
        "golden_user_presence", "item_flags_reserved",
        "index_valid", "index_stale", "index_tampered", "index_foreign", "index_longer_log",
        "index_swapped", "damage_search_max_record", "history", "history_malformed"
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
        case .notALatchkeyFile:
            #expect(e.status == .decode, "\(e)")
            #expect(
                e.message.contains("not a Latchkey"), "the message should say the file is not a Latchkey file: \(e)")
        case .authenticationError:
            #expect(e.status == .authFailed, "\(e)")
        case .integrityError:
            #expect(e.status == .decode, "\(e)")
            #expect(
                !mentionsNewerVersion(e) && !e.message.contains("rolled back") && !e.message.contains("not a Latchkey"),
                "damage reported as something else: \(e)")
        case .unsupportedVersion:
            #expect(e.status == .decode, "\(e)")
            #expect(mentionsNewerVersion(e), "the message should say a newer Latchkey is needed: \(e)")
        case .rolledBack:
            #expect(e.status == .decode, "\(e)")
            #expect(e.message.contains("rolled back"), "\(e)")
        }
        if expect != .notALatchkeyFile {
            #expect(!e.message.contains("not a Latchkey"), "reported as not a Latchkey file: \(e)")
        }
    }

    /// spec/FORMAT.md §7.1 and §11.6: removing the passcode keeps an item that needs user
    /// presence, flag and all; with no passcode to ask for, its attributes are read and its data
    /// never is, and the file stays valid (no integrity error).
    @Test func userPresenceItem_afterPasscodeRemoval_keepsItsAttributes_andWithholdsItsData() throws {
        let fixture = try #require(KeychainFixture.all.first { $0.name == "golden_user_presence" })
        let w = try fixture.workspace()
        defer { w.remove() }
        let passcode = try #require(try fixture.passcode())
        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        try kc.unlock(passcode: passcode)
        #expect(try kc.changePasscode(old: passcode, new: nil, kdfLogN: 10) == 0, "no akpu item to drop")

        let reopened = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        #expect(!reopened.hasPasscode)
        #expect(reopened.verify().ok)
        let flagged = try reopened.find(Query(.genericPassword), includeData: false).filter(\.requiresUserPresence)
        #expect(flagged.count == 2)
        reopened.authenticationHandler = { _ in passcode }
        for item in flagged {
            let query = Query(.genericPassword, persistentRef: item.persistentRef)
            let e = #expect(throws: KeychainError.self) { try reopened.find(query) }
            #expect(e?.status == .notAvailable, "\(String(describing: e))")
        }
    }

    /// spec §7.6: hash records that are validly tagged but not bound to the put before them
    /// (another binding, another item's UUID) are ignored; those items stay candidates, so a
    /// query on the value they claim does not return them and one on their own value does.
    @Test func unboundHashRecords_areIgnored_andTheirItemsStillFound() throws {
        let fixture = try #require(KeychainFixture.all.first { $0.name == "attribute_hash_unbound" })
        let w = try fixture.workspace()
        defer { w.remove() }
        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        // Locked, a query limited to a class that is open works as without hashes (the others
        // would throw errSecInteractionNotAllowed, as they do without hashes).
        let forged = try kc.find(
            Query(.genericPassword, ["svce": .string("fixtures.latchkey.example/forged")], protection: .always),
            includeData: false)
        #expect(
            Set(forged.compactMap { $0.attributes["acct"] }) == [.string("unbound-binding"), .string("unbound-uuid")])
        try kc.unlock(passcode: try #require(try fixture.passcode()))
        let claimed = try kc.find(
            Query(.genericPassword, ["svce": .string("fixtures.latchkey.example/ak")]), includeData: false)
        #expect(claimed.map { $0.attributes["acct"] } == [.string("user-ak")])
    }

    /// spec §17.2 (index 1.1): with the index of attribute_hashes_index in use, a query on one
    /// label decrypts that item alone, and no other.
    @Test func attributeIndexFixture_findsByLabel_decryptingOnlyTheCandidate() throws {
        let fixture = try #require(KeychainFixture.all.first { $0.name == "attribute_hashes_index" })
        let w = try fixture.workspace()
        defer { w.remove() }
        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        try kc.unlock(passcode: try #require(try fixture.passcode()))
        let store = try #require(kc.localStore)
        #expect(store.usesIndex)
        let before = store.itemsDecrypted
        let found = try kc.find(Query(.genericPassword, ["labl": .string("Golden Always")]))
        #expect(found.map { $0.data } == [Array("secret-dk".utf8)])
        #expect(
            store.itemsDecrypted - before == 1, "decrypted \(store.itemsDecrypted - before) items for one candidate")
    }

    /// spec/FORMAT.md §7.6 worked example: the attribute hashes of golden_small's `dk` item
    /// (and of an absent account) under golden_small's index key, as attribute_hashes holds them.
    @Test func attributeHashWorkedExample_matchesTheSpec() throws {
        let dir = KeychainFixture.root.appendingPathComponent("attribute_hashes")
        let file = [UInt8](try Data(contentsOf: dir.appendingPathComponent("keychain")))
        let device = try DeviceSecret.decodeFile(
            [UInt8](try Data(contentsOf: dir.appendingPathComponent("device.secret"))))
        let header = try FileHeader.decode(Array(file.prefix(try FileHeader.peekLength(file)))).header
        let keys = try FileKeys(device: device, fileUUID: header.fileUUID)
        func hash(_ name: String, _ value: AttributeValue?) -> String {
            hexString(
                withUnsafeBytes(
                    of: keys.attributeHash(itemClass: .genericPassword, name: name, value: value)!.bigEndian
                ) { Array($0) })
        }
        #expect(hash("labl", .string("Golden Always")) == "e6d8a4404488d587")
        #expect(hash("acct", .string("user-dk")) == "8c93f8a07cb5304f")
        #expect(hash("acct", nil) == "fe5f149b60d88ed3")
        #expect(hash("acct", .data([])) == "fe5f149b60d88ed3")
        #expect(
            keys.attributeHash(itemClass: .genericPassword, name: "labl", value: nil) == nil,
            "an absent label has no hash")
        let hex = hexString(file)
        #expect(hex.contains("8c93f8a07cb5304f" + "e6d8a4404488d587") == false, "svce comes between acct and labl")
        #expect(hex.contains("e6d8a4404488d587"), "the dk item's hash record holds its label hash")
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
            // A full verification is the last step of opening a fixture (spec/CONFORMANCE.md
            // §2): a problem it finds is damage (spec §8.4: a unique-key hash only it checks).
            let report = kc.verify()
            if !report.ok { return KeychainError(.decode, "verify: \(report.problems)") }
            Issue.record("\(fixture.name): every step succeeded")
            return nil
        } catch let e as KeychainError {
            return e
        }
    }

    func checkSuccess(_ fixture: KeychainFixture, _ w: Workspace) throws {
        let header = try fixture.header()
        let tail = try #require(
            header["recovered-tail-bytes"].flatMap { UInt64($0) }, "FIXTURE.txt lacks recovered-tail-bytes")
        let expected = try fixture.expectedItems()
        let passcode = try fixture.passcode()
        let sizeBefore = try fileSize(w.keychainPath)

        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        if let index = header["index"] {
            // spec §17.5: the index is used exactly when it passes the binding check (a page
            // that fails is found when it is read, below: then the answers must still be right).
            let used = index.hasPrefix("used")
            let bindingFails = index.contains("check")
            if used || bindingFails { #expect(kc.localStore!.usesIndex == used, "\(fixture.name): index \(index)") }
        }
        #expect(kc.recoveredTailBytes == tail)
        #expect(try fileSize(w.keychainPath) == sizeBefore - tail, "the incomplete tail is cut off on open")
        #expect(kc.hasPasscode == (passcode != nil), "passcode.txt present exactly when the keychain has a passcode")
        if let p = passcode { try kc.unlock(passcode: p) }

        // Attributes first: an item that needs user presence gives its data only once the
        // passcode has been asked for again (spec §7.1), which `userPresence` checks below.
        var found: [String: Item] = [:]
        for c in ItemClass.allCases {
            for item in try kc.find(Query(c), includeData: false) {
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
            #expect(got.requiresUserPresence == (want.flags & 0x01 != 0), "\(want.reference): item flags \(want.flags)")
            #expect(try data(of: want, in: kc, passcode: passcode) == want.data, "\(want.reference): data differs")
        }

        // spec §7.6: a query on an indexed attribute finds every item that has the value, and
        // only such items, whatever hash records the file holds (none, bound, unbound).
        for want in expected {
            for name in AttributeHashRecord.indexedAttributes(for: want.itemClass) {
                guard let value = want.attributes[name] else { continue }
                let got = try kc.find(Query(want.itemClass, [name: value], synchronizable: .any), includeData: false)
                #expect(
                    got.contains { hexString($0.persistentRef) == want.reference },
                    "\(fixture.name): \(name) of \(want.reference)")
                #expect(
                    got.allSatisfy { $0.attributes[name] == value },
                    "\(fixture.name): \(name) query returned an item without that value")
            }
        }

        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == expected.count)
        #expect(report.checkedItems == expected.count)
        #expect(report.recoveredTailBytes == tail)

        if header["history"] != nil {
            try checkHistory(fixture, kc, report: report)
        }

        if let old = header["old-passcode-must-fail"] {
            let again = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
            let e = #expect(throws: KeychainError.self) { try again.unlock(passcode: Array(old.utf8)) }
            #expect(e?.status == .authFailed)
        }
    }

    /// spec/FORMAT.md §7.7: the history listed at the fixture's `now` is exactly that of
    /// expected-history.json, each version decrypted; a full verification checked every history
    /// record the FIXTURE.txt names.
    func checkHistory(_ fixture: KeychainFixture, _ kc: Keychain, report: VerifyReport) throws {
        let header = try fixture.header()
        let (now, expected) = try fixture.expectedHistory()
        #expect(header["history-now"]?.hasPrefix("\(now) ") == true, "\(fixture.name): history-now")
        let records = header.keys.filter { $0.hasPrefix("history-record-") }.count
        #expect(report.historyRecords == records && report.checkedVersions == records, "\(fixture.name)")
        let store = try #require(kc.localStore)
        store.clock = { Int64(now) }
        let listed = try store.history()
        #expect(listed.count == expected.count, "\(fixture.name): \(listed.count) versions listed")
        for (got, want) in zip(listed, expected) {
            let what = "\(fixture.name): the version of \(hexString(want.item.uuid)) at \(want.supersededAt)"
            #expect(got.uuid == want.item.uuid, "\(what)")
            #expect(got.kind.rawValue == want.kind, "\(what)")
            #expect(got.supersededAt == want.supersededAt, "\(what)")
            #expect(got.protection.code == want.item.protection, "\(what)")
            #expect(Int(got.protection.rawValue) == want.item.protectionClass, "\(what)")
            #expect(got.flags == want.item.flags, "\(what)")
            let plaintext = try #require(got.plaintext, "\(what): not decrypted")
            #expect(plaintext.itemClass == want.item.itemClass, "\(what)")
            #expect(plaintext.attributes == want.item.attributes, "\(what)")
            #expect(plaintext.data == want.item.data, "\(what)")
        }
        // The same records by LatchkeyFormat's bound alone: every record the listing leaves out
        // is expired at `now`, and none it lists is.
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: kc.localStore!.path)))
        let bounds = try historyRecords(file).map {
            HistoryBound.Entry(
                uuid: $0.uuid, keepVersions: $0.keepVersions, keepDays: $0.keepDays, supersededAt: $0.supersededAt)
        }
        #expect(bounds.count == records)
        #expect(HistoryBound.expired(bounds, now: now).filter { !$0 }.count == expected.count)
    }

    /// The history records of a keychain file, decoded, in file order.
    func historyRecords(_ file: [UInt8]) throws -> [HistoryRecord] {
        var offset = try FileHeader.peekLength(file)
        var out: [HistoryRecord] = []
        while offset < file.count {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            if frame.type == RecordType.history.rawValue {
                out.append(
                    try HistoryRecord.decode(
                        file[
                            offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize
                                - FormatConstants.frameTagSize]))
            }
            offset += frame.recordSize
        }
        return out
    }

    /// spec §7.7: a history record that is not well-formed is never applied (the file opens and
    /// its live items read, those of history), and is an integrity error when it is read: by a
    /// full verification, a history listing, a compaction (which changes nothing).
    @Test func malformedHistoryRecord_isNeverApplied_andRefusedWhenRead() throws {
        let fixture = try #require(KeychainFixture.all.first { $0.name == "history_malformed" })
        let good = try #require(KeychainFixture.all.first { $0.name == "history" })
        let w = try fixture.workspace()
        defer { w.remove() }
        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        try kc.unlock(passcode: try #require(try fixture.passcode()))
        let live = try kc.find(Query(.genericPassword))
        #expect(Set(live.map(\.persistentRef).map(hexString)) == Set(try good.expectedItems().map(\.reference)))
        let report = kc.verify()
        #expect(report.problems.count == 1 && report.problems[0].contains("malformed"), "\(report.problems)")
        let e = #expect(throws: KeychainError.self) { _ = try kc.localStore!.history() }
        #expect(e?.status == .decode)
        let before = try Data(contentsOf: URL(fileURLWithPath: w.keychainPath))
        let c = #expect(throws: KeychainError.self) { try kc.compact() }
        #expect(c?.status == .decode)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: w.keychainPath)) == before, "a refused compaction changes no byte"
        )
    }

    /// The item's data. For an item that needs user presence: refused without a way to ask
    /// for the passcode (errSecInteractionNotAllowed), given once the passcode is asked for.
    func data(of want: ExpectedItem, in kc: Keychain, passcode: [UInt8]?) throws -> [UInt8]? {
        let query = Query(want.itemClass, synchronizable: .any, persistentRef: bytesFromHex(want.reference))
        guard want.flags & 0x01 != 0 else { return try kc.find(query).first?.data }
        kc.authenticationHandler = nil
        let refused = #expect(throws: KeychainError.self) { try kc.find(query) }
        #expect(refused?.status == .interactionNotAllowed, "\(want.reference): \(String(describing: refused))")
        let asked = AskCount()
        kc.authenticationHandler = { _ in
            asked.ask(); return passcode
        }
        defer { kc.authenticationHandler = nil }
        let data = try kc.find(query).first?.data
        #expect(asked.count == 1, "\(want.reference): the passcode was asked for \(asked.count) times")
        return data
    }

    func fileSize(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
    }
}

/// Counts the prompts of an authentication handler.
final class AskCount: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func ask() { lock.lock(); n += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return n }
}
