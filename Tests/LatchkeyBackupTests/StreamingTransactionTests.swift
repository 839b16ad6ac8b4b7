import Foundation
@testable import Latchkey
import LatchkeyFormat
import Testing

/// The engine's streaming transaction (KeychainStore+Streaming.swift): records appended with
/// the continues flag as they come, one fsync at the end, cut back on failure.
@Suite struct StreamingTransactionTests {
    func plaintext(_ i: Int, padding: Int = 0) -> ItemPlaintext {
        ItemPlaintext(itemClass: .genericPassword,
                      attributes: ["acct": .string("s\(i)"), "cdat": .date(1000), "mdat": .date(Double(2000 + i))],
                      data: Array("v\(i)".utf8) + [UInt8](repeating: 0x2E, count: padding))
    }

    func uuid(_ i: Int) -> [UInt8] { [0xAB] + [UInt8](repeating: 0, count: 11) + withUnsafeBytes(of: UInt32(i).bigEndian, Array.init) }

    @Test func largeTransaction_landsWhole_withUUIDsAndDatesAsGiven() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let n = 5000   // several 1 MiB batches
        try kc.localStore!.withStreamingTransaction { tx in
            for i in 0..<n { try tx.put(uuid: uuid(i), plaintext: plaintext(i), protection: .whenUnlocked, flags: 0) }
        }
        let reopened = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        let items = try reopened.find(Query(.genericPassword, ["acct": .string("s4321")]))
        #expect(items.count == 1)
        #expect(items.first?.persistentRef == Array("genp".utf8) + uuid(4321))
        #expect(items.first?.attributes["mdat"] == .date(6321))
        #expect(reopened.localStore!.liveItemCount == n)
        #expect(reopened.verify().ok)
    }

    @Test func failureInTheMiddle_cutsTheFileBack_andChangesNothing() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        try kc.add(.genericPassword, attributes: ["acct": .string("before")], data: [1])
        let before = try s.bytes(s.keychainPath)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try kc.localStore!.withStreamingTransaction { tx in
                for i in 0..<4000 { try tx.put(uuid: uuid(i), plaintext: plaintext(i), protection: .always, flags: 0) }
                throw Stop()
            }
        }
        #expect(try s.bytes(s.keychainPath) == before)
        #expect(kc.localStore!.liveItemCount == 1)
        // The keychain is still writable and consistent.
        try kc.add(.genericPassword, attributes: ["acct": .string("after")], data: [2])
        #expect(try Keychain.open(path: s.keychainPath, devicePath: s.devicePath).verify().ok)
    }

    @Test func duplicateUniqueKey_inTheTransaction_isRefused() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let before = try s.bytes(s.keychainPath)
        let e = keychainError {
            try kc.localStore!.withStreamingTransaction { tx in
                try tx.put(uuid: uuid(1), plaintext: plaintext(1), protection: .always, flags: 0)
                try tx.put(uuid: uuid(2), plaintext: plaintext(1), protection: .always, flags: 0)
            }
        }
        #expect(e?.status == .duplicateItem)
        #expect(try s.bytes(s.keychainPath) == before)
    }

    @Test func deleteThenPut_replacesAnItemUnderAnotherUUID() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let old = try kc.add(.genericPassword, attributes: ["acct": .string("s7")], data: [1])
        try kc.localStore!.withStreamingTransaction { tx in
            let c = tx.conflicts(uuid: uuid(7), uniqueKey: UniqueKey(itemClass: .genericPassword, attributes: plaintext(7).attributes))
            #expect(c.count == 1 && c.first?.uuid == Array(old.persistentRef.suffix(16)))
            try tx.delete(uuid: c[0].uuid)
            try tx.put(uuid: uuid(7), plaintext: plaintext(7), protection: .always, flags: 0)
        }
        let found = try kc.find(Query(.genericPassword, ["acct": .string("s7")]))
        #expect(found.map(\.persistentRef) == [Array("genp".utf8) + uuid(7)])
    }

    @Test func unclosedGroup_isIgnoredByReaders() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let size0 = try s.bytes(s.keychainPath).count
        // A reader that had the keychain open before (opening now would wait for the lock to
        // cut the unclosed group off).
        let reader = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        try kc.localStore!.withStreamingTransaction { tx in
            for i in 0..<3000 { try tx.put(uuid: uuid(i), plaintext: plaintext(i, padding: 1024), protection: .always, flags: 0) }
            // Batches are on disk now, without their closing record: a reader sees none of them.
            try reader.localStore!.refresh()
            #expect(reader.localStore!.liveItemCount == 0)
            #expect(try s.bytes(s.keychainPath).count > size0)
        }
        try reader.localStore!.refresh()
        #expect(reader.localStore!.liveItemCount == 3000)
    }
}
