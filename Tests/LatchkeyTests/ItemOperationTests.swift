import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Add, find, update and delete (spec §10.3, §11.3).
@Suite struct ItemOperationTests {
    /// A keychain without a passcode: every class but akpu is usable at once.
    func keychain() throws -> (MemoryFileSystem, Keychain) {
        let disk = try makeDisk()
        return (disk, try createKeychain(on: disk, passcode: nil))
    }

    @Test func add_thenFind_returnsAttributesDataAndKeychainSetFields() throws {
        let (disk, kc) = try keychain()
        let added = try kc.add(
            .genericPassword,
            attributes: [
                "acct": .string("alice"), "svce": .string("mail"), "labl": .string("Mail"),
                "gena": .data([0, 1, 2]), "type": .integer(42)
            ],
            data: bytes("s3cret"), protection: .afterFirstUnlock)
        #expect(added.itemClass == .genericPassword)
        #expect(added.protection == .afterFirstUnlock)
        #expect(added.attributes["pdmn"] == .string("ck"))
        #expect(added.persistentRef.count == 20)
        #expect(Array(added.persistentRef.prefix(4)) == bytes("genp"))
        guard case .date(let cdat) = added.attributes["cdat"] else { Issue.record("no cdat"); return }
        #expect(added.attributes["mdat"] == .date(cdat))

        let byUniqueKey = try kc.find(Query(.genericPassword, attrs(["acct": "alice", "svce": "mail"])))
        #expect(byUniqueKey == [added])
        let byLabel = try kc.find(Query(.genericPassword, attrs(["labl": "Mail"])))
        #expect(byLabel == [added])
        #expect(try kc.find(Query(.genericPassword, attrs(["labl": "Other"]))).isEmpty)
        #expect(try kc.find(Query(.internetPassword)).isEmpty)
        #expect(try kc.find(Query(.genericPassword, protection: .always)).isEmpty)

        // A new process reads the same item.
        #expect(try openKeychain(on: disk).find(Query(.genericPassword)) == [added])
    }

    @Test func add_withCallerDatesAndProtection_usesKeychainOwnValues() throws {
        let (_, kc) = try keychain()
        let added = try kc.add(
            .genericPassword,
            attributes: ["acct": .string("alice"), "cdat": .date(1), "mdat": .date(2), "pdmn": .string("dk")],
            data: [], protection: .whenUnlocked)
        #expect(added.attributes["cdat"] != .date(1))
        #expect(added.attributes["mdat"] != .date(2))
        #expect(added.attributes["pdmn"] == .string("ak"))
        let found = try #require(try kc.find(Query(.genericPassword)).first)
        #expect(found == added)
        #expect(found.data.isEmpty)
    }

    @Test func add_duplicateUniqueKey_throwsDuplicateItemAndWritesNothing() throws {
        let (disk, kc) = try keychain()
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("first"))
        let before = disk.keychainBytes
        let mutations = disk.mutations

        expectKeychainError(.duplicateItem) {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail", "labl": "other"]),
                data: bytes("second"))
        }
        expectKeychainError(.duplicateItem, "a string and data with the same bytes are the same key") {
            try kc.add(
                .genericPassword, attributes: ["acct": .data(bytes("alice")), "svce": .string("mail")],
                data: bytes("third"))
        }
        expectKeychainError(.duplicateItem, "the protection class is not part of the unique key") {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("x"),
                protection: .always)
        }
        #expect(disk.keychainBytes == before)
        #expect(disk.mutations == mutations, "nothing was written, not even the device state")
        #expect(try kc.find(Query(.genericPassword)).map(\.data) == [bytes("first")])
    }

    @Test func add_sameAccountInAnotherServiceOrClass_isNotADuplicate() throws {
        let (_, kc) = try keychain()
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("1"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "chat"]), data: bytes("2"))
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail", "agrp": "other.group"]),
            data: bytes("3"))
        try kc.add(.internetPassword, attributes: attrs(["acct": "alice", "srvr": "mail"]), data: bytes("4"))
        #expect(try kc.find(Query(.genericPassword, attrs(["acct": "alice"]))).count == 3)
        #expect(try kc.snapshot().count == 4)
    }

    @Test func update_changesAttributesAndData_keepsCdatAndMovesMdat() throws {
        let (disk, kc) = try keychain()
        let added = try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail", "labl": "old"]), data: bytes("old"))
        let n = try kc.update(
            Query(.genericPassword, attrs(["acct": "alice"])),
            attributes: ["labl": .string("new"), "desc": .string("added"), "cdat": .date(0), "mdat": .date(0)],
            data: bytes("new"))
        #expect(n == 1)
        let updated = try #require(try openKeychain(on: disk).find(Query(.genericPassword)).first)
        #expect(updated.persistentRef == added.persistentRef, "an update keeps the item's identity")
        #expect(updated.data == bytes("new"))
        #expect(updated.attributes["labl"] == .string("new"))
        #expect(updated.attributes["desc"] == .string("added"))
        #expect(updated.attributes["acct"] == .string("alice"))
        #expect(updated.attributes["cdat"] == added.attributes["cdat"], "cdat is kept")
        guard case .date(let before) = added.attributes["mdat"], case .date(let after) = updated.attributes["mdat"]
        else {
            Issue.record("dates missing"); return
        }
        #expect(after > before, "mdat moves")
    }

    @Test func update_withoutData_keepsDataAndChangesProtection() throws {
        let (_, kc) = try keychain()
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("keep me"))
        try kc.update(Query(.genericPassword), attributes: attrs(["labl": "x"]), protection: .alwaysThisDeviceOnly)
        let item = try #require(try kc.find(Query(.genericPassword)).first)
        #expect(item.data == bytes("keep me"))
        #expect(item.protection == .alwaysThisDeviceOnly)
        #expect(item.attributes["pdmn"] == .string("dku"))
    }

    @Test func update_thatWouldCollide_throwsDuplicateItemAndChangesNoItem() throws {
        let (disk, kc) = try keychain()
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b"))
        let before = try kc.snapshot()
        let file = disk.keychainBytes

        expectKeychainError(.duplicateItem) {
            try kc.update(
                Query(.genericPassword, attrs(["acct": "bob"])), attributes: attrs(["acct": "alice"]), data: bytes("b2")
            )
        }
        expectKeychainError(.duplicateItem, "two matches given the same key collide with each other") {
            try kc.update(Query(.genericPassword, attrs(["svce": "mail"])), attributes: attrs(["acct": "carol"]))
        }
        #expect(try kc.snapshot() == before)
        #expect(disk.keychainBytes == file)
        #expect(try openKeychain(on: disk).snapshot() == before)
    }

    @Test func update_ofSeveralItems_isAllOrNothing() throws {
        let (disk, kc) = try keychain()
        // Three items labelled "batch"; changing their service to "chat" collides only for the
        // last one (bob/chat exists), so the first two must not change either.
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail", "labl": "batch"]), data: bytes("a"))
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "carol", "svce": "mail", "labl": "batch"]), data: bytes("c"))
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "mail", "labl": "batch"]), data: bytes("b"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob", "svce": "chat"]), data: bytes("other"))
        let before = try kc.snapshot()
        let file = disk.keychainBytes

        expectKeychainError(.duplicateItem) {
            try kc.update(
                Query(.genericPassword, attrs(["labl": "batch"])), attributes: attrs(["svce": "chat"]),
                data: bytes("new"))
        }
        #expect(try kc.snapshot() == before)
        #expect(disk.keychainBytes == file)

        // Without the collision the same update changes all three in one transaction.
        try kc.delete(Query(.genericPassword, attrs(["acct": "bob", "svce": "chat"])))
        let end = disk.keychainBytes.count
        #expect(
            try kc.update(
                Query(.genericPassword, attrs(["labl": "batch"])), attributes: attrs(["svce": "chat"]),
                data: bytes("new")) == 3)
        let batch = try openKeychain(on: disk).find(Query(.genericPassword, attrs(["labl": "batch"])))
        #expect(batch.count == 3)
        #expect(batch.allSatisfy { $0.attributes["svce"] == .string("chat") && $0.data == bytes("new") })
        #expect(Set(batch.map { $0.attributes["mdat"]! }).count == 1, "one transaction, one modification date")
        // The three records are one transaction: all but the last carry the continues flag.
        let appended = Array(disk.keychainBytes[end...])
        var offset = 0, flags: [UInt8] = [], types: [UInt8] = []
        while offset < appended.count {
            let header = try FrameHeader.decode(appended[offset..<offset + FormatConstants.frameHeaderSize])
            flags.append(header.flags)
            types.append(header.type)
            offset += header.recordSize
        }
        // Each put follows the version it replaces (spec §7.7) and is followed by its
        // attribute-hash record (§7.6), all in the same transaction.
        #expect(types == [0x81, 1, 0x80, 0x81, 1, 0x80, 0x81, 1, 0x80])
        #expect(flags == [1, 1, 1, 1, 1, 1, 1, 1, 0])
    }

    @Test func update_whenNothingMatches_throwsItemNotFound() throws {
        let (disk, kc) = try keychain()
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        let file = disk.keychainBytes
        expectKeychainError(.itemNotFound) {
            try kc.update(Query(.genericPassword, attrs(["acct": "nobody"])), attributes: attrs(["labl": "x"]))
        }
        expectKeychainError(.itemNotFound) { try kc.update(Query(.internetPassword), attributes: attrs(["labl": "x"])) }
        #expect(disk.keychainBytes == file)
    }

    @Test func delete_removesEveryMatchAndNothingElse() throws {
        let (disk, kc) = try keychain()
        for name in ["alice", "bob", "carol"] {
            try kc.add(.genericPassword, attributes: attrs(["acct": name, "svce": "mail"]), data: bytes(name))
        }
        let kept = try kc.add(
            .genericPassword, attributes: attrs(["acct": "dave", "svce": "chat"]), data: bytes("dave"))
        let keptInet = try kc.add(
            .internetPassword, attributes: attrs(["acct": "erin", "srvr": "mail"]), data: bytes("erin"))

        #expect(try kc.delete(Query(.genericPassword, attrs(["svce": "mail"]))) == 3)
        #expect(try kc.find(Query(.genericPassword, attrs(["svce": "mail"]))).isEmpty)
        let remaining = try openKeychain(on: disk).snapshot()
        #expect(remaining == [kept.persistentRef: kept, keptInet.persistentRef: keptInet])

        expectKeychainError(.itemNotFound) { try kc.delete(Query(.genericPassword, attrs(["svce": "mail"]))) }
        // The unique key is free again.
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("again"))
    }

    @Test func find_withLimit_returnsAtMostThatMany() throws {
        let (_, kc) = try keychain()
        for i in 0..<5 { try kc.add(.genericPassword, attributes: attrs(["acct": "user\(i)"]), data: []) }
        #expect(try kc.find(Query(.genericPassword), limit: 2).count == 2)
        #expect(try kc.find(Query(.genericPassword)).count == 5)
    }
}
