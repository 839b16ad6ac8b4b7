import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport
import LatchkeyBackup
import LatchkeyFormat
#if canImport(Glibc)
    import Glibc
#endif

/// Every size limit of the specs that a writer can reach, at the limit and one byte over, for
/// every writer of the library and the agent (the CLI's add and import: CLITests
/// SizeLimitCLITests). At the limit the write works and reads back; over it, the writer
/// refuses with errSecParam and a message that names the limit before it writes anything,
/// and the keychain still opens with every other item (issue 14 defect 1).
///
/// The limits, and where they are tested:
/// - spec/FORMAT.md §6.4: a record payload is at most 16 MiB, so an item plaintext (class,
///   attributes and data, §8) is at most 16 777 120 bytes: add, add of several in one
///   transaction, update with new data, update with a larger attribute, streaming
///   transactions (restore and large imports), the agent's add and update;
/// - spec/BACKUP.md §7: an items entry is at most 16 MiB, and the record of the largest item
///   fits exactly: such an item is backed up and restored;
/// - spec/AGENT.md §3: a request is at most 64 MiB: a request of exactly 64 MiB is served,
///   one byte more is refused when its length is read.
///
/// Not reachable by any writer, so not tested here: the header length (§3.4, at most 65 536;
/// a writer's header is 392 or 434 bytes) and the keybag length (a u16; a keybag has at
/// most seven entries); the manifest (BACKUP.md §7, 64 MiB: about 1.5 million items
/// entries); the KDF bounds (FORMAT.md §4.1) are refused by `Keybag` before scrypt runs
/// (KeybagTests).
@Suite(.serialized) struct SizeLimitTests {
    /// spec/FORMAT.md §6.4: 16 MiB − 96.
    static let maxPlaintext = 16_777_120
    /// Words a message must contain to name the limit.
    static let limitWords = ["16777120", "16 777 120", "16,777,120", "16 MiB"]

    @Test func theSpecLimit_isTheEnginesConstant() {
        #expect(Int(FormatConstants.maxPayloadSize) - 96 == Self.maxPlaintext)
    }

    /// The data length that makes the plaintext of an item with `attributes` (plus what `add`
    /// sets: sync, cdat, mdat) exactly `size` bytes.
    static func dataLength(
        plaintext size: Int, _ attributes: [String: AttributeValue],
        itemClass: ItemClass = .genericPassword
    ) -> Int {
        var a = attributes
        a["sync"] = a["sync"] ?? .integer(0)
        a["cdat"] = .date(0)
        a["mdat"] = .date(0)
        return size - ItemPlaintext(itemClass: itemClass, attributes: a, data: []).encode().count
    }

    static let attributes = attrs(["acct": "big", "svce": "limits"])

    /// A keychain holding three small items, opened and unlocked.
    func keychain() throws -> (MemoryFileSystem, Keychain, Snapshot) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        for name in ["alice", "bob", "carol"] {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": name, "svce": "small"]), data: bytes("\(name)-secret"))
        }
        return (disk, kc, try kc.snapshot())
    }

    /// Runs `body`, which must be refused with errSecParam naming the limit before anything is
    /// written; then a new process finds exactly `items`.
    func expectRefused(
        _ disk: MemoryFileSystem, items: Snapshot, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        let before = disk.keychainBytes
        disk.recordCalls = true
        let error = expectKeychainError(.param, "\(what)", sourceLocation: sourceLocation) { try body() }
        disk.recordCalls = false
        let writes = disk.callLog.filter { $0.name == "write" && $0.path == TestEnv.keychainPath }
        #expect(
            writes.isEmpty, "\(what): \(writes.count) writes to the keychain before the refusal",
            sourceLocation: sourceLocation)
        if let e = error {
            #expect(
                Self.limitWords.contains { e.message.contains($0) },
                "\(what): the message does not name the limit: \(e)",
                sourceLocation: sourceLocation)
        }
        // (Compared outside #expect, which would print and diff 16 MiB arrays.)
        let unchanged = disk.keychainBytes == before
        #expect(unchanged, "\(what): the keychain file changed", sourceLocation: sourceLocation)
        do {
            let fresh = try openKeychain(on: disk.clone())
            try fresh.unlock(passcode: TestEnv.passcode)
            let same = try fresh.snapshot() == items
            #expect(same, "\(what): a new process finds other items", sourceLocation: sourceLocation)
            #expect(fresh.verify().ok, "\(what)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(what): the keychain no longer opens: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func add_atTheLimitWorks_oneByteOverIsRefusedBeforeWriting() throws {
        let (disk, kc, items) = try keychain()
        let n = Self.dataLength(plaintext: Self.maxPlaintext + 1, Self.attributes)
        expectRefused(disk, items: items, "add of a \(Self.maxPlaintext + 1)-byte plaintext") {
            try kc.add(.genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 0x5A, count: n))
        }
        // The keychain works on, and takes an item of exactly the limit.
        let item = try kc.add(
            .genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 0x5A, count: n - 1))
        let fresh = try openKeychain(on: disk.clone())
        try fresh.unlock(passcode: TestEnv.passcode)
        let found = try fresh.find(Query(.genericPassword, Self.attributes))
        #expect(found.first?.data.count == n - 1)
        #expect(found.first?.persistentRef == item.persistentRef)
        #expect(fresh.verify().ok)
    }

    @Test func add_overTheLimitBecauseOfAnAttribute_isRefused() throws {
        let (disk, kc, items) = try keychain()
        let label = String(repeating: "l", count: Self.maxPlaintext)
        expectRefused(disk, items: items, "add with a 16 MiB label") {
            try kc.add(.genericPassword, attributes: attrs(["acct": "big", "svce": "limits", "labl": label]), data: [1])
        }
    }

    @Test func addOfSeveral_oneOverTheLimit_writesNone() throws {
        let (disk, kc, items) = try keychain()
        let n = Self.dataLength(plaintext: Self.maxPlaintext + 1, Self.attributes)
        expectRefused(disk, items: items, "add of three items, the last one byte over") {
            try kc.add(contentsOf: [
                NewItem(.genericPassword, attributes: attrs(["acct": "first", "svce": "limits"]), data: [1]),
                NewItem(.genericPassword, attributes: attrs(["acct": "second", "svce": "limits"]), data: [2]),
                NewItem(.genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 3, count: n))
            ])
        }
    }

    @Test func update_withDataOverTheLimit_isRefused_atTheLimitWorks() throws {
        let (disk, kc, _) = try keychain()
        try kc.add(.genericPassword, attributes: Self.attributes, data: bytes("small"))
        let items = try kc.snapshot()
        let n = Self.dataLength(plaintext: Self.maxPlaintext + 1, Self.attributes)
        expectRefused(disk, items: items, "update to a \(Self.maxPlaintext + 1)-byte plaintext") {
            try kc.update(
                Query(.genericPassword, Self.attributes), attributes: [:], data: [UInt8](repeating: 7, count: n))
        }
        expectRefused(disk, items: items, "update that adds a 16 MiB label") {
            try kc.update(
                Query(.genericPassword, Self.attributes),
                attributes: ["labl": .string(String(repeating: "l", count: Self.maxPlaintext))])
        }
        try kc.update(
            Query(.genericPassword, Self.attributes), attributes: [:], data: [UInt8](repeating: 7, count: n - 1))
        let fresh = try openKeychain(on: disk.clone())
        try fresh.unlock(passcode: TestEnv.passcode)
        #expect(try fresh.find(Query(.genericPassword, Self.attributes)).first?.data.count == n - 1)
    }

    @Test func streamingTransaction_itemOverTheLimit_isRefused_atTheLimitWorks() throws {
        let (disk, kc, items) = try keychain()
        func plaintext(_ size: Int) -> ItemPlaintext {
            let attributes: [String: AttributeValue] = [
                "acct": .string("streamed"), "cdat": .date(1), "mdat": .date(1), "sync": .integer(0)
            ]
            let overhead = ItemPlaintext(itemClass: .genericPassword, attributes: attributes, data: []).encode().count
            return ItemPlaintext(
                itemClass: .genericPassword, attributes: attributes, data: [UInt8](repeating: 9, count: size - overhead)
            )
        }
        let uuid = [UInt8](repeating: 0x42, count: 16)
        expectRefused(disk, items: items, "a streaming transaction with a \(Self.maxPlaintext + 1)-byte plaintext") {
            try kc.localStore!.withStreamingTransaction { tx in
                try tx.put(
                    uuid: [UInt8](repeating: 0x41, count: 16),
                    plaintext: ItemPlaintext(
                        itemClass: .genericPassword, attributes: ["acct": .string("small"), "sync": .integer(0)],
                        data: [1]),
                    protection: .whenUnlocked, flags: 0)
                try tx.put(uuid: uuid, plaintext: plaintext(Self.maxPlaintext + 1), protection: .whenUnlocked, flags: 0)
            }
        }
        try kc.localStore!.withStreamingTransaction { tx in
            try tx.put(uuid: uuid, plaintext: plaintext(Self.maxPlaintext), protection: .whenUnlocked, flags: 0)
        }
        let fresh = try openKeychain(on: disk.clone())
        try fresh.unlock(passcode: TestEnv.passcode)
        #expect(try fresh.snapshot().count == items.count + 1)
    }

    /// spec/BACKUP.md §7: the items entry limit (16 MiB) holds the record of the largest item
    /// exactly, so a backup of it is written, and restored with its data.
    @Test func backupAndRestore_ofAnItemAtTheLimit() throws {
        let (disk, kc, _) = try keychain()
        let n = Self.dataLength(plaintext: Self.maxPlaintext, Self.attributes)
        try kc.add(.genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 0xB1, count: n))
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/limit.backup"
        try BackupArchive.write(kc, toFile: path, options: BackupOptions(password: nil, kdfLogN: TestEnv.logN))
        let target = try makeDisk()
        let restored = try createKeychain(on: target)
        let backup = try VerifiedBackup.verify(
            try BackupSource.file(path), device: nil, password: { nil }, target: .existing(restored))
        let report = try backup.restore()
        #expect(report.restored == 4)
        let fresh = try openKeychain(on: target.clone())
        try fresh.unlock(passcode: TestEnv.passcode)
        let data = try fresh.find(Query(.genericPassword, Self.attributes)).first?.data
        let same = data == [UInt8](repeating: 0xB1, count: n)
        #expect(same, "the restored item has \(data?.count ?? -1) bytes of other data")
        _ = disk
    }

    // MARK: The agent

    @Test func agentAdd_overTheLimit_isRefused_atTheLimitWorks() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "other", "svce": "limits"]), data: bytes("other-secret"))
        var a = Self.attributes
        a["agrp"] = .string(AgentSandbox.caller.applicationIdentifier!)
        let n = Self.dataLength(plaintext: Self.maxPlaintext + 1, a)
        let size = box.fileSize
        let e = expectKeychainError(.param, "the agent's add of a \(Self.maxPlaintext + 1)-byte plaintext") {
            try kc.add(.genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 1, count: n))
        }
        if let e { #expect(Self.limitWords.contains { e.message.contains($0) }, "\(e)") }
        #expect(box.fileSize == size, "the agent wrote to the keychain")
        try kc.add(.genericPassword, attributes: Self.attributes, data: [UInt8](repeating: 1, count: n - 1))
        box.stopAgent()
        let direct = try box.direct()
        #expect(try direct.find(Query(.genericPassword, Self.attributes)).first?.data.count == n - 1)
        #expect(try direct.find(Query(.genericPassword, attrs(["acct": "other"]))).count == 1)
        #expect(direct.verify().ok)
    }

    /// spec/AGENT.md §3: a request of exactly 64 MiB is read and answered; one byte more is
    /// refused when its length is read.
    @Test func agentRequest_ofExactly64MiB_isServed_oneByteMoreIsRefused() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        // A find by a persistent reference (it matches nothing) made as long as the limit allows.
        func find(_ refBytes: Int) -> [UInt8] {
            AgentMessage.Request.find(
                AgentMessage.Target(keychain: box.keychainPath, device: box.devicePath, caller: nil),
                Query(.genericPassword, persistentRef: [UInt8](repeating: 0x5A, count: refBytes)),
                AgentMessage.Read()
            ).encode()
        }
        let overhead = find(0).count - 4
        let request = find(AgentSocket.maxRequestBytes - overhead)
        #expect(request.count - 4 == 64 << 20)
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        try AgentSocket.write(raw.fd, request, deadline: .now() + 30)
        let answer = try raw.receive()
        guard case .items(let items) = answer else {
            Issue.record("a request of exactly 64 MiB: \(answer.message ?? "\(answer)")")
            return
        }
        #expect(items.isEmpty)

        let over = try RawAgentConnection(box.socketPath)
        defer { over.close() }
        let n = UInt32(AgentSocket.maxRequestBytes + 1)
        over.send(raw: [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)])
        let refused = try over.receive()
        #expect(refused.status == -50)
        #expect(refused.message?.contains("64 MiB") == true, "\(refused.message ?? "")")
    }
}
