import Testing
@testable import Latchkey
import LatchkeyTestSupport
import LatchkeyFormat

/// The torn-tail rule of spec §10.4 (issue 14 §2): a record failing its checks inside the
/// final, never-acknowledged append is a torn tail, whatever order its blocks reached the disk
/// in; the same failure in a commit this device acknowledged is damage, which `verify
/// --repair` can cut off after saying exactly what it drops.
@Suite struct RecoveryRuleTests {
    /// A keychain with three items, the disk as it was then (device state included), and the
    /// bytes after a five-item transaction appended to it.
    struct Append {
        var before: MemoryFileSystem
        var items: Snapshot
        var committed: Int
        var full: [UInt8]
    }

    func append() throws -> Append {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        for name in ["alice", "bob", "carol"] {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": name]), data: bytes("secret of \(name)"),
                protection: .always)
        }
        let before = disk.clone()
        let items = try kc.snapshot()
        let committed = disk.keychainBytes.count
        try kc.add(
            contentsOf: (0..<5).map { i in
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "batch-\(i)"]),
                    data: Array(String(repeating: "never acknowledged \(i) ", count: 20).utf8), protection: .always)
            })
        return Append(before: before, items: items, committed: committed, full: disk.keychainBytes)
    }

    /// Every 512-byte block of the unacknowledged append lost on its own (a hole, the blocks
    /// after it kept): each state opens, cuts the whole transaction, and holds the items before.
    @Test func holeInTheUnacknowledgedAppend_isATornTail_forEveryBlock() throws {
        let a = try append()
        var holes = 0
        var block = (a.committed / 512) * 512
        while block < a.full.count {
            var file = a.full
            for i in max(block, a.committed)..<min(block + 512, a.full.count) { file[i] = 0 }
            let disk = a.before.clone()
            disk.setContents(TestEnv.keychainPath, file)
            do {
                let kc = try openKeychain(on: disk)
                #expect(kc.recoveredTailBytes == UInt64(a.full.count - a.committed), "hole at \(block)")
                #expect(try kc.snapshot() == a.items, "hole at \(block)")
                #expect(disk.keychainBytes == Array(a.full.prefix(a.committed)), "hole at \(block)")
            } catch {
                Issue.record("hole at \(block): \(error)")
            }
            holes += 1
            block += 512
        }
        #expect(holes >= 3)
    }

    /// The same failure in a record the device state says was acknowledged is damage: nothing
    /// is cut, and a reader reports it.
    @Test func damageInAnAcknowledgedFinalTransaction_isNeverCutOff() throws {
        let a = try append()
        let disk = a.before.clone()
        let acknowledged = try openKeychain(on: disk)
        try acknowledged.add(
            contentsOf: (0..<5).map { i in
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "batch-\(i)"]), data: bytes("x"), protection: .always)
            })
        var file = disk.keychainBytes
        file[file.count - 40] ^= 0x04
        disk.setContents(TestEnv.keychainPath, file)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("acknowledged") == true, "\(String(describing: error))")
        #expect(error?.remedy == .repairOrRestore)
        #expect(disk.keychainBytes == file, "a refused file keeps every byte")
    }

    /// A failed record with a transaction closed after it was acknowledged before that one
    /// began: damage even with no device state at all.
    @Test func failedRecordBeforeAClosedTransaction_isDamage_evenWithoutDeviceState() throws {
        let a = try append()
        let disk = a.before.clone()
        let kc = try openKeychain(on: disk)
        try kc.add(contentsOf: [
            NewItem(.genericPassword, attributes: attrs(["acct": "one"]), data: bytes("1"), protection: .always)
        ])
        try kc.add(contentsOf: [
            NewItem(.genericPassword, attributes: attrs(["acct": "two"]), data: bytes("2"), protection: .always)
        ])
        var file = disk.keychainBytes
        file[a.committed + 30] ^= 0x01  // inside the first of the two new records
        disk.setContents(TestEnv.keychainPath, file)
        for name in disk.listFiles() where name.hasPrefix(TestEnv.stateDirectory + "/") { try disk.remove(name) }
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
    }

    /// `verify --repair`'s plan names every record it would drop that still verifies, with its
    /// item, says what happens to that item, counts the bytes that do not verify; carrying it
    /// out leaves a keychain that opens with the state before the damage.
    @Test func repairPlan_listsWhatItDrops_andRepairCutsBackToTheLastIntactChange() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a1"),
            protection: .always)
        let keep = try kc.snapshot()
        let damagedAt = disk.keychainBytes.count
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b1"), protection: .always
        )
        try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: [:], data: bytes("a2"))
        try kc.delete(Query(.genericPassword, attrs(["acct": "alice"])))
        var file = disk.keychainBytes
        file[damagedAt + 50] ^= 0x01
        disk.setContents(TestEnv.keychainPath, file)
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }

        let plan = try #require(
            try Keychain.repairPlan(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: disk))
        #expect(plan.cutAt == UInt64(damagedAt))
        #expect(plan.keptItems == 1)
        #expect(
            plan.dropped.map(\.kind) == ["history", "put", "history", "delete"],
            "bob's damaged put does not verify; alice's update and delete do, each after the version it kept")
        #expect(plan.dropped.first?.effect == "an earlier version of the item is forgotten")
        #expect(plan.dropped[1].summary?.contains("acct=alice") == true)
        #expect(plan.dropped[1].effect == "the item keeps its earlier version")
        #expect(plan.dropped.last?.effect == "the item comes back (its delete is dropped)")
        #expect(plan.unverifiableBytes > 0)
        #expect(disk.keychainBytes == file, "planning changes nothing")

        try Keychain.repair(plan, devicePath: TestEnv.devicePath, fs: disk)
        let repaired = try openKeychain(on: disk)
        #expect(try repaired.snapshot() == keep)
        #expect(repaired.verify().ok)
        try repaired.add(
            .genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b again"), protection: .always)
        #expect(try Keychain.repairPlan(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: disk) == nil)
    }

    @Test func repair_refusesAFileThatChangedSinceThePlan() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .always)
        let at = disk.keychainBytes.count
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"), protection: .always)
        try kc.add(.genericPassword, attributes: attrs(["acct": "carol"]), data: bytes("c"), protection: .always)
        var file = disk.keychainBytes
        file[at + 40] ^= 0x01
        disk.setContents(TestEnv.keychainPath, file)
        let plan = try #require(
            try Keychain.repairPlan(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: disk))
        disk.setContents(TestEnv.keychainPath, file + [0])
        expectKeychainError(.decode) { try Keychain.repair(plan, devicePath: TestEnv.devicePath, fs: disk) }
        #expect(disk.keychainBytes == file + [0])
    }
}
