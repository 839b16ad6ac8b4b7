import Foundation
#if canImport(Glibc)
    import Glibc
#endif
@testable import Latchkey
import LatchkeyFormat
import Testing

/// The engine's streaming transaction (KeychainStore+Streaming.swift): records appended with
/// the continues flag as they come, one fsync at the end, cut back on failure.
@Suite struct StreamingTransactionTests {
    func plaintext(_ i: Int, padding: Int = 0) -> ItemPlaintext {
        ItemPlaintext(
            itemClass: .genericPassword,
            attributes: ["acct": .string("s\(i)"), "cdat": .date(1000), "mdat": .date(Double(2000 + i))],
            data: Array("v\(i)".utf8) + [UInt8](repeating: 0x2E, count: padding))
    }

    func uuid(_ i: Int) -> [UInt8] {
        [0xAB] + [UInt8](repeating: 0, count: 11) + withUnsafeBytes(of: UInt32(i).bigEndian, Array.init)
    }

    @Test func largeTransaction_landsWhole_withUUIDsAndDatesAsGiven() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let n = 5000  // several 1 MiB batches
        try kc.localStore!.withStreamingTransaction { tx in
            for i in 0..<n { try tx.put(uuid: uuid(i), plaintext: plaintext(i), protection: .whenUnlocked, flags: 0) }
        }
        let reopened = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        let items = try reopened.find(Query(.genericPassword, ["acct": .string("s4321")]))
        #expect(items.count == 1)
        #expect(items.first?.persistentRef == Array("genp".utf8) + uuid(4321))
        #expect(items.first?.attributes["mdat"] == .date(6321))
        #expect(try reopened.localStore!.liveItemCount == n)
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
        #expect(try kc.localStore!.liveItemCount == 1)
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
            let c = try tx.conflicts(
                uuid: uuid(7), uniqueKey: UniqueKey(itemClass: .genericPassword, attributes: plaintext(7).attributes))
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
            for i in 0..<3000 {
                try tx.put(uuid: uuid(i), plaintext: plaintext(i, padding: 1024), protection: .always, flags: 0)
            }
            // Batches are on disk now (once the worker that writes them has caught up), without
            // their closing record: a reader sees none of them.
            try tx.settle()
            try reader.localStore!.refresh()
            #expect(try reader.localStore!.liveItemCount == 0)
            #expect(try s.bytes(s.keychainPath).count > size0)
        }
        try reader.localStore!.refresh()
        #expect(try reader.localStore!.liveItemCount == 3000)
    }

    /// A write that fails on the worker thread that seals and writes the records
    /// (RecordSealer) fails the transaction with the error a write on the caller's thread
    /// gives, and cuts the file back: nothing of the transaction stays.
    @Test func writeFailingOnTheWorker_failsWithTheSameError_andCutsTheFileBack() throws {
        let s = try BackupSandbox()
        _ = try s.makeSource(passcode: nil)
        let fs = FaultyFileSystem(PosixFileSystem.shared)
        let kc = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath, fs: fs)
        try kc.add(.genericPassword, attributes: ["acct": .string("before")], data: [1])
        let before = try s.bytes(s.keychainPath)
        let count = Lock()
        nonisolated(unsafe) var writes = 0
        nonisolated(unsafe) var onAnotherThread = false
        let caller = pthread_self()
        fs.beforeWrite = { _, _, size in
            count.lock(); defer { count.unlock() }
            // The third batch of about 1 MiB: the first two are on disk.
            guard size >= StreamingTransaction.batchSize else { return }
            writes += 1
            if writes == 3 {
                onAnotherThread = pthread_equal(pthread_self(), caller) == 0
                throw IOFailure("pwrite", s.keychainPath, EIO)
            }
        }
        let threaded = keychainError {
            try kc.localStore!.withStreamingTransaction { tx in
                for i in 0..<5000 {
                    try tx.put(uuid: uuid(i), plaintext: plaintext(i, padding: 1024), protection: .always, flags: 0)
                }
            }
        }
        count.lock()
        #expect(writes == 3 && onAnotherThread, "the failing write ran on the worker")
        count.unlock()
        #expect(try s.bytes(s.keychainPath) == before)
        #expect(try kc.localStore!.liveItemCount == 1)

        // The same failure on the caller's thread: a transaction too small for the worker,
        // written by `finish`.
        fs.beforeWrite = { _, _, _ in throw IOFailure("pwrite", s.keychainPath, EIO) }
        let inline = keychainError {
            try kc.localStore!.withStreamingTransaction { tx in
                try tx.put(uuid: uuid(1), plaintext: plaintext(1), protection: .always, flags: 0)
            }
        }
        #expect(threaded?.status == .io)
        #expect(threaded?.message == inline?.message)
        #expect(
            threaded?.message.contains("could not write to the keychain") == true, "\(String(describing: threaded))")
        #expect(try s.bytes(s.keychainPath) == before)

        // Still writable and consistent.
        fs.beforeWrite = { _, _, _ in }
        try kc.localStore!.withStreamingTransaction { tx in
            for i in 0..<1000 { try tx.put(uuid: uuid(i), plaintext: plaintext(i), protection: .always, flags: 0) }
        }
        let reopened = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        #expect(try reopened.localStore!.liveItemCount == 1001)
        #expect(reopened.verify().ok)
    }

    /// A transaction stopped by its caller while the worker has batches queued and is writing
    /// (the caller's body throws): the worker is stopped before the file is cut back, so no
    /// write lands after the cut, and a reader finds the keychain as it was.
    @Test func callerFailingWhileTheWorkerWrites_leavesTheFileAsItWas() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        try kc.add(.genericPassword, attributes: ["acct": .string("before")], data: [1])
        let before = try s.bytes(s.keychainPath)
        struct Stop: Error {}
        for round in 0..<3 {
            #expect(throws: Stop.self) {
                try kc.localStore!.withStreamingTransaction { tx in
                    for i in 0..<(2000 + 1500 * round) {
                        try tx.put(uuid: uuid(i), plaintext: plaintext(i, padding: 512), protection: .always, flags: 0)
                    }
                    throw Stop()
                }
            }
            #expect(try s.bytes(s.keychainPath) == before)
        }
        #expect(try Keychain.open(path: s.keychainPath, devicePath: s.devicePath).verify().ok)
    }

    /// Records sealed on the worker land exactly where the transaction placed them: after a
    /// large transaction with deletes between puts, the handle's table (placed before the
    /// records were written) and a fresh scan of the file agree, and every item reads back.
    @Test func recordsSealedOnTheWorker_landWhereTheTransactionPlacedThem() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        try kc.localStore!.withStreamingTransaction { tx in
            for i in 0..<3000 {
                try tx.put(uuid: uuid(i), plaintext: plaintext(i, padding: i % 700), protection: .always, flags: 0)
                if i % 7 == 3 { try tx.delete(uuid: uuid(i - 2)) }
            }
        }
        let store = kc.localStore!
        let placed = try store.storedItems()
        #expect(placed.count == 3000 - (0..<3000).filter { $0 % 7 == 3 }.count)
        for item in placed.prefix(500) {
            let p = try store.read(item)
            #expect(p.attributes["acct"] == plaintext(Int(item.uuid[15]) | Int(item.uuid[14]) << 8).attributes["acct"])
        }
        let reopened = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        #expect(try reopened.localStore!.storedItems().map { $0.uuid } == placed.map { $0.uuid })
        #expect(try reopened.localStore!.storedItems().map { $0.slot.offset } == placed.map { $0.slot.offset })
        #expect(reopened.verify().ok)
    }
}
