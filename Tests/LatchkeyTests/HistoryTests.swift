import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// History (spec/FORMAT.md §7.7): every update and delete keeps the version it replaces,
/// encrypted as the item was, bounded by what each record says; a version can be restored.
@Suite struct HistoryTests {
    let mail = Query(.genericPassword, attrs(["svce": "mail", "acct": "alice"]))

    /// A keychain with passcode (unlocked) and one item of `mail`, secret "v1".
    func keychain(_ policy: HistoryPolicy = .standard, passcode: [UInt8]? = TestEnv.passcode) throws
        -> (MemoryFileSystem, Keychain)
    {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: passcode)
        kc.localStore!.historyPolicy = policy
        try kc.add(
            .genericPassword, attributes: attrs(["svce": "mail", "acct": "alice", "labl": "Mail"]), data: bytes("v1"),
            protection: .whenUnlocked)
        return (disk, kc)
    }

    func secret(_ kc: Keychain, _ q: Query) throws -> String {
        String(decoding: try kc.find(q, limit: 1)[0].data, as: UTF8.self)
    }

    /// Records of `type` in the file, by a walk over the frames.
    func count(_ type: RecordType, _ disk: MemoryFileSystem) throws -> Int {
        let file = disk.keychainBytes
        var at = try FileHeader.peekLength(Array(file.prefix(16)))
        var n = 0
        while at < file.count {
            let frame = try FrameHeader.decode(file[at..<at + 20])
            if frame.type == type.rawValue { n += 1 }
            at += frame.recordSize
        }
        return n
    }

    @Test func updates_keepEachEarlierVersion_newestFirst_withoutData() throws {
        let (_, kc) = try keychain()
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        try kc.update(mail, attributes: attrs(["labl": "Mail 3"]), data: bytes("v3"))
        let h = try kc.history(mail)
        #expect(h.versions.map(\.kind) == [.current, .replaced, .replaced])
        #expect(h.versions.map { $0.item.attributes["labl"] } == [.string("Mail 3"), .string("Mail"), .string("Mail")])
        #expect(h.versions.allSatisfy { $0.item.data.isEmpty }, "a history never carries secrets")
        #expect(h.versions[1].sequence > h.versions[2].sequence)
        #expect(h.locked == 0)
        // Restoring the oldest brings "v1" back; the version it replaces joins the history.
        let (item, asNew) = try kc.restore(h.versions[2])
        #expect(!asNew)
        #expect(item.persistentRef == h.versions[0].item.persistentRef, "an update of the same item")
        #expect(try secret(kc, mail) == "v1")
        #expect(try kc.history(mail).versions.map(\.kind) == [.current, .replaced, .replaced, .replaced])
    }

    @Test func delete_keepsTheLastVersion_andRestoreAddsANewItem() throws {
        let (_, kc) = try keychain()
        let before = try kc.find(mail)[0]
        try kc.delete(mail)
        let h = try kc.history(mail)
        #expect(h.versions.map(\.kind) == [.deleted])
        #expect(!h.versions[0].itemIsLive)
        let (item, asNew) = try kc.restore(h.versions[0])
        #expect(asNew)
        #expect(item.persistentRef != before.persistentRef, "a deleted item's UUID never comes back")
        #expect(try secret(kc, mail) == "v1")
    }

    @Test func renamedItem_isNamedByItsEarlierName() throws {
        let (_, kc) = try keychain()
        try kc.update(mail, attributes: attrs(["acct": "alicia"]))
        let h = try kc.history(mail)
        #expect(h.versions.map(\.kind) == [.current, .replaced])
        #expect(h.versions[0].item.attributes["acct"] == .string("alicia"))
    }

    @Test func policyOff_writesNoHistoryRecord() throws {
        let (disk, kc) = try keychain(.off)
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        try kc.delete(mail)
        #expect(try count(.history, disk) == 0)
        #expect(try kc.history(mail).versions.isEmpty)
    }

    @Test func versionBound_listsAndCompactsToTheLastK() throws {
        let (disk, kc) = try keychain(HistoryPolicy(versions: 2, days: 0))
        for v in 2...6 { try kc.update(mail, attributes: [:], data: bytes("v\(v)")) }
        #expect(try count(.history, disk) == 5, "written as changes happen")
        let listed = try kc.history(mail).versions
        #expect(listed.map(\.kind) == [.current, .replaced, .replaced])
        try kc.compact()
        #expect(try count(.history, disk) == 2, "compaction drops the expired records")
        let after = try openKeychain(on: disk)
        try after.unlock(passcode: TestEnv.passcode)
        let relisted = try after.history(mail).versions
        #expect(relisted.map(\.kind) == listed.map(\.kind))
        #expect(relisted.map(\.date) == listed.map(\.date), "the same versions, before and after")
        try after.restore(relisted[2])
        #expect(try secret(after, mail) == "v4")
    }

    @Test func dayBound_expiresByTheRecordsOwnTime() throws {
        let (disk, kc) = try keychain(HistoryPolicy(versions: 10, days: 2))
        let store = kc.localStore!
        let start: Int64 = 1_800_000_000
        store.clock = { start }
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        store.clock = { start + 86_400 }
        try kc.update(mail, attributes: [:], data: bytes("v3"))
        store.clock = { start + 2 * 86_400 }
        #expect(try kc.history(mail).versions.count == 2, "the first version's two days are over")
        try kc.compact()
        #expect(try count(.history, disk) == 1)
        store.clock = { start + 3 * 86_400 }
        try kc.compact()
        #expect(try count(.history, disk) == 0)
        #expect(try secret(kc, mail) == "v3", "a bound drops versions, never the item")
    }

    @Test func aTransactionKeepsOneVersionPerItem_theOneBeforeIt() throws {
        let (disk, kc) = try keychain()
        let id = ID16(Array(try kc.find(mail)[0].persistentRef.suffix(16)))
        let store = kc.localStore!
        let first = try store.read(try store.liveItem(uuid: id.bytes)!)
        var second = first
        second.data = bytes("v2")
        var third = first
        third.data = bytes("v3")
        try store.write {
            try $0.commit([
                .put(id: id, plaintext: second, protection: .whenUnlocked, flags: 0),
                .put(id: id, plaintext: third, protection: .whenUnlocked, flags: 0)
            ])
        }
        #expect(try count(.history, disk) == 1)
        let h = try kc.history(mail)
        #expect(h.versions.count == 2)
        try kc.restore(h.versions[1])
        #expect(try secret(kc, mail) == "v1", "the version from before the transaction")
    }

    @Test func lockedClass_isCountedNotShown_andCannotBeRestored() throws {
        let (disk, kc) = try keychain()
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        let version = try kc.history(mail).versions[1]
        let other = try openKeychain(on: disk)
        #expect(try other.history(Query(.genericPassword)).locked == 1)
        expectKeychainError(.interactionNotAllowed) { try other.restore(version) }
        try other.unlock(passcode: TestEnv.passcode)
        #expect(try other.history(mail).locked == 0)
    }

    @Test func anotherAccessGroup_seesNoVersion_andCannotRestoreOne() throws {
        let (_, kc) = try keychain()
        let owner = CallerIdentity(applicationIdentifier: "com.owner.app")
        let stranger = CallerIdentity(applicationIdentifier: "com.stranger.app")
        kc.caller = owner
        let q = Query(.genericPassword, attrs(["svce": "bank"]))
        try kc.add(.genericPassword, attributes: attrs(["svce": "bank", "acct": "o"]), data: bytes("b1"))
        try kc.update(q, attributes: [:], data: bytes("b2"))
        let version = try kc.history(q).versions[1]
        kc.caller = stranger
        #expect(try kc.history(q).versions.isEmpty)
        #expect(
            try kc.history(Query(.genericPassword)).versions.allSatisfy {
                $0.item.attributes["svce"] != .string("bank")
            })
        expectKeychainError(.itemNotFound) { try kc.restore(version) }
        kc.caller = owner
        try kc.restore(version)
        #expect(try secret(kc, q) == "b1")
    }

    /// A version of group A does not reach the item after it moved to group B: restoring it as
    /// an update would overwrite an item the caller may no longer use.
    @Test func aVersionOfAGroup_cannotOverwriteTheItemMovedToAnotherGroup() throws {
        let (_, kc) = try keychain()
        let both = CallerIdentity(applicationIdentifier: "app.both", keychainAccessGroups: ["team.a", "team.b"])
        let onlyA = CallerIdentity(applicationIdentifier: "app.a", keychainAccessGroups: ["team.a"])
        let q = Query(.genericPassword, attrs(["svce": "vault"]))
        kc.caller = both
        try kc.add(.genericPassword, attributes: attrs(["svce": "vault", "agrp": "team.a"]), data: bytes("in a"))
        try kc.update(q, attributes: attrs(["agrp": "team.b"]), data: bytes("in b"))
        kc.caller = onlyA
        let versions = try kc.history(q).versions
        #expect(versions.map(\.kind) == [.replaced], "the version of group A; the current one is B's")
        expectKeychainError(.noAccessForItem) { try kc.restore(versions[0]) }
        kc.caller = both
        #expect(try secret(kc, q) == "in b", "unchanged")
        try kc.restore(versions[0])
        #expect(try secret(kc, q) == "in a")
    }

    @Test func passcodeChange_rewrapsHistory_andRemovalDropsAkpuHistory() throws {
        let (disk, kc) = try keychain()
        let pinned = Query(.genericPassword, attrs(["svce": "pin"]))
        try kc.add(
            .genericPassword, attributes: attrs(["svce": "pin"]), data: bytes("p1"),
            protection: .whenPasscodeSetThisDeviceOnly)
        try kc.update(pinned, attributes: [:], data: bytes("p2"))
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        let reopened = try openKeychain(on: disk)
        try reopened.unlock(passcode: TestEnv.newPasscode)
        try reopened.restore(try reopened.history(mail).versions[1])
        #expect(try secret(reopened, mail) == "v1", "readable under the new class keys")
        #expect(try reopened.history(pinned).versions.count == 2)
        try reopened.changePasscode(old: TestEnv.newPasscode, new: nil, kdfLogN: TestEnv.logN)
        #expect(try reopened.history(pinned).versions.isEmpty, "akpu versions go with the passcode")
        #expect(try reopened.history(mail).versions.count == 3)
        #expect(reopened.verify().ok)
    }

    @Test func compactDropHistory_forgetsEveryVersion() throws {
        let (disk, kc) = try keychain()
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        try kc.localStore!.compact(dropHistory: true)
        #expect(try count(.history, disk) == 0)
        #expect(try kc.history(mail).versions.map(\.kind) == [.current])
    }

    /// A history record forged by someone with the device secret (the record MAC key) names an
    /// item it does not hold: the history refuses it; the keychain opens and reads as before.
    @Test func forgedHistoryRecordNamingAnotherItem_isAnIntegrityError_neverApplied() throws {
        let (disk, kc) = try keychain()
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        var file = disk.keychainBytes
        let header = try headerOf(file)
        let keys = try FileKeys(device: device, fileUUID: header.fileUUID)
        // Take the genuine history record and change the UUID in front of its put.
        var at = try FileHeader.peekLength(Array(file.prefix(16)))
        var genuine: [UInt8] = []
        while at < file.count {
            let frame = try FrameHeader.decode(file[at..<at + 20])
            if frame.type == RecordType.history.rawValue {
                genuine = Array(file[at + 20..<at + frame.recordSize - 16])
            }
            at += frame.recordSize
        }
        #expect(!genuine.isEmpty)
        genuine[0] ^= 0xFF
        let last = kc.localStore!.lastSequence
        file += RecordFrame.encode(
            type: RecordType.history.rawValue, flags: 0, sequence: last + 1, payload: genuine,
            offset: UInt64(file.count), macKey: keys.recordMAC)
        disk.setContents(TestEnv.keychainPath, file)
        let reopened = try openKeychain(on: disk)
        try reopened.unlock(passcode: TestEnv.passcode)
        #expect(try secret(reopened, mail) == "v2", "never applied")
        expectKeychainError(.decode) { _ = try reopened.history(mail) }
        let bytesBefore = disk.keychainBytes
        expectKeychainError(.decode) { try reopened.compact() }
        #expect(disk.keychainBytes == bytesBefore, "a compaction that cannot read a record drops nothing")
    }

    /// What a 1.0 reader that skips ancillary records sees: the same live items.
    @Test func historyRecordsAreAncillary_aReaderThatSkipsThemReadsTheSameItems() throws {
        let (disk, kc) = try keychain()
        try kc.update(mail, attributes: [:], data: bytes("v2"))
        let other = Query(.genericPassword, attrs(["svce": "gone"]))
        try kc.add(.genericPassword, attributes: attrs(["svce": "gone"]), data: bytes("g"))
        try kc.delete(other)
        let expected = try kc.snapshot()
        // Rewrite every history record as an unassigned ancillary type (0xFE): what a reader
        // that does not know §7.7 sees. Tags are recomputed with the record MAC key.
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let file = disk.keychainBytes
        let keys = try FileKeys(device: device, fileUUID: try headerOf(file).fileUUID)
        var at = try FileHeader.peekLength(Array(file.prefix(16)))
        var out = Array(file[..<at])
        while at < file.count {
            let frame = try FrameHeader.decode(file[at..<at + 20])
            let payload = Array(file[at + 20..<at + frame.recordSize - 16])
            let type = frame.type == RecordType.history.rawValue ? 0xFE : frame.type
            out += RecordFrame.encode(
                type: type, flags: frame.continues ? FrameHeader.continuesFlag : 0, sequence: frame.sequence,
                payload: payload, offset: UInt64(out.count), macKey: keys.recordMAC)
            at += frame.recordSize
        }
        disk.setContents(TestEnv.keychainPath, out)
        let reopened = try openKeychain(on: disk)
        try reopened.unlock(passcode: TestEnv.passcode)
        #expect(try reopened.snapshot() == expected)
        #expect(try reopened.history(mail).versions.map(\.kind) == [.current])
    }
}
