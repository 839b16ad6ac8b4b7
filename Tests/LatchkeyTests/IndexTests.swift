import Foundation
import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// The index file beside the keychain (spec/FORMAT.md §17): an open that reads O(1) bytes of
/// the log and O(log N) pages of the index, and an index that is used only when it describes
/// exactly a prefix of the log open — a stale, tampered, foreign, spliced or rolled-back one is
/// ignored (the items are rebuilt from the log), and no reader ever gets superseded data.
@Suite struct IndexTests {
    static let indexPath = TestEnv.keychainPath + ".index"

    /// A keychain without a passcode holding `count` generic passwords (acct user-i, svce s,
    /// agrp g: a query naming all three is a lookup by unique key), with an index covering all
    /// of it.
    static func indexedKeychain(_ count: Int) throws -> (MemoryFileSystem, Keychain) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = 0
        try kc.add(
            contentsOf: (0..<count).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "user-\($0)", "svce": "s", "agrp": "g"]),
                    data: bytes("secret-\($0)"))
            })
        #expect(disk.contents(indexPath) != nil, "the add wrote no index")
        return (disk, kc)
    }

    static func secret(_ kc: Keychain, _ account: String) throws -> [UInt8]? {
        try kc.find(Query(.genericPassword, attrs(["acct": account, "svce": "s", "agrp": "g"]))).first?.data
    }

    /// Every item, as a new process without the index finds them (the whole log scanned).
    static func truth(_ disk: MemoryFileSystem) throws -> Snapshot {
        let copy = disk.clone()
        try? copy.remove(indexPath)
        return try openKeychain(on: copy).snapshot()
    }

    static func header(_ disk: MemoryFileSystem) throws -> IndexHeader {
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let file = disk.keychainBytes
        let (h, _, _) = try FileHeader.decode(Array(file.prefix(try FileHeader.peekLength(Array(file.prefix(16))))))
        let keys = try FileKeys(device: device, fileUUID: h.fileUUID)
        return try IndexHeader.decode(
            Array(try #require(disk.contents(indexPath)).prefix(4096)), macKey: keys.indexFileMAC)
    }

    // MARK: Cost

    /// Issue 16 §1: opening and finding one item by its unique key reads the keychain header,
    /// the record the index names and the item's record, and a logarithmic number of index
    /// pages — not the 2,000 records of the log. Without the index the whole log is read.
    /// Keychain.close() closes the index file that an open read, with the keychain file.
    @Test func close_closesTheKeychainAndIndexFiles() throws {
        let (disk, writer) = try Self.indexedKeychain(300)
        writer.close()
        let reader = try openKeychain(on: disk)
        #expect(try Self.secret(reader, "user-7") == bytes("secret-7"))
        #expect(Set(disk.openPaths).isSuperset(of: [TestEnv.keychainPath, Self.indexPath]), "\(disk.openPaths)")
        let inFlight = reader.localStore  // as a call still running on another thread holds it
        reader.close()
        #expect(disk.openPaths.filter { $0.hasPrefix(TestEnv.keychainPath) }.isEmpty, "\(disk.openPaths)")
        #expect(inFlight.map { !$0.isAvailable(.always) } == true, "its class keys are gone")
    }

    @Test func openAndFind_readTheIndexPagesAndTwoRecords_notTheLog() throws {
        let (disk, _) = try Self.indexedKeychain(2000)
        let logSize = disk.keychainBytes.count
        let counting = CountingFileSystem(disk)
        let kc = try openKeychain(on: counting)
        #expect(try Self.secret(kc, "user-1234") == bytes("secret-1234"))
        let logRead = counting.bytesRead[TestEnv.keychainPath, default: 0]
        let indexRead = counting.bytesRead[Self.indexPath, default: 0]
        #expect(logRead < 4096, "read \(logRead) bytes of a \(logSize)-byte log")
        // 2,000 items: 29 item pages and 16 unique-key pages; a binary search over each, one
        // header page. The last item of the add is re-read by the tail check.
        #expect(indexRead <= 4096 * (1 + 6 + 5), "read \(indexRead) bytes of the index")

        // The same with the index gone: the log is read from its first record to its last.
        try disk.remove(Self.indexPath)
        let without = CountingFileSystem(disk)
        let plain = try openKeychain(on: without)
        #expect(try Self.secret(plain, "user-1234") == bytes("secret-1234"))
        #expect(without.bytesRead[TestEnv.keychainPath, default: 0] >= logSize)
    }

    // MARK: Staleness and the tail

    /// Changes after the index's covered end (updates, deletes, adds, a unique key moving
    /// from a deleted item to a new one, an update changing an item's unique key) are applied
    /// from the log: the reader sees exactly what a full scan sees.
    @Test func recordsAfterTheIndex_areApplied_onTopOfIt() throws {
        let (disk, writer) = try Self.indexedKeychain(300)
        writer.localStore!.indexTailLimit = .max  // the index stays where it is
        let covered = try Self.header(disk).coveredEnd
        try writer.update(
            Query(.genericPassword, attrs(["acct": "user-1", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("new-1"))
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-2", "svce": "s", "agrp": "g"])))
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "user-2", "svce": "s", "agrp": "g"]), data: bytes("reborn-2"))
        try writer.update(
            Query(.genericPassword, attrs(["acct": "user-3", "svce": "s", "agrp": "g"])),
            attributes: attrs(["acct": "moved-3"]))
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-4", "svce": "s", "agrp": "g"])))
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "tail-only", "svce": "s", "agrp": "g"]), data: bytes("t"))
        #expect(try Self.header(disk).coveredEnd == covered, "the index was rewritten")

        let reader = try openKeychain(on: disk)
        #expect(try Self.secret(reader, "user-1") == bytes("new-1"))
        #expect(try Self.secret(reader, "user-2") == bytes("reborn-2"))
        #expect(try Self.secret(reader, "user-3") == nil)
        #expect(try Self.secret(reader, "moved-3") == bytes("secret-3"))
        #expect(try Self.secret(reader, "user-4") == nil)
        #expect(try Self.secret(reader, "tail-only") == bytes("t"))
        #expect(try Self.secret(reader, "user-299") == bytes("secret-299"))
        #expect(try reader.snapshot() == Self.truth(disk))
        // A duplicate is still refused against the items of the index.
        expectKeychainError(.duplicateItem) {
            try reader.add(
                .genericPassword, attributes: attrs(["acct": "user-5", "svce": "s", "agrp": "g"]), data: bytes("dup"))
        }
        #expect(reader.verify().ok)
    }

    /// An index older than the log (a copy put back by someone, or one written before the
    /// last changes) never serves the data it names when the log has newer: the tail after it
    /// holds the update, and the reader applies it.
    @Test func olderIndexPutBack_neverServesSupersededData() throws {
        let (disk, writer) = try Self.indexedKeychain(200)
        let old = try #require(disk.contents(Self.indexPath))
        try writer.update(
            Query(.genericPassword, attrs(["acct": "user-7", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("rotated"))
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-8", "svce": "s", "agrp": "g"])))
        #expect(disk.contents(Self.indexPath) != old, "the writer did not replace the index")
        disk.setContents(Self.indexPath, old)

        let reader = try openKeychain(on: disk)
        #expect(try Self.secret(reader, "user-7") == bytes("rotated"))
        #expect(try Self.secret(reader, "user-8") == nil)
        #expect(try reader.snapshot() == Self.truth(disk))
    }

    /// An index of a longer log than the one at the path (the log rolled back, or cut): it is
    /// ignored, and rollback detection works as without an index; adopting the older file
    /// with acceptRollback removes the index.
    @Test func indexOfALongerLog_isIgnored_andRollbackIsStillDetected() throws {
        let (disk, writer) = try Self.indexedKeychain(100)
        let olderLog = disk.keychainBytes
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "later", "svce": "s", "agrp": "g"]), data: bytes("later"))
        #expect(try Self.header(disk).coveredEnd > UInt64(olderLog.count))
        disk.setContents(TestEnv.keychainPath, olderLog)

        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("rolled back") == true, "\(String(describing: error))")
        let adopted = try openKeychain(on: disk, acceptRollback: true)
        #expect(disk.contents(Self.indexPath) == nil, "the index of the newer history was kept")
        #expect(try Self.secret(adopted, "later") == nil)
        #expect(try Self.secret(adopted, "user-99") == bytes("secret-99"))
    }

    /// The old log and its own old index put back together: the pair is consistent, and the
    /// device state still says it is older than what this device saw.
    @Test func oldLogAndOldIndexTogether_areARollback() throws {
        let (disk, writer) = try Self.indexedKeychain(100)
        let oldLog = disk.keychainBytes
        let oldIndex = try #require(disk.contents(Self.indexPath))
        try writer.update(
            Query(.genericPassword, attrs(["acct": "user-1", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("new"))
        disk.setContents(TestEnv.keychainPath, oldLog)
        disk.setContents(Self.indexPath, oldIndex)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("rolled back") == true, "\(String(describing: error))")
    }

    /// Two histories of one keychain from a common prefix (what `verify --repair` or an
    /// accepted rollback followed by new writes make), whose next records have the same size,
    /// offset and sequence number (a delete of user-0 in one, of user-1 in the other): the
    /// index of the other history names a record with another tag, so it is not used; the
    /// index of the common prefix is a prefix of both, and is.
    @Test func indexOfAnotherHistory_isNotUsed_anIndexOfTheCommonPrefixIs() throws {
        let (disk, writer) = try Self.indexedKeychain(50)
        let common = disk.keychainBytes
        let prefixIndex = try #require(disk.contents(Self.indexPath))
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-0", "svce": "s", "agrp": "g"])))
        let otherHistoryIndex = try #require(disk.contents(Self.indexPath))
        let otherEnd = try Self.header(disk).coveredEnd
        #expect(otherEnd > UInt64(common.count))

        disk.setContents(TestEnv.keychainPath, common)
        let branch = try openKeychain(on: disk, acceptRollback: true)
        try branch.delete(Query(.genericPassword, attrs(["acct": "user-1", "svce": "s", "agrp": "g"])))
        #expect(disk.keychainBytes.count == Int(otherEnd), "the two deletes differ in size")
        try branch.add(
            .genericPassword, attributes: attrs(["acct": "branch", "svce": "s", "agrp": "g"]), data: bytes("b"))

        for (name, index, usable) in [("other history", otherHistoryIndex, false), ("common prefix", prefixIndex, true)]
        {
            disk.setContents(Self.indexPath, index)
            let counting = CountingFileSystem(disk)
            let reader = try openKeychain(on: counting)
            #expect(try Self.secret(reader, "branch") == bytes("b"), "\(name)")
            #expect(try Self.secret(reader, "user-0") == bytes("secret-0"), "\(name)")
            #expect(try Self.secret(reader, "user-1") == nil, "\(name)")
            let scanned = counting.bytesRead[TestEnv.keychainPath, default: 0] >= common.count
            #expect(scanned == !usable, "\(name): the index was \(scanned ? "not " : "")used")
            #expect(try reader.snapshot() == Self.truth(disk), "\(name)")
        }
    }

    // MARK: Tampering, foreign and spliced indexes

    /// A byte changed anywhere in the index (a header field, an item entry, a unique-key entry,
    /// a page MAC): the index is not trusted, the answers are those of the log, and the next
    /// write replaces the index with a valid one.
    @Test(arguments: [20, 70, 110, 4096 + 17, 4096 + 58 * 3 + 40, 4096 * 9 + 5, 4096 * 2 - 1, 4096 * 8 - 3])
    func tamperedIndex_isNeverTrusted(at offset: Int) throws {
        let (disk, writer) = try Self.indexedKeychain(500)  // 8 item pages, 4 unique-key pages
        let expected = try writer.snapshot()
        var index = try #require(disk.contents(Self.indexPath))
        try #require(offset < index.count)
        index[offset] ^= 0x01
        disk.setContents(Self.indexPath, index)

        let reader = try openKeychain(on: disk)
        for i in 0..<500 {
            #expect(
                try Self.secret(reader, "user-\(i)") == bytes("secret-\(i)"), "user-\(i) with byte \(offset) changed")
        }
        #expect(try reader.snapshot() == expected)

        let next = try openKeychain(on: disk)
        next.localStore!.indexTailLimit = 0
        try next.add(.genericPassword, attributes: attrs(["acct": "after", "svce": "s", "agrp": "g"]), data: bytes("x"))
        #expect(try Self.header(disk).coveredEnd == UInt64(disk.keychainBytes.count))
        #expect(try openKeychain(on: disk).snapshot() == Self.truth(disk))
    }

    /// A page of another index of the same log (same bytes, another generation) spliced in:
    /// its MAC is bound to the other header, so it fails.
    @Test func pageOfAnotherGeneration_isRefused() throws {
        let (disk, writer) = try Self.indexedKeychain(300)
        let first = try #require(disk.contents(Self.indexPath))
        // The same log indexed again.
        try writer.localStore!.write { tx in try writer.localStore!.writeIndex(holding: tx.lock) }
        let second = try #require(disk.contents(Self.indexPath))
        #expect(first.count == second.count && first != second)
        #expect(first[4096..<8096] == second[4096..<8096], "the same entries")
        var spliced = second
        spliced.replaceSubrange(4096..<8192, with: first[4096..<8192])
        disk.setContents(Self.indexPath, spliced)
        let counting = CountingFileSystem(disk)
        let reader = try openKeychain(on: counting)
        #expect(try Self.secret(reader, "user-0") != nil)
        #expect(try reader.snapshot() == Self.truth(disk))
        #expect(
            counting.bytesRead[TestEnv.keychainPath, default: 0] >= disk.keychainBytes.count,
            "the spliced page was used instead of the log")
    }

    /// The index of another keychain of the same device, and the index of the same keychain
    /// before a compaction (same file UUID, another header): both ignored.
    @Test func foreignAndPreCompactionIndexes_areIgnored() throws {
        let (disk, writer) = try Self.indexedKeychain(120)
        let expected = try writer.snapshot()
        let beforeCompaction = try #require(disk.contents(Self.indexPath))

        let (otherDisk, _) = try Self.indexedKeychain(120)  // another file UUID, same accounts
        disk.setContents(Self.indexPath, try #require(otherDisk.contents(Self.indexPath)))
        #expect(try openKeychain(on: disk).snapshot() == expected)

        writer.localStore!.indexTailLimit = .max
        try writer.compact()
        #expect(disk.contents(Self.indexPath) == nil, "compaction kept the old index")
        disk.setContents(Self.indexPath, beforeCompaction)
        let counting = CountingFileSystem(disk)
        let reader = try openKeychain(on: counting)
        #expect(try reader.snapshot() == expected)
        #expect(counting.bytesRead[TestEnv.keychainPath, default: 0] >= disk.keychainBytes.count)
    }

    /// Someone holding the device secret can forge an index (SECURITY.md §2.5): here one whose
    /// MACs all verify and that names an item's older put record. `verify` compares the index
    /// with a scan of the whole log and reports it.
    @Test func forgedIndex_withTheDeviceSecret_isReportedByVerify() throws {
        let (disk, writer) = try Self.indexedKeychain(150)
        let store = writer.localStore!
        let (id, older) = try #require(
            try store.slot(
                uniqueKey: UniqueKey(
                    itemClass: .genericPassword,
                    attributes: [
                        "acct": .string("user-9"), "svce": .string("s"), "agrp": .string("g"), "sync": .integer(0)
                    ])))
        try writer.update(
            Query(.genericPassword, attrs(["acct": "user-9", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("newer"))
        #expect(try Self.header(disk).coveredEnd == UInt64(disk.keychainBytes.count))

        var index = try #require(disk.contents(Self.indexPath))
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let keys = try FileKeys(device: device, fileUUID: try Self.header(disk).fileUUID)
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        var forged = false
        for page in 1...Int(try Self.header(disk).itemPages) {
            var body = Array(index[page * 4096..<page * 4096 + 4064])
            for i in 0..<70 where Array(body[i * 58..<i * 58 + 16]) == id.bytes {
                var entry = try IndexItemEntry.decode(body, at: i * 58)
                (entry.recordOffset, entry.sequence, entry.recordSize) = (
                    older.offset, older.sequence, older.recordSize
                )
                var w = ByteWriter()
                entry.encode(into: &w)
                body.replaceSubrange(i * 58..<i * 58 + 58, with: w.bytes)
                index.replaceSubrange(
                    page * 4096..<(page + 1) * 4096,
                    with: IndexPage.seal(
                        body: body, page: UInt32(page), headerMAC: headerMAC, macKey: keys.indexFileMAC))
                forged = true
            }
        }
        try #require(forged)
        disk.setContents(Self.indexPath, index)

        let report = try openKeychain(on: disk).verify()
        #expect(!report.ok)
        #expect(
            report.problems.contains {
                $0.contains("does not describe the keychain (item \(hexString(id.bytes)) differs)")
            },
            "\(report.problems)")
        try disk.remove(Self.indexPath)
        #expect(try openKeychain(on: disk).verify().ok)
    }

    /// `info` counts the items from the index's pages and the records after it, one at a time:
    /// the handle keeps using the index (it used to read every item of it into a table, 160
    /// MiB at 1,000,000 items), and the counts are those of a keychain read whole.
    @Test func info_countsThroughTheIndex() throws {
        let (disk, writer) = try Self.indexedKeychain(300)
        writer.localStore!.indexTailLimit = .max
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-7", "svce": "s", "agrp": "g"])))
        try writer.add(
            .internetPassword, attributes: attrs(["acct": "late", "srvr": "example.com", "agrp": "g"]),
            data: bytes("x"),
            protection: .whenUnlockedThisDeviceOnly)
        let reader = try openKeychain(on: disk)
        #expect(reader.localStore!.usesIndex)
        let info = try reader.info()
        #expect(reader.localStore!.usesIndex, "info read every item of the index into memory")

        let copy = disk.clone()
        try copy.remove(Self.indexPath)
        let whole = try openKeychain(on: copy).info()
        #expect(info.liveItems == 300 && whole.liveItems == 300)
        #expect(info.itemsByClass == whole.itemsByClass && info.itemsByClass == ["genp": 299, "inet": 1])
        #expect(info.itemsByProtection == whole.itemsByProtection)
    }

    /// `walkItems` (`latchkey dump`) lists the items from the index's pages and the records
    /// after it: the handle keeps using the index (it used to build a table of every item, 213
    /// MiB at 1,000,000), and both passes give the items of a keychain read whole, `emit` in
    /// the same order.
    @Test func walkItems_listsThroughTheIndex() throws {
        let (disk, writer) = try Self.indexedKeychain(200)
        writer.localStore!.indexTailLimit = .max
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-5", "svce": "s", "agrp": "g"])))
        _ = try writer.update(
            Query(.genericPassword, attrs(["acct": "user-9", "svce": "s", "agrp": "g"])),
            attributes: ["labl": .string("renamed")], data: nil)
        try writer.add(
            .internetPassword, attributes: attrs(["acct": "late", "srvr": "example.com", "agrp": "g"]), data: bytes("x")
        )
        func walk(_ kc: Keychain) throws -> (surveyed: Set<[UInt8]>, emitted: [[UInt8]], labels: [String]) {
            var surveyed = Set<[UInt8]>(), emitted: [[UInt8]] = [], labels: [String] = []
            try kc.walkItems(
                protections: nil, survey: { surveyed.insert($0.persistentRef) },
                emit: {
                    emitted.append($0.persistentRef)
                    if case .string(let l)? = $0.attributes["labl"] { labels.append(l) }
                })
            return (surveyed, emitted, labels)
        }
        let reader = try openKeychain(on: disk)
        #expect(reader.localStore!.usesIndex)
        let got = try walk(reader)
        #expect(reader.localStore!.usesIndex, "walkItems read every item of the index into memory")
        let copy = disk.clone()
        try copy.remove(Self.indexPath)
        let whole = try walk(openKeychain(on: copy))
        #expect(got.emitted.count == 200 && Set(got.emitted) == got.surveyed)
        #expect(got.surveyed == whole.surveyed)
        #expect(got.emitted == whole.emitted)
        #expect(got.labels == ["renamed"])
    }

    /// A forged index (MACs valid: only the device can make one) whose item page gives one
    /// item another's unique-key hash. When the table is taken into memory (materialize), two
    /// items holding one hash make the index unusable and the log is read instead: neither
    /// item is dropped. (The table used to keep the hash's last holder: a find by the other
    /// item's key then found nothing.)
    @Test func forgedIndex_twoItemsWithOneUniqueKeyHash_isNotTrusted() throws {
        let (disk, _) = try Self.indexedKeychain(150)
        let expected = try Self.truth(disk)
        var index = try #require(disk.contents(Self.indexPath))
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let keys = try FileKeys(device: device, fileUUID: try Self.header(disk).fileUUID)
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        // The first two entries of item page 1: the second takes the first's hash.
        var body = Array(index[4096..<4096 + 4064])
        let first = try IndexItemEntry.decode(body, at: 0)
        var second = try IndexItemEntry.decode(body, at: 58)
        second.uniqueKeyHash = first.uniqueKeyHash
        var w = ByteWriter()
        second.encode(into: &w)
        body.replaceSubrange(58..<116, with: w.bytes)
        index.replaceSubrange(
            4096..<8192, with: IndexPage.seal(body: body, page: 1, headerMAC: headerMAC, macKey: keys.indexFileMAC))
        disk.setContents(Self.indexPath, index)

        let reader = try openKeychain(on: disk)
        #expect(try reader.snapshot() == expected)
        for i in 0..<150 { #expect(try ScaleTests.secret(reader, i) == bytes("secret-\(i)"), "user-\(i)") }
    }

    /// The temporary file of an index write that died before its rename (a kill, a power cut)
    /// is removed by the next index write; other names are left alone.
    @Test func abandonedIndexWrite_isRemovedByTheNextOne() throws {
        let (disk, writer) = try Self.indexedKeychain(20)
        let stale = Self.indexPath + "-a1b2c3d4"
        let unrelated = [Self.indexPath + "-notes", Self.indexPath + "-a1b2c3d4e"]
        for p in [stale] + unrelated { disk.setContents(p, [1, 2, 3]) }
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "next", "svce": "s", "agrp": "g"]), data: bytes("n"))
        #expect(disk.contents(stale) == nil, "the abandoned temporary file was left")
        for p in unrelated { #expect(disk.contents(p) == [1, 2, 3], "\(p) was removed") }
    }

    /// `verify --repair` cuts a damaged acknowledged record off and removes the index, which
    /// covered the part cut off: the repaired file opens from its own records.
    @Test func repair_removesTheIndex() throws {
        let (disk, writer) = try Self.indexedKeychain(30)
        try writer.delete(Query(.genericPassword, attrs(["acct": "user-0", "svce": "s", "agrp": "g"])))
        #expect(try Self.header(disk).coveredEnd == UInt64(disk.keychainBytes.count))
        var file = disk.keychainBytes
        file[file.count - 20] ^= 0x01  // the payload of the last record, a delete this device acknowledged
        disk.setContents(TestEnv.keychainPath, file)
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        let plan = try #require(
            try Keychain.repairPlan(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: disk))
        try Keychain.repair(plan, devicePath: TestEnv.devicePath, fs: disk)
        #expect(disk.contents(Self.indexPath) == nil)
        let repaired = try openKeychain(on: disk)
        #expect(try Self.secret(repaired, "user-0") == bytes("secret-0"))
        #expect(repaired.verify().ok)
    }

    /// A missing index costs a scan, never an error; the next write makes a new one.
    @Test func missingIndex_isRebuilt() throws {
        let (disk, _) = try Self.indexedKeychain(100)
        try disk.remove(Self.indexPath)
        let kc = try openKeychain(on: disk)
        #expect(try Self.secret(kc, "user-42") == bytes("secret-42"))
        kc.localStore!.indexTailLimit = 4096
        try kc.add(.genericPassword, attributes: attrs(["acct": "n", "svce": "s", "agrp": "g"]), data: bytes("n"))
        #expect(try Self.header(disk).coveredEnd == UInt64(disk.keychainBytes.count))
        #expect(try openKeychain(on: disk).snapshot() == Self.truth(disk))
    }

    // MARK: Processes

    /// Two processes, each writing: the one holding an old index sees the other's changes
    /// (the tail after its index), across the other's index rewrites and a compaction.
    @Test func processes_seeEachOthersWrites_acrossIndexRewrites() throws {
        let (disk, first) = try Self.indexedKeychain(200)
        let second = try openKeychain(on: disk)
        second.localStore!.indexTailLimit = 0
        try second.update(
            Query(.genericPassword, attrs(["acct": "user-10", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("by-second"))
        try second.delete(Query(.genericPassword, attrs(["acct": "user-11", "svce": "s", "agrp": "g"])))
        #expect(try Self.secret(first, "user-10") == bytes("by-second"))
        #expect(try Self.secret(first, "user-11") == nil)
        try first.add(
            .genericPassword, attributes: attrs(["acct": "by-first", "svce": "s", "agrp": "g"]), data: bytes("f"))
        #expect(try Self.secret(second, "by-first") == bytes("f"))
        try second.compact()
        try first.update(
            Query(.genericPassword, attrs(["acct": "user-12", "svce": "s", "agrp": "g"])), attributes: [:],
            data: bytes("after-compact"))
        #expect(try Self.secret(second, "user-12") == bytes("after-compact"))
        #expect(try first.snapshot() == Self.truth(disk))
        #expect(try second.snapshot() == Self.truth(disk))
        #expect(try openKeychain(on: disk).snapshot() == Self.truth(disk))
    }

    /// A passcode change rewrites the file; the index of the old one is not used for it.
    @Test func passcodeChange_leavesNoUsableOldIndex() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        kc.localStore!.indexTailLimit = 0
        try kc.add(
            contentsOf: (0..<50).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "user-\($0)", "svce": "s", "agrp": "g"]),
                    data: bytes("secret-\($0)"))
            })
        let old = try #require(disk.contents(Self.indexPath))
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode)
        disk.setContents(Self.indexPath, old)
        let reader = try openKeychain(on: disk)
        try reader.unlock(passcode: TestEnv.newPasscode)
        #expect(try Self.secret(reader, "user-3") == bytes("secret-3"))
        #expect(try reader.snapshot().count == 50)
    }

    /// The index file is private (0600), like the keychain; on the real file system a symlink
    /// planted at its path is never followed, neither to read nor to write.
    @Test func indexFile_isPrivate_andASymlinkIsNotFollowed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/login.keychain"
        let kc = try Keychain.create(path: path, devicePath: dir.path + "/device.secret", passcode: nil)
        kc.localStore!.indexTailLimit = 0
        try kc.add(.genericPassword, attributes: attrs(["acct": "a", "svce": "s", "agrp": "g"]), data: bytes("a"))
        #expect(try PosixFileSystem.shared.permissions(path + ".index") == 0o600)

        let target = dir.path + "/elsewhere"
        #expect(FileManager.default.createFile(atPath: target, contents: Data([1, 2, 3])))
        try FileManager.default.removeItem(atPath: path + ".index")
        try FileManager.default.createSymbolicLink(atPath: path + ".index", withDestinationPath: target)
        let reader = try Keychain.open(path: path, devicePath: dir.path + "/device.secret")
        reader.localStore!.indexTailLimit = 0
        #expect(
            try reader.find(Query(.genericPassword, attrs(["acct": "a", "svce": "s", "agrp": "g"]))).first?.data
                == bytes("a"))
        try reader.add(.genericPassword, attributes: attrs(["acct": "b", "svce": "s", "agrp": "g"]), data: bytes("b"))
        #expect(FileManager.default.contents(atPath: target) == Data([1, 2, 3]), "the symlink's target was written")
        let kind = try PosixFileSystem.shared.ownership(path: path + ".index")?.kind
        #expect(kind == .regular, "the index was not replaced by a file of its own")
    }
}

/// Forwards to a disk and counts the bytes read from each path.
final class CountingFileSystem: ForwardingFileSystem, @unchecked Sendable {
    let disk: MemoryFileSystem
    var inner: FileSystem { disk }
    private(set) var bytesRead: [String: Int] = [:]
    private var paths: [Int32: String] = [:]

    init(_ disk: MemoryFileSystem) { self.disk = disk }

    private func named(_ fd: Int32, _ path: String) -> Int32 {
        paths[fd] = path
        return fd
    }

    func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        named(try disk.open(path, create: create, exclusive: exclusive, mode: mode), path)
    }
    func openReadOnly(_ path: String) throws -> Int32 { named(try disk.openReadOnly(path), path) }
    func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        named(try disk.openNoFollow(path, writable: writable, create: create, mode: mode), path)
    }
    func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        let bytes = try disk.read(fd, offset: offset, count: count)
        bytesRead[paths[fd] ?? "?", default: 0] += bytes.count
        return bytes
    }
}
