import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Queries that pin an item's unique key (class, the key's attributes, perhaps `agrp` and
/// `sync`) take the unique-key path of `QueryPlanner.matches` (issue 16 §5): hash each key the
/// query can match and read the item it names. It must answer exactly as the path that reads
/// every item does — extra attributes, groups and access control, the implicit sync filter,
/// protection classes, limits, errors — and see what other processes write.
@Suite struct UniqueKeyQueryTests {
    static let appA = CallerIdentity(applicationIdentifier: "team.app.a")
    /// Three groups: its own first, then one it shares, then app A's.
    static let appB = CallerIdentity(
        applicationIdentifier: "team.app.b", keychainAccessGroups: ["team.app.b", "team.shared", "team.app.a"])
    /// More groups than the unique-key path enumerates (16): it then takes the general path.
    static let many = CallerIdentity(
        applicationIdentifier: "team.many", keychainAccessGroups: (0..<17).map { "team.g\($0)" } + ["team.app.a"])
    static let outsider = CallerIdentity(applicationIdentifier: "team.other")

    /// A keychain without a passcode (every class readable) holding items that differ in one
    /// unique-key attribute at a time: group, sync, data versus string, absent versus empty.
    static func populated() throws -> (MemoryFileSystem, Keychain) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        func add(
            _ caller: CallerIdentity?, _ a: [String: AttributeValue], _ data: String,
            _ pc: ProtectionClass = .afterFirstUnlock
        ) throws {
            kc.caller = caller
            try kc.add(.genericPassword, attributes: a, data: bytes(data), protection: pc)
        }
        let alice: [String: AttributeValue] = ["acct": .string("alice"), "svce": .string("mail")]
        try add(appA, alice.merging(["labl": .string("home")]) { $1 }, "a-alice")
        try add(appA, alice.merging(["sync": .integer(1)]) { $1 }, "a-alice-sync")
        try add(appA, ["acct": .data(bytes("bob")), "svce": .string("mail")], "a-bob", .always)
        try add(appA, ["svce": .string("no-account")], "a-no-account")
        try add(appB, alice.merging(["agrp": .string("team.shared"), "icmt": .string("shared")]) { $1 }, "shared-alice")
        try add(outsider, alice, "other-alice")
        try add(nil, alice, "no-group-alice")
        kc.caller = appA
        try kc.add(
            .internetPassword,
            attributes: [
                "acct": .string("alice"), "srvr": .string("example.com"), "ptcl": .integer(443),
                "port": .integer(8443), "path": .string("/x")
            ], data: bytes("a-inet"))
        return (disk, kc)
    }

    /// The queries compared: the unique key with each extra attribute, group, sync filter,
    /// protection class and limit, values as data and as strings, and invalid names.
    static func queries() -> [(Query, Int?)] {
        let alice: [String: AttributeValue] = ["acct": .string("alice"), "svce": .string("mail")]
        var attributeSets: [[String: AttributeValue]] = [
            alice, ["acct": .data(bytes("alice")), "svce": .data(bytes("mail"))],
            ["acct": .string("bob"), "svce": .string("mail")], ["acct": .data(bytes("bob")), "svce": .string("mail")],
            ["acct": .data([]), "svce": .string("no-account")], ["acct": .string(""), "svce": .string("no-account")],
            ["acct": .string("nobody"), "svce": .string("mail")], ["acct": .string("ALICE"), "svce": .string("mail")],
            ["acct": .string("alice")],  // not the whole key: the general path
            ["acct": .string("alice"), "svce": .string("mail"), "nope": .string("x")],
            ["acct": .string("alice"), "svce": .string("mail"), "account": .string("x")],
            ["acct": .string("alice"), "svce": .string("mail"), "srvr": .string("x")]  // an inet attribute on genp
        ]
        for extra: [String: AttributeValue] in [
            ["labl": .string("home")], ["labl": .string("work")], ["labl": .data(bytes("home"))],
            ["icmt": .string("shared")],
            ["agrp": .string("team.app.a")], ["agrp": .string("team.shared")], ["agrp": .string("team.other")],
            ["agrp": .data(bytes("team.app.a"))], ["agrp": .string("TEAM.APP.A")], ["agrp": .integer(1)],
            ["sync": .integer(1)], ["sync": .integer(0)], ["sync": .string("1")],
            ["pdmn": .string("ck")], ["cdat": .date(0)], ["gena": .data([])], ["gena": .string("x")]
        ] {
            attributeSets.append(alice.merging(extra) { $1 })
        }
        attributeSets.append(alice.merging(["agrp": .string("team.app.a"), "sync": .integer(1)]) { $1 })
        var out: [(Query, Int?)] = []
        for a in attributeSets {
            for sync in [SyncFilter.notSynchronizable, .synchronizable, .any] {
                out.append((Query(.genericPassword, a, synchronizable: sync), nil))
            }
            out.append((Query(.genericPassword, a, protection: .always, synchronizable: .any), nil))
            out.append((Query(.genericPassword, a, protection: .afterFirstUnlock), nil))
            for limit in [0, 1, 2] { out.append((Query(.genericPassword, a, synchronizable: .any), limit)) }
            out.append((Query(.internetPassword, a), nil))
        }
        let inet: [String: AttributeValue] = [
            "acct": .string("alice"), "srvr": .string("example.com"), "ptcl": .integer(443),
            "port": .integer(8443), "path": .string("/x"), "sdmn": .data([]), "atyp": .string("")
        ]
        out.append((Query(.internetPassword, inet), nil))
        out.append((Query(.internetPassword, inet.merging(["port": .integer(80)]) { $1 }), nil))
        out.append((Query(.internetPassword, inet.merging(["svce": .string("mail")]) { $1 }), nil))
        out.append((Query(.internetPassword, inet.filter { $0.key != "atyp" }), nil))
        return out
    }

    enum Answer: Equatable {
        case items([Row])
        case error(KeychainStatus, String)
    }

    struct Row: Equatable, Comparable {
        var ref: [UInt8]
        var attributes: [String: AttributeValue]
        var data: [UInt8]
        static func < (a: Row, b: Row) -> Bool { a.ref.lexicographicallyPrecedes(b.ref) }
    }

    static func answer(_ kc: Keychain, _ q: Query, _ limit: Int?) -> Answer {
        do {
            return .items(
                try kc.find(q, limit: limit).map {
                    Row(ref: $0.persistentRef, attributes: $0.attributes, data: $0.data)
                })
        } catch let e as KeychainError {
            return .error(e.status, e.message)
        } catch {
            return .error(.param, "\(error)")
        }
    }

    /// A reader that takes the unique-key path, or (`uniqueKeys` false) the path that reads
    /// every item of the class.
    static func reader(_ disk: MemoryFileSystem, uniqueKeys: Bool, caller: CallerIdentity?) throws -> Keychain {
        let kc = try openKeychain(on: disk)
        let backend = kc.backend as! LocalBackend
        backend.planner.useUniqueKeyPath = uniqueKeys
        backend.planner.useAttributeHashes = uniqueKeys
        kc.caller = caller
        return kc
    }

    /// Every query, for callers without identity, with one group, with three, with more than
    /// the path enumerates, and with a group no item has: the same items (in an order of their
    /// own, so compared sorted) or the same error as reading every item; with a limit, as many
    /// items as the limit allows, each one the unlimited answer holds.
    @Test func uniqueKeyPath_answersAsReadingEveryItem() throws {
        let (disk, _) = try Self.populated()
        var compared = 0
        for caller in [nil, Self.appA, Self.appB, Self.many, Self.outsider] {
            let fast = try Self.reader(disk, uniqueKeys: true, caller: caller)
            let scan = try Self.reader(disk, uniqueKeys: false, caller: caller)
            for (q, limit) in Self.queries() {
                let what =
                    "\(caller?.applicationIdentifier ?? "no caller"): \(q.itemClass) \(q.attributes) \(q.synchronizable) \(String(describing: q.protection)) limit \(String(describing: limit))"
                let got = Self.answer(fast, q, limit)
                guard let limit else {
                    switch (got, Self.answer(scan, q, nil)) {
                    case (.items(let a), .items(let b)): #expect(a.sorted() == b.sorted(), "\(what)")
                    case (let a, let b): #expect(a == b, "\(what)")
                    }
                    compared += 1
                    continue
                }
                guard case .items(let all) = Self.answer(scan, q, nil), case .items(let some) = got else {
                    #expect(got == Self.answer(scan, q, limit), "\(what)")
                    continue
                }
                #expect(some.count == min(limit, all.count) && some.allSatisfy { all.contains($0) }, "\(what)")
            }
        }
        #expect(compared > 300)
    }

    /// The order of several matches: the caller's groups in order, sync 0 before sync 1.
    @Test func uniqueKeyPath_ordersByTheCallersGroupsThenSync() throws {
        let (disk, _) = try Self.populated()
        let kc = try Self.reader(disk, uniqueKeys: true, caller: Self.appB)
        let q = Query(.genericPassword, ["acct": .string("alice"), "svce": .string("mail")], synchronizable: .any)
        #expect(try kc.find(q).map(\.data) == [bytes("shared-alice"), bytes("a-alice"), bytes("a-alice-sync")])
        #expect(try kc.find(q, limit: 1).map(\.data) == [bytes("shared-alice")])
        #expect(try kc.find(q, limit: 2).map(\.data) == [bytes("shared-alice"), bytes("a-alice")])
        let found = try kc.find(
            Query(.genericPassword, ["acct": .string("alice"), "svce": .string("mail"), "agrp": .string("team.app.a")]))
        #expect(
            found.count == 1 && found[0].attributes["pdmn"] == .string("ck")
                && found[0].attributes["labl"] == .string("home"))
        #expect(found[0].persistentRef == bytes("genp") + found[0].persistentRef.suffix(16))
        #expect(
            try kc.find(Query(.genericPassword, persistentRef: found[0].persistentRef)).map(\.data) == [
                bytes("a-alice")
            ])
    }

    /// A query that names an extra attribute the item does not have, or has with another
    /// value, finds nothing, even though the unique key alone names the item; with
    /// `includeData: false` the item comes without its data.
    @Test func uniqueKeyPath_extraAttributeThatDoesNotMatch_findsNothing() throws {
        let (disk, _) = try Self.populated()
        let kc = try Self.reader(disk, uniqueKeys: true, caller: Self.appA)
        let key: [String: AttributeValue] = ["acct": .string("alice"), "svce": .string("mail")]
        #expect(try kc.find(Query(.genericPassword, key)).map(\.data) == [bytes("a-alice")])
        for extra: [String: AttributeValue] in [
            ["labl": .string("work")], ["icmt": .string("shared")], ["gena": .string("x")],
            ["labl": .string("HOME")], ["sync": .integer(1), "labl": .string("home")], ["pdmn": .string("dk")]
        ] {
            #expect(try kc.find(Query(.genericPassword, key.merging(extra) { $1 })).isEmpty, "\(extra)")
        }
        let bare = try kc.find(Query(.genericPassword, key), includeData: false)
        #expect(bare.count == 1 && bare[0].data.isEmpty && bare[0].attributes["acct"] == .string("alice"))
        expectKeychainError(.noSuchAttr) {
            _ = try kc.find(Query(.genericPassword, key.merging(["nope": .string("x")]) { $1 }))
        }
        expectKeychainError(.noSuchAttr) {
            _ = try kc.find(Query(.genericPassword, key.merging(["nope": .string("x")]) { $1 }), limit: 0)
        }
    }

    /// On a keychain with a passcode, opened and not unlocked, for a caller with a group (so
    /// that its queries by unique key take the unique-key path): an item of a locked class that
    /// the unique key names makes the find fail (errSecInteractionNotAllowed), an item of an
    /// available class is found, and a key no item holds finds nothing without an error; a
    /// protection filter that excludes the locked item skips it unread. Unlocking and locking
    /// again move the answers with them.
    @Test func uniqueKeyPath_lockedClass_failsOnlyForTheItemItNames() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        kc.caller = Self.appA
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "locked", "svce": "s"]), data: bytes("L"),
            protection: .whenUnlocked)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "open", "svce": "s"]), data: bytes("O"), protection: .always)
        let reader = try openKeychain(on: disk)
        reader.caller = Self.appA
        let locked = Query(.genericPassword, attrs(["acct": "locked", "svce": "s"]))
        expectKeychainError(.interactionNotAllowed) { _ = try reader.find(locked) }
        expectKeychainError(.interactionNotAllowed) {
            _ = try reader.find(Query(.genericPassword, attrs(["acct": "locked", "svce": "s", "labl": "x"])))
        }
        expectKeychainError(.interactionNotAllowed) { _ = try reader.find(locked, includeData: false) }
        let skipped = try reader.find(
            Query(.genericPassword, attrs(["acct": "locked", "svce": "s"]), protection: .always))
        #expect(skipped.isEmpty)
        let open = try reader.find(Query(.genericPassword, attrs(["acct": "open", "svce": "s"])))
        #expect(open.map(\.data) == [bytes("O")])
        let nobody = try reader.find(Query(.genericPassword, attrs(["acct": "nobody", "svce": "s"])))
        #expect(nobody.isEmpty)
        try reader.unlock(passcode: TestEnv.passcode)
        let unlocked = try reader.find(locked)
        #expect(unlocked.map(\.data) == [bytes("L")])
        reader.lock()
        expectKeychainError(.interactionNotAllowed) { _ = try reader.find(locked) }
    }

    /// A long-lived reader finds by unique key what another process wrote since: an update of
    /// the data, a rename of the key, a delete, a new item under the freed key, a compaction.
    @Test func uniqueKeyPath_seesAnotherProcessesWrites() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "s"]), data: bytes("v1"), protection: .always)
        let reader = try openKeychain(on: disk)
        let alice = Query(.genericPassword, attrs(["acct": "alice", "svce": "s"]))
        let renamed = Query(.genericPassword, attrs(["acct": "alice2", "svce": "s"]))
        #expect(try reader.find(alice).map(\.data) == [bytes("v1")])

        let other = try openKeychain(on: disk)
        try other.update(alice, attributes: [:], data: bytes("v2"))
        #expect(try reader.find(alice).map(\.data) == [bytes("v2")])
        try other.update(alice, attributes: ["acct": .string("alice2")])
        #expect(try reader.find(alice).isEmpty)
        #expect(try reader.find(renamed).map(\.data) == [bytes("v2")])
        try other.delete(renamed)
        #expect(try reader.find(renamed).isEmpty)
        try other.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "s"]), data: bytes("v3"), protection: .always)
        #expect(try reader.find(alice).map(\.data) == [bytes("v3")])
        _ = try other.compact()
        try other.update(alice, attributes: [:], data: bytes("v4"))
        #expect(try reader.find(alice).map(\.data) == [bytes("v4")])
    }

    /// spec §10.6 through the unique-key path: the newest put record of an item overwritten in
    /// place, after a long-lived reader scanned the file, with the item's older authentic put
    /// is refused (errSecDecode), never served as the superseded secret.
    @Test func uniqueKeyPath_olderRecordCopiedOverTheNewer_isRefused() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.localStore!.historyPolicy = .off  // the two puts back to back (FileAttackTests)
        let alice = Query(.genericPassword, attrs(["acct": "alice", "svce": "s"]))
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "s"]), data: bytes("secret-ONE"),
            protection: .always)
        let firstEnd = disk.keychainBytes.count
        try kc.update(alice, attributes: [:], data: bytes("secret-TWO"))
        let file = disk.keychainBytes
        let reader = try openKeychain(on: disk)
        #expect(try reader.find(alice).map(\.data) == [bytes("secret-TWO")])

        try FileAttackTests.copyOlderPutOverTheNewer(disk, file: file, firstEnd: firstEnd)
        expectKeychainError(.decode) { _ = try reader.find(alice) }
    }

    /// The unique-key path checks the names of a query against the schema only for attributes
    /// outside the key: every attribute of every class's unique key is in that class's schema.
    @Test func everyUniqueKeyAttribute_isInItsClassesSchema() {
        for c in ItemClass.allCases {
            for (name, _) in UniqueKey.attributes(for: c) {
                #expect(ItemSchema.kind(name, in: c) != nil, "\(c) \(name)")
            }
        }
    }
}
