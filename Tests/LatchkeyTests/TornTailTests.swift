import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// A crash in the middle of an append leaves a torn tail, which open cuts off and reports
/// (spec §10.2, §10.4).
///
/// Each cut is opened on a copy of the disk as it was *before* the torn operation, device
/// state included: after a real crash the device state has not recorded a commit whose fsync
/// never returned (spec §9.3).
@Suite struct TornTailTests {
    /// The disk before `operation`, and the keychain bytes after it.
    struct Torn {
        var before: MemoryFileSystem
        var items: Snapshot
        var committedSize: Int
        var full: [UInt8]
    }

    func tear(passcode: [UInt8]? = nil, _ operation: (Keychain) throws -> Void) throws -> Torn {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: passcode)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a-secret"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b-secret"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "carol", "svce": "mail"]), data: bytes("c-secret"))
        try kc.add(
            .internetPassword, attributes: attrs(["acct": "dave", "srvr": "example.com"]), data: bytes("d-secret"))
        let before = disk.clone()
        let items = try kc.snapshot()
        let committed = disk.keychainBytes.count
        try operation(kc)
        return Torn(before: before, items: items, committedSize: committed, full: disk.keychainBytes)
    }

    /// Opens the keychain cut to `length` bytes and checks it recovered exactly the state before.
    func expectRecovered(_ torn: Torn, cutAt length: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let disk = torn.before.clone()
        disk.setContents(TestEnv.keychainPath, Array(torn.full.prefix(length)))
        do {
            let kc = try openKeychain(on: disk)
            #expect(
                kc.recoveredTailBytes == UInt64(length - torn.committedSize), "cut at \(length)",
                sourceLocation: sourceLocation)
            #expect(
                disk.keychainBytes == Array(torn.full.prefix(torn.committedSize)),
                "cut at \(length): the file is truncated",
                sourceLocation: sourceLocation)
            if kc.hasPasscode { try kc.unlock(passcode: TestEnv.passcode) }
            #expect(try kc.snapshot() == torn.items, "cut at \(length)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("cut at \(length): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func open_withLastRecordCutAtEveryByte_recoversTheRecordsBeforeIt() throws {
        let torn = try tear { kc in
            try kc.add(.genericPassword, attributes: attrs(["acct": "erin", "svce": "mail"]), data: bytes("e-secret"))
        }
        #expect(torn.full.count > torn.committedSize)
        for length in torn.committedSize + 1..<torn.full.count {
            expectRecovered(torn, cutAt: length)
        }
    }

    @Test func open_withMultiRecordUpdateCutAtEveryByte_recoversTheStateBeforeIt() throws {
        let torn = try tear { kc in
            let n = try kc.update(
                Query(.genericPassword, attrs(["svce": "mail"])), attributes: attrs(["labl": "rotated"]),
                data: bytes("rotated"))
            #expect(n == 3)
        }
        // Every record boundary inside the transaction is among the cuts: complete records whose
        // transaction is not closed are torn too.
        for length in torn.committedSize + 1..<torn.full.count {
            expectRecovered(torn, cutAt: length)
        }
    }

    @Test(arguments: [1, 7, 19, 20, 21, 36, 200, 4096])
    func open_withZeroFilledTail_treatsItAsTornTail(zeros: Int) throws {
        let torn = try tear { _ in }
        let disk = torn.before.clone()
        disk.setContents(TestEnv.keychainPath, torn.full + Array(repeating: 0, count: zeros))
        let kc = try openKeychain(on: disk)
        #expect(kc.recoveredTailBytes == UInt64(zeros))
        #expect(disk.keychainBytes == torn.full)
        #expect(try kc.snapshot() == torn.items)
    }

    @Test func open_withZeroFilledTailAfterPartialRecord_cutsBoth() throws {
        let torn = try tear { kc in
            try kc.add(.genericPassword, attributes: attrs(["acct": "erin"]), data: bytes("e"))
        }
        // The frame header of the new record made it, its body did not: a torn record.
        let disk = torn.before.clone()
        disk.setContents(TestEnv.keychainPath, Array(torn.full.prefix(torn.committedSize + 30)))
        let kc = try openKeychain(on: disk)
        #expect(kc.recoveredTailBytes == 30)
        #expect(try kc.snapshot() == torn.items)
    }

    @Test func open_endingExactlyAfterACompleteRecord_recoversNothing() throws {
        let torn = try tear { kc in
            try kc.add(.genericPassword, attributes: attrs(["acct": "erin"]), data: bytes("e"))
        }
        let disk = torn.before.clone()
        disk.setContents(TestEnv.keychainPath, torn.full)
        let kc = try openKeychain(on: disk)
        #expect(kc.recoveredTailBytes == 0)
        #expect(disk.keychainBytes == torn.full)
        #expect(try kc.snapshot().count == torn.items.count + 1)
    }

    @Test func recoveredKeychain_acceptsNewWritesAndVerifies() throws {
        let torn = try tear { kc in
            try kc.add(.genericPassword, attributes: attrs(["acct": "erin"]), data: bytes("e"))
        }
        let disk = torn.before.clone()
        disk.setContents(TestEnv.keychainPath, Array(torn.full.prefix(torn.full.count - 5)))
        let kc = try openKeychain(on: disk)
        #expect(kc.recoveredTailBytes > 0)
        try kc.add(.genericPassword, attributes: attrs(["acct": "erin"]), data: bytes("e, again"))
        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(try openKeychain(on: disk).snapshot().count == torn.items.count + 1)
    }

    @Test func reader_seeingAnotherWritersUnfinishedAppend_doesNotTruncate() throws {
        let torn = try tear { kc in
            try kc.add(.genericPassword, attributes: attrs(["acct": "erin"]), data: bytes("e"))
        }
        let disk = torn.before.clone()
        let reader = try openKeychain(on: disk)
        // Another process is half-way through its append.
        let partial = Array(torn.full.prefix(torn.full.count - 10))
        disk.setContents(TestEnv.keychainPath, partial)
        #expect(try reader.snapshot() == torn.items)
        #expect(disk.keychainBytes == partial, "a reader without the lock must not cut the tail (spec §10.4)")
        // A writer takes the lock, and then it is a torn tail to cut.
        try reader.add(.genericPassword, attributes: attrs(["acct": "frank"]), data: bytes("f"))
        #expect(reader.recoveredTailBytes == UInt64(partial.count - torn.committedSize))
        #expect(try openKeychain(on: disk).snapshot().count == torn.items.count + 1)
    }
}
