import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// The records after an index are applied without reading it (spec/FORMAT.md §17.5): the two
/// rules of §10.3 that need the index's entries (a put's unique key held by no other live item,
/// a delete of a live item) are checked for a unique key or an item before any answer about
/// it, and for all of them before the items are listed or an index is written. A log that breaks
/// one is reported as damage at the record that breaks it, as an open without an index reports
/// it; never answered from. The logs here are forged with the device secret (records that
/// authenticate), since no writer makes one.
@Suite struct TailRuleTests {
    static func key(_ account: String) -> UniqueKey {
        UniqueKey(itemClass: .genericPassword, attributes: attrs(["acct": account, "svce": "s", "agrp": "g"]))
    }

    /// A keychain of 200 items with an index covering all of them; the UUID of user-5 ("A") and
    /// its put record's payload with another UUID put in ("Y", a put of A's unique key).
    static func setUp() throws -> (disk: MemoryFileSystem, kc: Keychain, a: ID16, putOfY: [UInt8], y: ID16) {
        let (disk, kc) = try IndexTests.indexedKeychain(200)
        let (a, slot) = try #require(try kc.localStore!.slot(uniqueKey: key("user-5")))
        let file = disk.keychainBytes
        var payload = Array(
            file[
                Int(slot.offset) + FormatConstants.frameHeaderSize..<Int(slot.offset) + Int(slot.recordSize)
                    - FormatConstants.frameTagSize])
        let y = ID16(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)
        let clear = try ItemPutPayload.decodeClear(payload[...])
        let at = clear.uuid.startIndex
        #expect(ID16(clear.uuid) == a)
        payload.replaceSubrange(at..<at + 16, with: y.bytes)
        return (disk, kc, a, payload, y)
    }

    /// Appends each (type, payload) as its own closed transaction; returns their offsets.
    @discardableResult
    static func append(_ records: [(RecordType, [UInt8])], to disk: MemoryFileSystem, after kc: Keychain) throws
        -> [Int]
    {
        var file = disk.keychainBytes
        let forger = try FormatEvolutionTests.Forger(file)
        var sequence = kc.localStore!.lastSequence
        var offsets: [Int] = []
        for (type, payload) in records {
            sequence += 1
            offsets.append(file.count)
            file += forger.record(type: type.rawValue, sequence: sequence, payload: payload, at: file.count)
        }
        disk.setContents(TestEnv.keychainPath, file)
        return offsets
    }

    static func expectDamage(at offset: Int, _ reason: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error: the broken rule at byte \(offset) was not reported")
        } catch let e as KeychainError {
            #expect(e.status == .decode)
            #expect(e.message.contains("damaged at byte \(offset) (\(reason))"), "\(e.message)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func putOfAUniqueKeyTheIndexHolds_isDamage_whenThatKeyIsLookedUp() throws {
        let (disk, kc, _, putOfY, _) = try Self.setUp()
        let offsets = try Self.append([(.itemPut, putOfY)], to: disk, after: kc)
        #expect(
            openKeychainForVerify(disk).contains {
                $0.hasPrefix("damage at byte \(offsets[0]): two live items share a unique key")
            })
        let reader = try openKeychain(on: disk)
        #expect(reader.localStore!.usesIndex, "the open needs no index lookup to apply the tail")
        // An item the broken record does not involve is answered.
        #expect(try IndexTests.secret(reader, "user-6") == bytes("secret-6"))
        Self.expectDamage(at: offsets[0], "two live items share a unique key") {
            _ = try IndexTests.secret(reader, "user-5")
        }
        // Then every call, as an open without the index.
        Self.expectDamage(at: offsets[0], "two live items share a unique key") {
            _ = try IndexTests.secret(reader, "user-6")
        }
        let copy = disk.clone()
        try copy.remove(IndexTests.indexPath)
        Self.expectDamage(at: offsets[0], "two live items share a unique key") { _ = try openKeychain(on: copy) }
    }

    /// The rule holds at each record, not only at the end: Y put A's unique key while A still
    /// had it, and A was deleted only after.
    @Test func putOfAUniqueKeyBeforeItsHolderIsDeleted_isDamage() throws {
        let (disk, kc, a, putOfY, _) = try Self.setUp()
        let offsets = try Self.append([(.itemPut, putOfY), (.itemDelete, a.bytes)], to: disk, after: kc)
        let reader = try openKeychain(on: disk)
        Self.expectDamage(at: offsets[0], "two live items share a unique key") {
            _ = try reader.localStore!.slot(uniqueKey: Self.key("user-5"))
        }
    }

    /// The same two records the other way round are a valid log: A is deleted, then Y takes
    /// its unique key. The reader with the index and one without agree.
    @Test func putOfAUniqueKeyAfterItsHolderIsDeleted_isValid() throws {
        let (disk, kc, a, putOfY, y) = try Self.setUp()
        try Self.append([(.itemDelete, a.bytes), (.itemPut, putOfY)], to: disk, after: kc)
        let reader = try openKeychain(on: disk)
        #expect(try reader.localStore!.slot(uniqueKey: Self.key("user-5"))?.0 == y)
        #expect(try reader.localStore!.slot(id: a) == nil)
        let copy = disk.clone()
        try copy.remove(IndexTests.indexPath)
        #expect(try openKeychain(on: copy).localStore!.slot(uniqueKey: Self.key("user-5"))?.0 == y)
    }

    /// A delete of an item that is neither in the index nor put after it: found when the items
    /// are listed (never a shorter list), when an index is written, and by verify.
    @Test func deleteOfAnItemThatDoesNotExist_isDamage_whenTheItemsAreListed() throws {
        let (disk, kc, _, _, _) = try Self.setUp()
        let deleteOfNothing: [(RecordType, [UInt8])] = [(.itemDelete, [UInt8](repeating: 0xAB, count: 16))]
        let offsets = try Self.append(deleteOfNothing, to: disk, after: kc)
        #expect(
            openKeychainForVerify(disk).contains {
                $0.hasPrefix("damage at byte \(offsets[0]): a delete names an item that does not exist")
            })
        let reader = try openKeychain(on: disk)
        #expect(try IndexTests.secret(reader, "user-6") == bytes("secret-6"))
        Self.expectDamage(at: offsets[0], "a delete names an item that does not exist") { _ = try reader.snapshot() }
        // The reader dropped the index (it may write the file): a new open reports the damage.
        Self.expectDamage(at: offsets[0], "a delete names an item that does not exist") {
            _ = try openKeychain(on: disk)
        }

        // A lookup of that very item, before anything is listed, reports it too (not "no such
        // item"), without the count check of a listing to lean on.
        let (disk3, kc3, _, _, _) = try Self.setUp()
        try Self.append(deleteOfNothing, to: disk3, after: kc3)
        let lookup = try openKeychain(on: disk3)
        Self.expectDamage(at: offsets[0], "a delete names an item that does not exist") {
            _ = try lookup.localStore!.slot(id: ID16([UInt8](repeating: 0xAB, count: 16)))
        }

        // A writer appends after it (checking the whole tail at each write would cost what
        // this design saves), and the index write that follows finds it.
        let (disk2, kc2, _, _, _) = try Self.setUp()
        try Self.append(deleteOfNothing, to: disk2, after: kc2)
        let writer = try openKeychain(on: disk2)
        writer.localStore!.indexTailLimit = 0
        Self.expectDamage(at: offsets[0], "a delete names an item that does not exist") {
            try writer.add(
                .genericPassword, attributes: attrs(["acct": "new", "svce": "s", "agrp": "g"]), data: bytes("n"))
            _ = try writer.snapshot()
        }
    }

    /// The index-writer's count of items stays exact when the tail replaced items of the index
    /// (puts of items the open could not tell new from replaced without reading the index).
    @Test func indexWrittenAfterATailOfReplacements_countsTheItemsExactly() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(300)
        writer.localStore!.indexTailLimit = .max
        for i in 0..<40 {
            _ = try writer.update(
                Query(.genericPassword, attrs(["acct": "user-\(i)", "svce": "s", "agrp": "g"])), attributes: [:],
                data: bytes("v2-\(i)"))
        }
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "extra", "svce": "s", "agrp": "g"]), data: bytes("x"))
        _ = try writer.delete(Query(.genericPassword, attrs(["acct": "user-299", "svce": "s", "agrp": "g"])))
        let next = try openKeychain(on: disk)
        next.localStore!.indexTailLimit = 0
        _ = try next.update(
            Query(.genericPassword, attrs(["acct": "user-100", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("v2-100"))
        #expect(try IndexTests.header(disk).itemCount == 300)
        #expect(try openKeychain(on: disk).snapshot() == IndexTests.truth(disk))
        #expect(openKeychainForVerify(disk).isEmpty)
    }

    /// Random tails, valid and not, against the index (seeded: a failure repeats): puts of
    /// the unique keys of 12 items of the index under UUIDs of the index and new ones, and
    /// deletes, in transactions of one to three records. A reader with the index and one
    /// without (the whole log scanned at open, each rule checked at its record) must agree:
    /// on the items, on every unique key's owner, and on the first broken rule (the one with
    /// the index reports it when it lists the items).
    @Test(arguments: 0..<6)
    func randomTails_readWithAndWithoutTheIndex_agree(batch: Int) throws {
        let (disk, kc) = try IndexTests.indexedKeychain(40)
        let file = disk.keychainBytes
        let index = try #require(disk.contents(IndexTests.indexPath))
        let existing = try kc.localStore!.slots()
        let sources: [(ID16, [UInt8])] = existing.prefix(12).map { id, slot in
            (
                slot.uniqueHash,
                Array(
                    file[
                        Int(slot.offset) + FormatConstants.frameHeaderSize..<Int(slot.offset) + Int(slot.recordSize)
                            - FormatConstants.frameTagSize])
            )
        }
        let uuids = existing.prefix(16).map(\.0) + (0..<6).map { ID16(high: 0xFEED, low: UInt64($0)) }
        let forger = try FormatEvolutionTests.Forger(file)
        var rng = SplitMix(seed: UInt64(batch) &* 7919 &+ 1)
        var (valid, damaged) = (0, 0)
        for round in 0..<40 {
            var tail = file
            var sequence = kc.localStore!.lastSequence
            let count = 1 + Int(rng.next() % 8)
            // Five ops in six keep the log valid (tracked in `live`: UUID → unique-key hash);
            // the sixth is drawn at random and may break a rule.
            var live = Dictionary(uniqueKeysWithValues: existing.prefix(16).map { ($0.0, $0.1.uniqueHash) })
            for i in 0..<count {
                let random = rng.next() % 6 == 0
                var payload: [UInt8]
                let type: RecordType
                if rng.next() % 3 == 0 {
                    let candidates = random ? uuids : Array(live.keys).sorted()
                    let u = candidates.isEmpty ? uuids[0] : candidates[Int(rng.next() % UInt64(candidates.count))]
                    (type, payload) = (.itemDelete, u.bytes)
                    live[u] = nil
                } else {
                    let (hash, source) = sources[Int(rng.next() % UInt64(sources.count))]
                    let holder = live.first { $0.value == hash }?.key
                    let u = random || holder == nil ? uuids[Int(rng.next() % UInt64(uuids.count))] : holder!
                    payload = source
                    let at = try ItemPutPayload.decodeClear(payload[...]).uuid.startIndex
                    payload.replaceSubrange(at..<at + 16, with: u.bytes)
                    type = .itemPut
                    live[u] = hash
                }
                sequence += 1
                let continues = i < count - 1 && rng.next() % 2 == 0
                tail += forger.record(
                    type: type.rawValue, continues: continues, sequence: sequence, payload: payload, at: tail.count)
            }
            let withIndex = disk.clone(), withoutIndex = disk.clone()
            withIndex.setContents(TestEnv.keychainPath, tail)
            withIndex.setContents(IndexTests.indexPath, index)
            withoutIndex.setContents(TestEnv.keychainPath, tail)
            let truth: [(ID16, ItemSlot)]
            do {
                truth = try openKeychain(on: withoutIndex).localStore!.slots()
            } catch let e as KeychainError {
                // Damage: the reader with the index reports the same record, at open when the
                // records after the index show it alone, or once it lists the items.
                do {
                    _ = try openKeychain(on: withIndex).localStore!.slots()
                    Issue.record("batch \(batch) round \(round): \(e.message) was not found with the index")
                } catch let f as KeychainError {
                    #expect(f.message == e.message, "batch \(batch) round \(round)")
                }
                damaged += 1
                continue
            }
            let lazy = try openKeychain(on: withIndex)
            #expect(lazy.localStore!.usesIndex, "batch \(batch) round \(round)")
            // Valid: every owner and every item as the scan of the whole log has them.
            let store = lazy.localStore!
            let owners = Dictionary(truth.map { ($0.1.uniqueHash, $0.0) }, uniquingKeysWith: { a, _ in a })
            for (hash, _) in sources {
                let found = try store.withIndexFallback { try store.log.items.owner(hash) }
                #expect(found == owners[hash], "batch \(batch) round \(round)")
            }
            for u in uuids {
                #expect(try store.slot(id: u) == truth.first { $0.0 == u }?.1, "batch \(batch) round \(round)")
            }
            #expect(store.log.items.base != nil, "batch \(batch) round \(round): the lookups dropped the index")
            let listed = try store.slots()
            #expect(
                listed.count == truth.count && Set(listed.map(\.0)) == Set(truth.map(\.0)),
                "batch \(batch) round \(round)")
            valid += 1
        }
        #expect(
            valid >= 5 && damaged >= 5, "\(valid) valid tails and \(damaged) damaged ones: the mix tests too little")
    }

    /// verify's problems for the keychain on `disk` (with its index), from a new handle.
    func openKeychainForVerify(_ disk: MemoryFileSystem) -> [String] {
        let copy = disk.clone()
        if let index = disk.contents(IndexTests.indexPath) { copy.setContents(IndexTests.indexPath, index) }
        return (try? openKeychain(on: copy).verify().problems) ?? ["the keychain did not open"]
    }
}
