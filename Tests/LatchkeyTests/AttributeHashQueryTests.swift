import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Queries on non-unique attributes through the attribute-hash records (spec/FORMAT.md §7.6)
/// and the index's attribute pages (§17.2): the same answers as reading every item, while
/// decrypting only the candidates; and no hash record, forged or stale, ever changes an answer.
@Suite struct AttributeHashQueryTests {
    /// A small deterministic generator (the same items on every run).
    struct Dice {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        mutating func pick<T>(_ xs: [T]) -> T { xs[next(xs.count)] }
    }

    static let accounts = ["alice", "bob", "carol", "dave", ""]
    static let services = ["mail", "chat", "web"]
    static let labels = ["home", "work", "Work", "spare"]
    static let generic = ["x", "y"]

    /// Random attributes: some absent, some data instead of strings (the same bytes), some
    /// synchronizable.
    static func attributes(_ d: inout Dice, _ c: ItemClass) -> [String: AttributeValue] {
        func value(_ s: String, _ d: inout Dice) -> AttributeValue {
            d.next(3) == 0 ? .data(Array(s.utf8)) : .string(s)
        }
        var a: [String: AttributeValue] = [:]
        if d.next(5) > 0 { a["acct"] = value(d.pick(accounts), &d) }
        if d.next(4) > 0 { a["labl"] = value(d.pick(labels), &d) }
        if d.next(5) == 0 { a["sync"] = .integer(1) }
        a["icmt"] = .string("note-\(d.next(3))")
        if c == .genericPassword {
            if d.next(4) > 0 { a["svce"] = value(d.pick(services), &d) }
            if d.next(3) == 0 { a["gena"] = value(d.pick(generic), &d) }
        } else {
            if d.next(4) > 0 { a["srvr"] = value(d.pick(services) + ".example", &d) }
            if d.next(3) == 0 { a["sdmn"] = .string("realm") }
        }
        return a
    }

    /// The queries the differential test asks: each indexed attribute with each value (a
    /// string, the same bytes as data, the empty value that an absent unique-key attribute
    /// equals), alone and with another attribute, a protection class, `sync` any, a limit.
    static func queries() -> [(Query, Int?)] {
        var out: [(Query, Int?)] = []
        let values: [(String, [String])] = [
            ("acct", accounts), ("labl", labels), ("svce", services), ("gena", generic),
            ("srvr", services.map { $0 + ".example" }), ("sdmn", ["realm", ""])
        ]
        for (name, vs) in values {
            let c: ItemClass = ["srvr", "sdmn"].contains(name) ? .internetPassword : .genericPassword
            for v in vs + ["absent-value"] {
                for value in [AttributeValue.string(v), .data(Array(v.utf8))] {
                    out.append((Query(c, [name: value]), nil))
                    out.append((Query(c, [name: value], synchronizable: .any), nil))
                    if ["acct", "labl"].contains(name) {
                        out.append((Query(.internetPassword, [name: value], synchronizable: .any), nil))
                    }
                    out.append((Query(c, [name: value, "icmt": .string("note-1")], synchronizable: .any), nil))
                    out.append((Query(c, [name: value], protection: .always, synchronizable: .any), nil))
                    out.append((Query(c, [name: value], synchronizable: .any), 2))
                }
            }
        }
        out.append(
            (Query(.genericPassword, ["labl": .string("work")], caseInsensitive: true, synchronizable: .any), nil))
        out.append(
            (Query(.genericPassword, ["acct": .string("alice"), "labl": .string("home")], synchronizable: .any), nil))
        return out
    }

    struct Row: Equatable {
        var ref: [UInt8]
        var attributes: [String: AttributeValue]
        var data: [UInt8]
    }

    static func rows(_ kc: Keychain, _ q: Query, _ limit: Int?) throws -> [Row] {
        try kc.find(q, limit: limit).map { Row(ref: $0.persistentRef, attributes: $0.attributes, data: $0.data) }
    }

    /// A new process: the keychain opened again (with whatever index is on disk).
    static func reader(_ disk: MemoryFileSystem, hashes: Bool = true) throws -> Keychain {
        let kc = try openKeychain(on: disk)
        (kc.backend as! LocalBackend).planner.useAttributeHashes = hashes
        return kc
    }

    /// Every query answered by a reader that uses the hashes and by one that reads every item
    /// (each a fresh process): the same items, in the same order.
    static func expectSameAnswers(
        _ disk: MemoryFileSystem, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let indexed = try reader(disk)
        let scan = try reader(disk, hashes: false)
        for (q, limit) in queries() {
            #expect(
                try rows(indexed, q, limit) == rows(scan, q, limit),
                "\(what): \(q.attributes) \(q.itemClass) limit \(String(describing: limit))",
                sourceLocation: sourceLocation)
        }
    }

    /// Issue 16 §2: the indexed find returns what a full scan returns, over random items (absent
    /// attributes, strings and data with the same bytes, sync), updates, deletes, a compaction,
    /// and writes by another process after the index was written (so they are in its tail),
    /// some by that process through the path that reads every item; and it decrypts fewer
    /// items than the keychain holds.
    @Test func indexedFind_answersAsAFullScan() throws {
        var d = Dice(state: 16)
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = 0
        func addRandom(_ kc: Keychain, _ n: Int) {
            for i in 0..<n {
                let c: ItemClass = d.next(3) == 0 ? .internetPassword : .genericPassword
                let pc: ProtectionClass = d.next(2) == 0 ? .always : .afterFirstUnlock
                _ = try? kc.add(
                    c, attributes: Self.attributes(&d, c), data: bytes("secret-\(i)-\(d.next(1000))"), protection: pc)
            }
        }
        addRandom(kc, 160)
        for label in ["home", "spare"] {
            _ = try? kc.update(
                Query(.genericPassword, ["labl": .string(label)]),
                attributes: ["labl": .string("work"), "svce": .data(Array("web".utf8))])
        }
        _ = try? kc.delete(Query(.internetPassword, ["acct": .string("bob")]))
        try Self.expectSameAnswers(disk, "after adds, updates and deletes, index covering all")

        _ = try kc.compact()
        addRandom(kc, 20)  // written with the index after the compaction
        try Self.expectSameAnswers(disk, "after a compaction")

        // Another process writes after the index: its records are the index's tail.
        let other = try openKeychain(on: disk)
        other.localStore!.indexTailLimit = .max
        addRandom(other, 30)
        (other.backend as! LocalBackend).planner.useAttributeHashes = false
        _ = try? other.update(
            Query(.genericPassword, ["acct": .string("carol")], synchronizable: .any),
            attributes: ["gena": .string("y")])
        (other.backend as! LocalBackend).planner.useAttributeHashes = true
        _ = try? other.delete(Query(.genericPassword, ["labl": .string("Work")], synchronizable: .any))
        let header = try IndexTests.header(disk)
        #expect(header.coveredEnd < UInt64(disk.keychainBytes.count), "the other process's writes are after the index")
        try Self.expectSameAnswers(disk, "with a tail after the index")

        // The first process sees the other's writes too.
        let scan = try Self.reader(disk, hashes: false)
        for (q, limit) in Self.queries() {
            #expect(try Self.rows(kc, q, limit) == Self.rows(scan, q, limit), "long-lived instance: \(q.attributes)")
        }

        // Selective queries decrypt only their candidates.
        let count = try Self.reader(disk, hashes: false).find(Query(.genericPassword, synchronizable: .any)).count
        let r = try Self.reader(disk)
        let before = r.localStore!.itemsDecrypted
        _ = try r.find(Query(.genericPassword, ["gena": .string("x")], synchronizable: .any))
        #expect(
            r.localStore!.itemsDecrypted - before < count / 2,
            "\(r.localStore!.itemsDecrypted - before) of \(count) items decrypted")
    }

    /// The planner decrypts only the candidates of the most selective indexed attribute: one
    /// item of 400 for a label, in a new process with the index and in one without it.
    @Test func findByLabel_decryptsOnlyTheMatchingItem() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = 0
        _ = try kc.add(
            contentsOf: (0..<400).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "user-\($0)", "svce": "mail", "labl": "label-\($0)"]),
                    data: bytes("secret-\($0)"))
            })
        for withIndex in [true, false] {
            // (A clone keeps only durable names, and the index's rename is not synced: §17.1.)
            let copy = withIndex ? disk : disk.clone()
            if !withIndex { try? copy.remove(IndexTests.indexPath) }
            let r = try openKeychain(on: copy)
            #expect(r.localStore!.usesIndex == withIndex)
            let found = try r.find(Query(.genericPassword, attrs(["svce": "mail", "labl": "label-123"])))
            #expect(found.map(\.data) == [bytes("secret-123")])
            #expect(
                r.localStore!.itemsDecrypted == 1, "index \(withIndex): \(r.localStore!.itemsDecrypted) items decrypted"
            )
            // An attribute no hash covers reads every item, as before.
            let all = try r.find(Query(.genericPassword, attrs(["icmt": "none"])))
            #expect(all.isEmpty && r.localStore!.itemsDecrypted >= 400)
        }
    }

    // MARK: Forged and stale hash records

    /// The payloads of the file's records, in order.
    static func payloads(_ file: [UInt8]) throws -> [[UInt8]] {
        var offset = try FileHeader.peekLength(file)
        var out: [[UInt8]] = []
        while offset < file.count {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            out.append(
                Array(
                    file[
                        offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize
                            - FormatConstants.frameTagSize]))
            offset += frame.recordSize
        }
        return out
    }

    /// Hash records that are validly tagged (as only the device can write them) but not bound
    /// to the put just before them — a binding that is not the put's, another item's record
    /// copied after the put, a stale record of the item's earlier put, a record in the next
    /// transaction — are ignored: the put is unhashed, so the item is still found by its real
    /// values and never by the values the record claims. Also through an index written after.
    @Test func unboundHashRecords_neverHideAnItemNorAddOne() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = .max
        // The records below are counted by position: no history record (spec §7.7) between them.
        kc.localStore!.historyPolicy = .off
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "real"]), data: bytes("a"),
            protection: .always)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "fake"]), data: bytes("b"), protection: .always)
        // An update gives alice a new put (new item key, new binding).
        try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: attrs(["labl": "updated"]))
        // Records: alice's put and hash record, bob's, alice's new ones.
        let p = try Self.payloads(disk.keychainBytes)
        #expect(p.count == 6)
        let aliceOld = (put: p[0], hashes: p[1]), bob = (put: p[2], hashes: p[3]), aliceNew = (put: p[4], hashes: p[5])
        let fakeHash = AttributeHashRecord.decode(bob.hashes[...])!.hashes

        func forge(_ label: String, _ records: [(UInt8, [UInt8], Bool)]) throws {
            let copy = disk.clone()
            var file = copy.keychainBytes
            let forger = try FormatEvolutionTests.Forger(file)
            var sequence = kc.localStore!.lastSequence
            for (type, payload, continues) in records {
                sequence += 1
                file += forger.record(
                    type: type, continues: continues, sequence: sequence, payload: payload, at: file.count)
            }
            copy.setContents(TestEnv.keychainPath, file)
            try copy.remove(IndexTests.indexPath)
            let r = try openKeychain(on: copy)
            let real = try r.find(Query(.genericPassword, attrs(["svce": "real"])))
            #expect(
                real.map { $0.attributes["acct"] } == [.string("alice")], "\(label): alice not found by her service")
            let fake = try r.find(Query(.genericPassword, attrs(["svce": "fake"])))
            #expect(
                fake.map { $0.attributes["acct"] } == [.string("bob")], "\(label): the claimed value finds another item"
            )
            // A writer then writes the index (alice unhashed in it); a new reader uses it.
            r.localStore!.indexTailLimit = 0
            try r.add(
                .genericPassword, attributes: attrs(["acct": "carol", "svce": "other"]), data: bytes("c"),
                protection: .always)
            let next = try openKeychain(on: copy)
            #expect(next.localStore!.usesIndex)
            #expect(
                try next.find(Query(.genericPassword, attrs(["svce": "real"]))).map { $0.attributes["acct"] } == [
                    .string("alice")
                ],
                "\(label), through the index")
            #expect(
                try next.find(Query(.genericPassword, attrs(["svce": "fake"]))).map { $0.attributes["acct"] } == [
                    .string("bob")
                ],
                "\(label), through the index")
        }
        var wrongBinding = AttributeHashRecord.decode(aliceNew.hashes[...])!
        wrongBinding.binding = [UInt8](repeating: 0x5A, count: 16)
        wrongBinding.hashes = fakeHash
        // alice's newest put again (a replay, valid), followed by each forged record.
        try forge("wrong binding", [(1, aliceNew.put, true), (0x80, wrongBinding.encode(), false)])
        try forge("another item's record", [(1, aliceNew.put, true), (0x80, bob.hashes, false)])
        try forge("the item's stale record", [(1, aliceNew.put, true), (0x80, aliceOld.hashes, false)])
        var bound = AttributeHashRecord.decode(aliceNew.hashes[...])!
        bound.hashes = fakeHash
        try forge("in the next transaction", [(1, aliceNew.put, false), (0x80, bound.encode(), false)])
        try forge("not right after the put", [(1, aliceNew.put, true), (0x90, [], true), (0x80, bound.encode(), false)])
        try forge("malformed", [(1, aliceNew.put, true), (0x80, bound.encode() + [0], false)])
    }

    /// A hash record bound to its put but holding other hashes (only the device can write one)
    /// is what a reader cannot tell from a right one without decrypting the item; `verify`,
    /// which decrypts every item, reports it, and an update of the item writes right hashes.
    @Test func boundRecordWithWrongHashes_isReportedByVerify() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "real"]), data: bytes("a"),
            protection: .always)
        #expect(kc.verify().ok)
        let p = try Self.payloads(disk.keychainBytes)
        var wrong = AttributeHashRecord.decode(p[1][...])!
        wrong.hashes = [1, 2]
        var file = disk.keychainBytes
        let forger = try FormatEvolutionTests.Forger(file)
        let sequence = kc.localStore!.lastSequence
        file += forger.record(type: 1, continues: true, sequence: sequence + 1, payload: p[0], at: file.count)
        file += forger.record(type: 0x80, sequence: sequence + 2, payload: wrong.encode(), at: file.count)
        disk.setContents(TestEnv.keychainPath, file)
        let r = try openKeychain(on: disk)
        let report = r.verify()
        #expect(
            report.problems.count == 1 && report.problems[0].contains("attribute-hash record"), "\(report.problems)")
        // The wrong hashes do hide alice from a query on her service (the limit SECURITY.md
        // §2.5 states); found through the full walk, her update writes right ones.
        #expect(try r.find(Query(.genericPassword, attrs(["svce": "real"]))).isEmpty)
        let ref = try #require(try r.find(Query(.genericPassword)).first?.persistentRef)
        try r.update(Query(.genericPassword, persistentRef: ref), attributes: attrs(["labl": "fixed"]))
        #expect(try openKeychain(on: disk).verify().ok)
        #expect(try openKeychain(on: disk).find(Query(.genericPassword, attrs(["svce": "real"]))).count == 1)
    }

    /// Items an older writer put (no hash records) are unhashed, and a query decrypts them all;
    /// compacting with their class keys available gives each its hash record, and then a
    /// query decrypts only its candidates.
    @Test func compaction_hashesTheItemsOfAnOlderWriter() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.indexTailLimit = .max
        _ = try kc.add(
            contentsOf: (0..<20).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "user-\($0)", "labl": "label-\($0)"]),
                    data: bytes("secret-\($0)"))
            })
        // Each put again, alone (as a writer that does not know §7.6 writes it).
        var file = disk.keychainBytes
        let forger = try FormatEvolutionTests.Forger(file)
        var sequence = kc.localStore!.lastSequence
        for payload in try Self.payloads(file) where payload.count > 96 {
            sequence += 1
            file += forger.record(type: 1, sequence: sequence, payload: payload, at: file.count)
        }
        disk.setContents(TestEnv.keychainPath, file)
        func decryptions() throws -> Int {
            let r = try openKeychain(on: disk)
            #expect(try r.find(Query(.genericPassword, attrs(["labl": "label-7"]))).map(\.data) == [bytes("secret-7")])
            return r.localStore!.itemsDecrypted
        }
        #expect(try decryptions() == 20, "unhashed: every item is a candidate")
        _ = try openKeychain(on: disk).compact()
        #expect(try decryptions() == 1)
    }

    /// Compaction copies each live put's hash record beside it, and a passcode change, which
    /// rewraps every item key, binds the copies to the new wrapped keys: either way a find by
    /// label still decrypts only the matching item.
    @Test func compactionAndPasscodeChange_keepTheHashRecordsBound() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: TestEnv.passcode)
        try kc.unlock(passcode: TestEnv.passcode)
        _ = try kc.add(
            contentsOf: (0..<50).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "user-\($0)", "labl": "label-\($0)"]),
                    data: bytes("secret-\($0)"))
            })
        try kc.delete(Query(.genericPassword, attrs(["acct": "user-3"])))
        func expectOneDecryption(_ what: String) throws {
            let r = try openKeychain(on: disk)
            try r.unlock(passcode: what == "after the passcode change" ? TestEnv.newPasscode : TestEnv.passcode)
            let before = r.localStore!.itemsDecrypted
            #expect(
                try r.find(Query(.genericPassword, attrs(["labl": "label-7"]))).map(\.data) == [bytes("secret-7")],
                "\(what)")
            #expect(
                r.localStore!.itemsDecrypted - before == 1,
                "\(what): \(r.localStore!.itemsDecrypted - before) decrypted")
        }
        _ = try kc.compact()
        var offset = try FileHeader.peekLength(disk.keychainBytes)
        var types: [UInt8] = []
        let file = disk.keychainBytes
        while offset < file.count {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            types.append(frame.type)
            offset += frame.recordSize
        }
        #expect(
            types == [RecordType.history.rawValue] + Array(repeating: [1, 0x80], count: 49).flatMap { $0 },
            "the deleted item's version (spec §7.7), then each live put with its hash record")
        try expectOneDecryption("after the compaction")
        _ = try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        try expectOneDecryption("after the passcode change")
    }
}
