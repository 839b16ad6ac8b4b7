import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Issue 16's scale work that keeps the format: the compact item table (`IDMap`), an index
/// held whole in memory once a handle's lookups have read enough of it, a streaming import
/// whose own table becomes the store's (no second read of what it wrote), and `verify`
/// decrypting as it scans.
@Suite struct ScaleTests {
    static func account(_ i: Int) -> [String: AttributeValue] { attrs(["acct": "user-\(i)", "svce": "s", "agrp": "g"]) }

    static func secret(_ kc: Keychain, _ i: Int) throws -> [UInt8]? {
        try kc.find(Query(.genericPassword, account(i))).first?.data
    }

    // MARK: IDMap

    /// Inserts, replacements and removals in a random order (removals shift probe chains back
    /// and move the last entry into the hole) agree with a Dictionary at every step.
    @Test func idMap_agreesWithADictionary() throws {
        var rng = SystemRandomNumberGenerator()
        var map = IDMap<Int>()
        var model: [ID16: Int] = [:]
        var keys: [ID16] = []
        for step in 0..<20_000 {
            let r = Int.random(in: 0..<10, using: &rng)
            if r < 5 || keys.isEmpty {
                let k = ID16(high: UInt64.random(in: 0...UInt64.max), low: UInt64.random(in: 0...3))
                keys.append(k)
                map[k] = step
                model[k] = step
            } else if r < 7 {
                let k = keys.randomElement()!
                map[k] = -step
                model[k] = -step
            } else {
                let k = keys.randomElement()!
                #expect(map.removeValue(forKey: k) == model.removeValue(forKey: k))
            }
            if step % 997 == 0 {
                #expect(map.count == model.count)
                for k in keys { #expect(map[k] == model[k]) }
                #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == model)
            }
        }
        for k in keys { #expect(map[k] == model[k]) }
    }

    /// SlotMap (the changed items, found by UUID and by unique-key hash in one lookup) agrees
    /// with two dictionaries through sets, replacements with another hash, deletion markers and
    /// removals (which move the last entry and its hash bucket). Few distinct hash words make
    /// long probe chains and fingerprint clashes; every answer is checked against the model.
    @Test func slotMap_agreesWithTwoDictionaries() throws {
        var rng = SystemRandomNumberGenerator()
        var map = SlotMap()
        var model: [ID16: ItemSlot?] = [:]
        var ids: [ID16] = []
        func slot(_ hash: ID16, _ n: Int) -> ItemSlot {
            ItemSlot(
                offset: UInt64(n), recordSize: 1, classTag: 0, protection: .whenUnlocked, flags: 0, uniqueHash: hash,
                sequence: UInt64(n))
        }
        func holder(_ hash: ID16) -> ID16? { model.first { $0.value?.uniqueHash == hash }?.key }
        for step in 0..<12_000 {
            let r = Int.random(in: 0..<10, using: &rng)
            let hash = ID16(high: UInt64.random(in: 0...7, using: &rng), low: UInt64.random(in: 0...400, using: &rng))
            if r < 5 || ids.isEmpty {
                let id = ID16(high: UInt64.random(in: 0...UInt64.max, using: &rng), low: 0)
                guard holder(hash) == nil else { continue }
                ids.append(id)
                map.set(id, slot(hash, step)); model[id] = slot(hash, step)
            } else if r < 7 {
                let id = ids.randomElement(using: &rng)!
                guard holder(hash) == nil || holder(hash) == id else { continue }
                map.set(id, slot(hash, step)); model[id] = slot(hash, step)
            } else if r < 8 {
                let id = ids.randomElement(using: &rng)!
                map.set(id, nil); model[id] = .some(nil)
            } else {
                let id = ids.randomElement(using: &rng)!
                map.remove(id); model[id] = nil
            }
            if step % 499 == 0 {
                #expect(map.count == model.count)
                for id in ids { #expect(map[id] == model[id]) }
                for (id, value) in model {
                    guard let live = value else { continue }
                    let found = map.owner(live.uniqueHash)
                    #expect(found?.id == id && found?.slot == live)
                }
                #expect(map.owner(ID16(high: 99, low: 99)) == nil)
            }
        }
        for (id, value) in model {
            if let live = value { #expect(map.owner(live.uniqueHash)?.id == id) }
        }
    }

    // MARK: The index held in memory

    /// A handle whose lookups have read enough pages holds the whole index in memory, and
    /// still sees another process's add, update and delete (the open file's status is checked
    /// at every call, O(1), and the records after it are applied).
    @Test func manyLookups_holdTheIndexInMemory_andStillSeeAnotherProcesssWrites() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(500)  // 8 item pages, 4 unique-key pages
        let reader = try openKeychain(on: disk)
        reader.localStore!.indexPromotionPages = 4
        #expect(reader.localStore!.usesIndex)
        for i in stride(from: 0, to: 500, by: 37) { #expect(try Self.secret(reader, i) == bytes("secret-\(i)")) }
        #expect(!reader.localStore!.usesIndex, "the index is still read page by page")

        writer.localStore!.indexTailLimit = .max
        try writer.add(.genericPassword, attributes: Self.account(1000), data: bytes("late"))
        _ = try writer.update(Query(.genericPassword, Self.account(3)), attributes: [:], data: bytes("changed"))
        _ = try writer.delete(Query(.genericPassword, Self.account(4)))
        #expect(try Self.secret(reader, 1000) == bytes("late"))
        #expect(try Self.secret(reader, 3) == bytes("changed"))
        #expect(try Self.secret(reader, 4) == nil)
        #expect(try reader.snapshot() == IndexTests.truth(disk))
    }

    /// The records after the index are applied without reading it (ItemTable, spec §17.5):
    /// an open after a tail of 100 records reads no index page beyond the header, whatever
    /// the index's size. Applying them with two lookups each read O(log N) pages a record: at
    /// 1,000,000 items an open after 3,000 records spent 130 ms there, and the pages it read
    /// made a one-shot `latchkey find` hold the whole index. A find then reads the pages of
    /// its own lookups, and many lookups still promote a busy handle.
    /// ID16's 16-byte reading is the generic one's, at any slice offset; other lengths take the
    /// generic path.
    @Test func id16_fromSixteenBytes_readsAsTheGenericInitializer() {
        var rng = SplitMix(seed: 3)
        for n in [0, 1, 8, 15, 16, 17, 32] {
            let bytes = (0..<(n + 5)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let slice = bytes[5...]
            #expect(ID16(slice) == ID16(slice.lazy.map { $0 }), "\(n) bytes")
            #expect(ID16(Array(slice)) == ID16(slice.lazy.map { $0 }), "\(n) bytes")
        }
    }

    @Test func recordsAfterTheIndex_areAppliedWithoutReadingIt() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(500)
        writer.localStore!.indexTailLimit = .max
        try writer.add(
            contentsOf: (1000..<1100).map {
                NewItem(.genericPassword, attributes: Self.account($0), data: bytes("tail-\($0)"))
            })
        _ = try writer.update(Query(.genericPassword, Self.account(3)), attributes: [:], data: bytes("changed"))
        _ = try writer.delete(Query(.genericPassword, Self.account(4)))
        let reader = try openKeychain(on: disk)
        #expect(reader.localStore!.usesIndex)
        #expect(reader.localStore!.log.items.base?.pagesRead == 0, "the open read index pages to apply the tail")
        #expect(!reader.localStore!.log.items.isChecked, "the tail's rules were checked against the index at open")
        #expect(try Self.secret(reader, 1050) == bytes("tail-1050"))
        #expect(try Self.secret(reader, 3) == bytes("changed"))
        #expect(try Self.secret(reader, 4) == nil)
        #expect(try Self.secret(reader, 7) == bytes("secret-7"))
        #expect(reader.localStore!.usesIndex)
        reader.localStore!.indexPromotionPages = 4
        for i in stride(from: 0, to: 500, by: 37) {
            #expect(try Self.secret(reader, i) == (i == 3 ? bytes("changed") : i == 4 ? nil : bytes("secret-\(i)")))
        }
        #expect(!reader.localStore!.usesIndex, "many lookups no longer hold the whole index")
        #expect(try reader.snapshot() == IndexTests.truth(disk))
    }

    /// A page changed after the handle opened the index, met when the handle reads the whole
    /// index into memory: its MAC fails, nothing of the index is used, the items come from the
    /// log, and every answer is the written one.
    @Test func tamperedPage_metWhenTheIndexIsReadWhole_isNeverUsed() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(500)
        let expected = try writer.snapshot()
        let reader = try openKeychain(on: disk)
        reader.localStore!.indexPromotionPages = 4
        #expect(try Self.secret(reader, 250) == bytes("secret-250"))
        var index = try #require(disk.contents(IndexTests.indexPath))
        for page in 1..<index.count / 4096 { index[page * 4096 + 100] ^= 0x01 }  // every entry page
        disk.setContents(IndexTests.indexPath, index)
        for i in 0..<500 { #expect(try Self.secret(reader, i) == bytes("secret-\(i)"), "user-\(i)") }
        #expect(!reader.localStore!.usesIndex)
        #expect(try reader.snapshot() == expected)
    }

    // MARK: Streaming import

    /// After an import, the handle that made it answers from the table the import built:
    /// every slot points at its record (each item reads back), the attribute index that
    /// follows the journal sees the new items, a later write appends at the right place and
    /// sequence, and a new process (without the index, and with the one written) sees the same.
    @Test(arguments: [300, LogState.journalLimit + 200])
    func streamingImport_leavesTheHandleAsAFreshOpenWouldSeeIt(count: Int) throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = .max
        try kc.add(
            contentsOf: (0..<10).map {
                NewItem(.genericPassword, attributes: Self.account($0), data: bytes("secret-\($0)"))
            })
        let byService = Query(.genericPassword, attrs(["svce": "s"]))
        #expect(try kc.find(byService, includeData: false).count == 10)

        let imported = try kc.importItems { importer in
            for i in 10..<10 + count {
                try importer.add(NewItem(.genericPassword, attributes: Self.account(i), data: bytes("secret-\(i)")))
            }
            return importer.accepted
        }
        #expect(imported == count)
        for i in [0, 9, 10, 11, 10 + count / 2, 9 + count] {
            #expect(try Self.secret(kc, i) == bytes("secret-\(i)"), "user-\(i)")
        }
        #expect(try kc.find(byService, includeData: false).count == 10 + count)
        // The handle took over the transaction's attribute hashes too (spec §7.6): a find by
        // account alone decrypts only the item that has it, and finds it.
        for i in [3, 10 + count / 2] {
            let decrypted = kc.localStore!.itemsDecrypted
            let found = try kc.find(Query(.genericPassword, attrs(["acct": "user-\(i)"])))
            #expect(found.map(\.data) == [bytes("secret-\(i)")], "user-\(i)")
            #expect(
                kc.localStore!.itemsDecrypted - decrypted == 1,
                "user-\(i): decrypted \(kc.localStore!.itemsDecrypted - decrypted)")
        }

        kc.localStore!.indexTailLimit = 0
        try kc.add(.genericPassword, attributes: Self.account(-1), data: bytes("after"))
        #expect(kc.verify().ok, "\(kc.verify().problems)")
        let expected = try kc.snapshot()
        #expect(expected.count == 11 + count)
        #expect(try openKeychain(on: disk).snapshot() == expected)
        #expect(try IndexTests.truth(disk) == expected)
    }

    /// An import whose line in the middle repeats a unique key fails whole: the file, the
    /// handle's items and a new process's view are as before it.
    @Test func importWithADuplicateInTheMiddle_changesNothing() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(
            contentsOf: (0..<5).map {
                NewItem(.genericPassword, attributes: Self.account($0), data: bytes("secret-\($0)"))
            })
        let before = disk.keychainBytes
        let snapshot = try kc.snapshot()
        #expect(throws: KeychainError.self) {
            try kc.importItems { importer in
                for i in 100..<400 {
                    try importer.add(
                        NewItem(.genericPassword, attributes: Self.account(i == 250 ? 120 : i), data: bytes("new")))
                }
            }
        }
        #expect(disk.keychainBytes == before)
        #expect(try kc.snapshot() == snapshot)
        #expect(try Self.secret(kc, 120) == nil)
        #expect(try openKeychain(on: disk).snapshot() == snapshot)
    }

    // MARK: verify

    /// `verify` decrypts as it scans: live items are counted once, superseded records are not
    /// reported, and items of a locked class are counted as locked, not checked.
    @Test func verify_countsLiveItems_andLockedOnes() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        for i in 0..<40 {
            try kc.add(
                .genericPassword, attributes: Self.account(i), data: bytes("v1"),
                protection: i < 30 ? .afterFirstUnlock : .whenUnlocked)
        }
        for i in 0..<20 {
            _ = try kc.update(Query(.genericPassword, Self.account(i)), attributes: [:], data: bytes("v2"))
        }
        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == 40 && report.checkedItems == 40 && report.lockedItems == 0)

        let locked = try openKeychain(on: disk)
        let partial = locked.verify()
        #expect(partial.ok, "\(partial.problems)")
        #expect(partial.liveItems == 40 && partial.checkedItems + partial.lockedItems == 40 && partial.lockedItems > 0)
    }
}
