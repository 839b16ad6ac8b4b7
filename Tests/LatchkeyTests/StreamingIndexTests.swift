import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// A streaming transaction (import, restore --merge) into a keychain with an index checks its
/// puts through the index, without bringing every item into memory (issue 16 §3): the result
/// is what a full scan of the log sees, whatever the records after the index did; and when
/// the index fails mid-transaction the transaction either completes correctly from the log or
/// fails with the keychain unchanged.
@Suite struct StreamingIndexTests {
    static func item(_ account: String, _ secret: String) -> NewItem {
        NewItem(.genericPassword, attributes: attrs(["acct": account, "svce": "s", "agrp": "g"]), data: bytes(secret))
    }

    /// A new handle on `disk` that uses the index and leaves it where it is.
    static func reader(_ disk: FileSystem) throws -> Keychain {
        let kc = try openKeychain(on: disk)
        kc.localStore!.indexTailLimit = .max
        #expect(kc.localStore!.usesIndex)
        return kc
    }

    /// Issue 16 §3: before, every streaming transaction first read the whole index into memory
    /// (at 1,000,000 items, 1.3 s and 320 MB to import 400 items). Now an import of 20 items
    /// into 2,000 reads a few unique-key pages, not the 29 item pages, and the table stays on
    /// the index.
    @Test func importIntoAnIndexedKeychain_doesNotReadTheWholeIndex() throws {
        let (disk, _) = try IndexTests.indexedKeychain(2000)
        let counting = CountingFileSystem(disk)
        let kc = try Self.reader(counting)
        let before = counting.bytesRead[IndexTests.indexPath, default: 0]
        let n = try kc.importItems { importer in
            for i in 0..<20 { try importer.add(Self.item("new-\(i)", "n-\(i)")) }
            return importer.accepted
        }
        #expect(n == 20)
        let indexRead = counting.bytesRead[IndexTests.indexPath, default: 0] - before
        #expect(indexRead <= 4096 * 17, "read \(indexRead) bytes of the index (29 item pages, 16 unique-key pages)")
        #expect(kc.localStore!.usesIndex, "the item table was brought into memory")
        #expect(try IndexTests.secret(kc, "new-7") == bytes("n-7"))
        #expect(try IndexTests.secret(kc, "user-1999") == bytes("secret-1999"))
        let expected = try IndexTests.truth(disk)
        #expect(expected.count == 2020)
        #expect(try kc.snapshot() == expected)
        #expect(kc.verify().ok, "\(kc.verify().problems)")
    }

    /// The records after the index replaced, deleted, re-added and moved items: an import on
    /// top may take the unique keys they freed, and is refused one they hold or one only the
    /// index holds (then nothing of it lands).
    @Test func importOnTopOfATailWithReplacementsAndDeletes() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(300)
        writer.localStore!.indexTailLimit = .max  // the index stays where it is
        func q(_ account: String) -> Query {
            Query(.genericPassword, attrs(["acct": account, "svce": "s", "agrp": "g"]))
        }
        try writer.update(q("user-1"), attributes: [:], data: bytes("new-1"))
        try writer.delete(q("user-2"))
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "user-2", "svce": "s", "agrp": "g"]), data: bytes("reborn-2"))
        try writer.update(q("user-3"), attributes: attrs(["acct": "moved-3"]))
        try writer.delete(q("user-4"))

        for taken in ["user-1", "user-2", "moved-3", "user-5", "user-299"] {
            let kc = try Self.reader(disk)
            let before = disk.keychainBytes
            #expect(throws: KeychainError.self, "\(taken)") {
                try kc.importItems { importer in
                    for i in 0..<10 { try importer.add(Self.item("fresh-\(i)", "f")) }
                    try importer.add(Self.item(taken, "dup"))
                }
            }
            #expect(disk.keychainBytes == before, "\(taken): the failed import left records")
            #expect(try kc.find(Query(.genericPassword, attrs(["acct": "fresh-0"]))).isEmpty)
        }

        let kc = try Self.reader(disk)
        try kc.importItems { importer in
            try importer.add(Self.item("user-3", "taken-3"))  // freed by the move
            try importer.add(Self.item("user-4", "taken-4"))  // freed by the delete
            for i in 0..<50 { try importer.add(Self.item("fresh-\(i)", "f-\(i)")) }
        }
        #expect(kc.localStore!.usesIndex)
        #expect(try IndexTests.secret(kc, "user-1") == bytes("new-1"))
        #expect(try IndexTests.secret(kc, "user-2") == bytes("reborn-2"))
        #expect(try IndexTests.secret(kc, "user-3") == bytes("taken-3"))
        #expect(try IndexTests.secret(kc, "moved-3") != nil)
        #expect(try IndexTests.secret(kc, "user-4") == bytes("taken-4"))
        let expected = try IndexTests.truth(disk)
        #expect(expected.count == 299 + 2 + 50)
        #expect(try kc.snapshot() == expected)
        #expect(try Self.reader(disk).snapshot() == expected)
    }

    /// The import on a keychain with an index agrees with the same import on the same keychain
    /// read from its log alone, whatever came before it and wherever the index fails: random
    /// tails after the index (data changed, items deleted, re-added, moved to another account),
    /// random lines (new accounts, accounts only the index holds, ones the tail holds or freed,
    /// repeats within the import), and the index spoiled before, during or never. Both succeed
    /// with the same items, or both fail with the same status and leave the file as it was.
    @Test(arguments: 0..<40) func randomImports_agreeWithTheLogAlone(seed: UInt64) throws {
        var rng = SplitMix(seed: 0x5EED_1DE0 &+ seed)
        let (disk, writer) = try IndexTests.indexedKeychain(200)
        writer.localStore!.indexTailLimit = .max  // the index stays where it is
        func q(_ account: String) -> Query {
            Query(.genericPassword, attrs(["acct": account, "svce": "s", "agrp": "g"]))
        }
        var live = Set((0..<200).map { "user-\($0)" }), gone: Set<String> = []
        for step in 0..<Int.random(in: 0...12, using: &rng) {
            let account = live.randomElement(using: &rng)!
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: try writer.update(q(account), attributes: [:], data: bytes("tail-\(step)"))
            case 1: try writer.delete(q(account)); live.remove(account); gone.insert(account)
            case 2:
                guard let back = gone.randomElement(using: &rng) else { continue }
                try writer.add(
                    .genericPassword, attributes: attrs(["acct": back, "svce": "s", "agrp": "g"]),
                    data: bytes("back-\(step)"))
                gone.remove(back); live.insert(back)
            default:
                let to = "moved-\(step)"
                try writer.update(q(account), attributes: attrs(["acct": to]))
                live.remove(account); gone.insert(account); live.insert(to)
            }
        }
        // Half the plans may repeat a unique key (a live one, or a line's), the others only
        // take new accounts and ones the tail freed.
        let conflicts = Bool.random(using: &rng)
        var lines: [NewItem] = [], accounts: [String] = []
        for i in 0..<Int.random(in: 1...30, using: &rng) {
            let roll = Int.random(in: 0..<100, using: &rng)
            var account = "fresh-\(seed)-\(i)"
            if roll >= 80 && roll < 90, let freed = gone.subtracting(accounts).randomElement(using: &rng) {
                account = freed
            }
            if conflicts && roll >= 90 {
                account =
                    roll < 95 || accounts.isEmpty
                    ? live.randomElement(using: &rng)! : accounts.randomElement(using: &rng)!
            }
            accounts.append(account)
            lines.append(Self.item(account, "line-\(i)"))
        }
        let spoilAt: Int? = Bool.random(using: &rng) ? Int.random(in: 0...lines.count, using: &rng) : nil

        let reference = disk.clone()
        try reference.remove(IndexTests.indexPath)
        func run(_ kc: Keychain, spoiling: MemoryFileSystem?) -> KeychainStatus? {
            do {
                try kc.importItems { importer in
                    for (i, line) in lines.enumerated() {
                        if i == spoilAt, let spoiling { try Self.spoilIndexPages(spoiling) }
                        try importer.add(line)
                    }
                    if lines.count == spoilAt, let spoiling { try Self.spoilIndexPages(spoiling) }
                }
                return nil
            } catch let e as KeychainError {
                return e.status
            } catch {
                Issue.record("not a KeychainError: \(error)")
                return .internal
            }
        }
        func contents(_ kc: Keychain) throws -> [String: [UInt8]] {
            var out: [String: [UInt8]] = [:]
            for item in try kc.find(Query(.genericPassword), limit: nil) {
                guard case .string(let a)? = item.attributes["acct"] else { continue }
                #expect(out[a] == nil, "two items of account \(a)")
                out[a] = item.data
            }
            return out
        }
        let indexedBefore = disk.keychainBytes, referenceBefore = reference.keychainBytes
        let indexed = try Self.reader(disk)
        let fromLog = try openKeychain(on: reference)
        #expect(!fromLog.localStore!.usesIndex)
        let got = run(indexed, spoiling: disk)
        let want = run(fromLog, spoiling: nil)
        let plan = "seed \(seed): \(lines.count) lines, index spoiled at \(spoilAt.map(String.init) ?? "never")"
        #expect(got == want, "\(plan)")
        if want != nil {
            let unchanged = disk.keychainBytes == indexedBefore,
                referenceUnchanged = reference.keychainBytes == referenceBefore
            #expect(unchanged, "\(plan): the failed import left records")
            #expect(referenceUnchanged, "\(plan): the failed import left records in the keychain without an index")
        }
        let expected = try contents(fromLog)
        #expect(try contents(indexed) == expected, "\(plan)")
        #expect(try contents(openKeychain(on: disk)) == expected, "\(plan): a new handle")
        #expect(
            try contents(
                openKeychain(
                    on: {
                        let c = disk.clone(); try? c.remove(IndexTests.indexPath); return c
                    }())) == expected,
            "\(plan): the log alone")
        #expect(indexed.verify().ok, "\(plan): \(indexed.verify().problems)")
    }

    /// Spoils every page of the index after its header, in place (the open handle reads the
    /// same file): the next page the transaction reads fails its check.
    static func spoilIndexPages(_ disk: MemoryFileSystem) throws {
        var index = try #require(disk.contents(IndexTests.indexPath))
        for page in stride(from: 4096, to: index.count, by: 4096) { index[page + 100] ^= 0x40 }
        disk.setContents(IndexTests.indexPath, index)
    }

    /// The index fails under the import after some of its records were written: the
    /// transaction falls back to the items rebuilt from the log (the whole log read once) and
    /// completes; the keychain then holds exactly the old items and every imported one.
    @Test func indexDamagedMidImport_importCompletesFromTheLog() throws {
        let (disk, _) = try IndexTests.indexedKeychain(2000)
        let counting = CountingFileSystem(disk)
        let kc = try Self.reader(counting)
        var logReadBefore = 0
        let n = try kc.importItems { importer in
            try importer.add(Self.item("early", "e"))
            try Self.spoilIndexPages(disk)
            logReadBefore = counting.bytesRead[TestEnv.keychainPath, default: 0]
            for i in 0..<200 { try importer.add(Self.item("late-\(i)", "l-\(i)")) }
            return importer.accepted
        }
        #expect(n == 201)
        #expect(
            counting.bytesRead[TestEnv.keychainPath, default: 0] - logReadBefore >= disk.keychainBytes.count / 2,
            "the index did not fail under the import (the log was not scanned)")
        #expect(try IndexTests.secret(kc, "early") == bytes("e"))
        #expect(try IndexTests.secret(kc, "late-199") == bytes("l-199"))
        #expect(try IndexTests.secret(kc, "user-5") == bytes("secret-5"))
        let expected = try IndexTests.truth(disk)
        #expect(expected.count == 2201)
        #expect(try kc.snapshot() == expected)
        #expect(try openKeychain(on: disk).snapshot() == expected)
        #expect(kc.verify().ok, "\(kc.verify().problems)")
    }

    /// The same, with a line after the failure that repeats a unique key only the index held:
    /// the rebuilt items show it, and the import fails whole.
    @Test func indexDamagedMidImport_thenADuplicate_changesNothing() throws {
        let (disk, _) = try IndexTests.indexedKeychain(2000)
        let expected = try IndexTests.truth(disk)
        let before = disk.keychainBytes
        let kc = try Self.reader(disk)
        do {
            try kc.importItems { importer in
                try importer.add(Self.item("early", "e"))
                try Self.spoilIndexPages(disk)
                for i in 0..<200 { try importer.add(Self.item("late-\(i)", "l")) }
                try importer.add(Self.item("user-1234", "dup"))
            }
            Issue.record("the import of a duplicate succeeded")
        } catch let e as KeychainError {
            #expect(e.status == .duplicateItem, "\(e)")
        }
        #expect(disk.keychainBytes == before)
        #expect(try kc.snapshot() == expected)
        #expect(try openKeychain(on: disk).snapshot() == expected)
    }

    /// The live items listed from the index (backup's source): every item once, the tail's
    /// changes merged in, the index still in use after.
    @Test func liveItemSnapshot_listsTheItemsOfTheIndexAndTheTail() throws {
        let (disk, writer) = try IndexTests.indexedKeychain(700)
        writer.localStore!.indexTailLimit = .max
        func q(_ account: String) -> Query {
            Query(.genericPassword, attrs(["acct": account, "svce": "s", "agrp": "g"]))
        }
        try writer.update(q("user-1"), attributes: [:], data: bytes("new-1"))
        try writer.delete(q("user-2"))
        try writer.add(contentsOf: [Self.item("tail", "t")])
        let kc = try Self.reader(disk)
        let snapshot = try kc.localStore!.liveItemSnapshot()
        #expect(snapshot.count == 700)
        #expect(snapshot.countsByProtection == [.whenUnlocked: 700])
        var listed: [[UInt8]] = []
        try snapshot.forEach { listed.append($0.uuid) }
        #expect(kc.localStore!.usesIndex)
        let expected = try IndexTests.truth(disk)
        #expect(listed.count == 700 && Set(listed) == Set(expected.keys.map { Array($0.suffix(16)) }))
    }

    /// The index changed in place after the snapshot read it whole: the listing stops with an
    /// error that says what to do, the index is set aside, and the next snapshot lists every
    /// item from the log.
    @Test func liveItemSnapshot_indexDamagedAfterItWasMade_failsAndSetsTheIndexAside() throws {
        let (disk, _) = try IndexTests.indexedKeychain(2000)
        let kc = try Self.reader(disk)
        let snapshot = try kc.localStore!.liveItemSnapshot()
        try Self.spoilIndexPages(disk)
        var listed = 0
        do {
            try snapshot.forEach { _ in listed += 1 }
            Issue.record("the listing went on over a damaged index")
        } catch let e as KeychainError {
            #expect(e.status == .decode)
            #expect(e.message.contains("run the command again"), "\(e.message)")
        }
        #expect(listed < 2000)
        #expect(!kc.localStore!.usesIndex)
        let again = try kc.localStore!.liveItemSnapshot()
        var n = 0
        try again.forEach { _ in n += 1 }
        #expect(again.count == 2000 && n == 2000)
    }
}
