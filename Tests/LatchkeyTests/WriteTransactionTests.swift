import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// The one write path (`KeychainStore.write`, `WriteTransaction`): both kinds of commit leave
/// the state in memory exactly as a scan of the file they wrote builds it, and lay out the same
/// records for the same changes.
@Suite struct WriteTransactionTests {
    func plaintext(_ account: String, _ data: String) -> ItemPlaintext {
        ItemPlaintext(
            itemClass: .genericPassword,
            attributes: [
                "acct": .string(account), "svce": .string("write-path"), "cdat": .date(1000), "mdat": .date(2000)
            ],
            data: bytes(data))
    }

    func id(_ i: UInt8) -> ID16 { ID16([0xC0] + [UInt8](repeating: 0, count: 14) + [i]) }

    /// What a fresh reader of the file builds, compared with what the writer kept in memory:
    /// the live items, their attribute hashes, the end, the sequence number, the record
    /// counts, and how many changes the journal has seen.
    func expectStateMatchesTheFile(_ store: KeychainStore, _ comment: Comment) throws {
        var fresh = LogState(header: store.header, headerSize: store.headerSize)
        _ = try store.scanFresh(&fresh)
        try store.materializeItems()
        let kept = Dictionary(uniqueKeysWithValues: store.log.items.map { ($0.key, $0.value) })
        let scanned = Dictionary(uniqueKeysWithValues: fresh.items.map { ($0.key, $0.value) })
        #expect(kept == scanned, comment)
        for id in scanned.keys {
            #expect(store.log.attributes.state(id) == fresh.attributes.state(id), comment)
        }
        #expect(store.log.end == fresh.end, comment)
        #expect(store.log.lastSequence == fresh.lastSequence, comment)
        #expect(store.log.lastRecordOffset == fresh.lastRecordOffset, comment)
        #expect(store.log.recordCount == fresh.recordCount, comment)
        #expect(store.log.skippedAncillary == fresh.skippedAncillary, comment)
        #expect(store.log.journalEnd == fresh.journalEnd, comment)
    }

    @Test func batchedAndStreamingCommits_leaveTheStateAScanBuilds() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        let store = kc.localStore!
        try store.write { tx in
            try tx.commit([
                .put(id: id(1), plaintext: plaintext("a", "1"), protection: .always, flags: 0),
                .put(id: id(2), plaintext: plaintext("b", "2"), protection: .afterFirstUnlock, flags: 0)
            ])
        }
        try expectStateMatchesTheFile(store, "after a batched add")
        try store.write { tx in
            // An update that takes a unique key another item gives up in the same transaction.
            try tx.commit([
                .delete(id(2)), .put(id: id(1), plaintext: plaintext("b", "1b"), protection: .always, flags: 0)
            ])
        }
        try expectStateMatchesTheFile(store, "after a batched update and delete")
        try store.withStreamingTransaction { tx in
            try tx.put(uuid: id(3).bytes, plaintext: plaintext("c", "3"), protection: .always, flags: 0)
            try tx.put(uuid: id(4).bytes, plaintext: plaintext("d", "4"), protection: .afterFirstUnlock, flags: 0)
            try tx.delete(uuid: id(1).bytes)
        }
        try expectStateMatchesTheFile(store, "after a streaming transaction")
        try store.write { tx in
            try tx.commit([.put(id: id(5), plaintext: plaintext("b", "5"), protection: .always, flags: 0)])
        }
        try expectStateMatchesTheFile(store, "after a batched add that follows it")
        #expect(try openKeychain(on: disk).verify().ok)
    }

    @Test func aRefusedBatchedCommit_writesNothing() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        let store = kc.localStore!
        try store.write {
            try $0.commit([.put(id: id(1), plaintext: plaintext("a", "1"), protection: .always, flags: 0)])
        }
        let before = disk.keychainBytes
        expectKeychainError(.duplicateItem) {
            try store.write {
                try $0.commit([
                    .put(id: id(2), plaintext: plaintext("x", "2"), protection: .always, flags: 0),
                    .put(id: id(3), plaintext: plaintext("a", "3"), protection: .always, flags: 0)
                ])
            }
        }
        expectKeychainError(.itemNotFound) {
            try store.write {
                try $0.commit([
                    .put(id: id(4), plaintext: plaintext("y", "4"), protection: .always, flags: 0), .delete(id(9))
                ])
            }
        }
        #expect(disk.keychainBytes == before)
        try expectStateMatchesTheFile(store, "after two refused commits")
    }

    /// The frames (type, flags, sequence number, size) of every record after the header.
    func frames(_ file: [UInt8], from start: Int) throws -> [FrameHeader] {
        var out: [FrameHeader] = []
        var at = start
        while at < file.count {
            let frame = try FrameHeader.decode(file[at...])
            out.append(frame)
            at += frame.recordSize
        }
        return out
    }

    @Test func batchedAndStreamingCommits_layOutTheSameRecords() throws {
        let changes: [(ID16, ItemPlaintext, ProtectionClass)] = [
            (id(1), plaintext("a", "1"), .always),
            (id(2), plaintext("b", String(repeating: "2", count: 300)), .afterFirstUnlock),
            (id(1), plaintext("a", "1 again"), .always)
        ]
        let batchedDisk = try makeDisk()
        let batched = try createKeychain(on: batchedDisk, passcode: nil).localStore!
        try batched.write { tx in
            try tx.commit(
                changes.map { .put(id: $0.0, plaintext: $0.1, protection: $0.2, flags: 0) } + [.delete(id(2))])
        }
        let streamingDisk = try makeDisk()
        let streaming = try createKeychain(on: streamingDisk, passcode: nil).localStore!
        try streaming.withStreamingTransaction { tx in
            for c in changes { try tx.put(uuid: c.0.bytes, plaintext: c.1, protection: c.2, flags: 0) }
            try tx.delete(uuid: id(2).bytes)
        }
        let a = try frames(batchedDisk.keychainBytes, from: batched.headerSize)
        let b = try frames(streamingDisk.keychainBytes, from: streaming.headerSize)
        #expect(a.count == 7)
        #expect(a == b)
        #expect(a.dropLast().allSatisfy(\.continues) && a.last?.continues == false)
        #expect(batchedDisk.keychainBytes.count == streamingDisk.keychainBytes.count)
    }
}

/// The attribute-hash table both writers keep: hashes set over hashes (a put without a
/// `put(_:)` before it) survive the pool's compaction.
@Suite struct AttributeHashTableReplaceTests {
    @Test func hashesReplacedInPlace_stayWhereTheirEntriesSay() {
        var table = AttributeHashTable()
        let ids = (0..<600).map { ID16(high: 7, low: UInt64($0)) }
        func hashes(_ round: Int, _ i: Int) -> [UInt64] { (0..<4).map { UInt64(round * 1_000_000 + i * 10 + $0) } }
        for round in 0..<8 {
            for (i, id) in ids.enumerated() { table.setHashes(id, hashes(round, i)) }
        }
        for (i, id) in ids.enumerated() { #expect(table.state(id) == .hashed(hashes(7, i))) }
        var entries = table.sortedFreshEntries()
        var count = 0
        while entries.next() != nil { count += 1 }
        #expect(count == ids.count * 4)
    }
}
