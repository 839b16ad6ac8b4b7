import Testing
@testable import Latchkey
import LatchkeyFormat

/// Compaction: live records rewritten into a new file, atomically (spec §11.5).
@Suite struct CompactionTests {
    @Test func compact_afterDeletes_keepsEveryLiveItemAndShrinksTheFile() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        for i in 0..<8 {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "user\(i)", "svce": "mail"]), data: bytes("secret \(i)"),
                protection: i % 2 == 0 ? .whenUnlocked : .alwaysThisDeviceOnly)
        }
        try kc.update(
            Query(.genericPassword, attrs(["acct": "user1"])), attributes: attrs(["labl": "changed"]),
            data: bytes("new 1"))
        for i in [2, 3, 5, 7] { try kc.delete(Query(.genericPassword, attrs(["acct": "user\(i)"]))) }
        let live = try kc.snapshot()
        #expect(live.count == 4)
        let sizeBefore = disk.keychainBytes.count

        let (before, after) = try kc.compact()
        #expect(before == UInt64(sizeBefore))
        #expect(after == UInt64(disk.keychainBytes.count))
        #expect(after < before)
        #expect(try kc.snapshot() == live, "the compacting instance keeps working")

        let reopened = try openKeychain(on: disk)
        try reopened.unlock(passcode: TestEnv.passcode)
        #expect(try reopened.snapshot() == live, "every live item, with its persistent reference, attributes and data")
        #expect(reopened.verify().ok)
        let info = try reopened.info()
        #expect(
            info.records == 8 + 5,
            "the live put records, each with its attribute-hash record, and the five versions the update and the deletes kept (spec §11.5, §7.7)"
        )
        #expect(!disk.listFiles().contains { $0.contains(".compact-") })

        // The compacted file is a normal keychain: it takes new writes, and the unique keys still hold.
        try reopened.add(.genericPassword, attributes: attrs(["acct": "user2", "svce": "mail"]), data: bytes("reborn"))
        expectKeychainError(.duplicateItem) {
            try reopened.add(.genericPassword, attributes: attrs(["acct": "user0", "svce": "mail"]), data: [])
        }
    }

    @Test func compact_whileLocked_copiesItemsUnread() throws {
        let disk = try makeDisk()
        let created = try createKeychain(on: disk)
        try created.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        try created.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"))
        try created.delete(Query(.genericPassword, attrs(["acct": "bob"])))
        let live = try created.snapshot()

        let locked = try openKeychain(on: disk)
        #expect(!locked.isAvailable(.whenUnlocked))
        let (before, after) = try locked.compact()
        #expect(after < before)
        try locked.unlock(passcode: TestEnv.passcode)
        #expect(try locked.snapshot() == live)
    }

    @Test func compact_ofEmptyKeychain_leavesHeaderOnly() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: [])
        try kc.delete(Query(.genericPassword))
        try kc.compact()
        let header = try FileHeader.peekLength(disk.keychainBytes)
        #expect(disk.keychainBytes.count > header, "the deleted item's version stays in the history (spec §7.7)")
        try kc.localStore!.compact(dropHistory: true)
        #expect(disk.keychainBytes.count == header)
        #expect(try openKeychain(on: disk).snapshot().isEmpty)
    }
}
