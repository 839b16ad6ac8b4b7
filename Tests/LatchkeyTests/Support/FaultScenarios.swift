@testable import Latchkey
import LatchkeyTestSupport

/// The keychain every fault-injection test starts from: a passcode, six live items in five
/// protection classes and two item classes, and dead records (an update and a delete) so that
/// compaction has something to drop. Built once per test; each run works on a `clone()`.
struct PreparedKeychain {
    /// Never written after preparation: runs clone it.
    let disk: MemoryFileSystem
    let items: Snapshot

    static func make() throws -> PreparedKeychain {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail", "labl": "Mail"]),
            data: bytes("a-secret"))
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b-secret"),
            protection: .afterFirstUnlock)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "carol", "svce": "mail"]), data: bytes("c-secret"),
            protection: .alwaysThisDeviceOnly)
        try kc.add(
            .internetPassword,
            attributes: ["acct": .string("dave"), "srvr": .string("example.com"), "port": .integer(443)],
            data: bytes("d-secret"), protection: .always)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "erin", "svce": "vpn"]), data: bytes("e-secret"),
            protection: .whenPasscodeSetThisDeviceOnly)
        try kc.add(.genericPassword, attributes: attrs(["acct": "temp", "svce": "vpn"]), data: bytes("gone soon"))
        try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: attrs(["labl": "Mail account"]))
        try kc.delete(Query(.genericPassword, attrs(["acct": "temp"])))
        return PreparedKeychain(disk: disk, items: try kc.snapshot())
    }

    /// A new process on a copy of the prepared disk, unlocked with the original passcode.
    func openCopy() throws -> (disk: MemoryFileSystem, tracer: TracingFileSystem, keychain: Keychain) {
        let disk = self.disk.clone()
        let tracer = TracingFileSystem(disk)
        let kc = try openKeychain(on: tracer)
        try kc.unlock(passcode: TestEnv.passcode)
        return (disk, tracer, kc)
    }
}

/// One mutating operation run under injected faults.
struct FaultScenario: CustomStringConvertible, Sendable {
    let name: String
    /// False for operations that must leave the items exactly as they were (passcode change,
    /// compaction): then "new state" and "old state" are the same items.
    let changesItems: Bool
    let changesPasscode: Bool
    let operation: @Sendable (Keychain) throws -> Void

    var description: String { name }

    static let add = FaultScenario(name: "add", changesItems: true, changesPasscode: false) { kc in
        try kc.add(.genericPassword, attributes: attrs(["acct": "frank", "svce": "mail"]), data: bytes("f-secret"))
    }
    /// One transaction of three put records.
    static let updateSeveral = FaultScenario(name: "update of three items", changesItems: true, changesPasscode: false)
    { kc in
        let n = try kc.update(
            Query(.genericPassword, attrs(["svce": "mail"])), attributes: attrs(["labl": "rotated"]),
            data: bytes("rotated-secret"))
        precondition(n == 3)
    }
    /// One transaction of three delete records.
    static let deleteSeveral = FaultScenario(name: "delete of three items", changesItems: true, changesPasscode: false)
    { kc in
        let n = try kc.delete(Query(.genericPassword, attrs(["svce": "mail"])))
        precondition(n == 3)
    }
    static let changePasscode = FaultScenario(name: "changePasscode", changesItems: false, changesPasscode: true) {
        kc in
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
    }
    static let compact = FaultScenario(name: "compact", changesItems: false, changesPasscode: false) { kc in
        try kc.compact()
    }

    static let all: [FaultScenario] = [.add, .updateSeveral, .deleteSeveral, .changePasscode, .compact]
}

/// An item with what legitimately differs between two runs of one operation left out: the
/// dates the keychain sets, and the persistent reference of an item the operation created.
/// Two snapshots with equal shapes hold the same items with the same attributes and data.
struct ItemShape: Hashable {
    var itemClass: ItemClass
    var attributes: [String: AttributeValue]
    var data: [UInt8]
    var protection: ProtectionClass
    var persistentRef: [UInt8]?
}

func shape(_ snapshot: Snapshot, knownRefs: Set<[UInt8]>) -> [ItemShape: Int] {
    var out: [ItemShape: Int] = [:]
    for item in snapshot.values {
        var a = item.attributes
        a["cdat"] = nil
        a["mdat"] = nil
        let s = ItemShape(
            itemClass: item.itemClass, attributes: a, data: item.data, protection: item.protection,
            persistentRef: knownRefs.contains(item.persistentRef) ? item.persistentRef : nil)
        out[s, default: 0] += 1
    }
    return out
}

/// Which passcodes unlock `kc`: (old works, new works).
func passcodesThatUnlock(_ kc: Keychain) -> (old: Bool, new: Bool) {
    let old = (try? kc.unlock(passcode: TestEnv.passcode)) != nil
    let new = (try? kc.unlock(passcode: TestEnv.newPasscode)) != nil
    return (old, new)
}
