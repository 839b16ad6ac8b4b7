#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport
import LatchkeyBackup
import LatchkeyFormat

/// Every operation of the library that writes a keychain or its device state, each with the
/// disk it starts from: what the I/O-fault loop (IOFaultLoopTests) and the power-loss replay
/// (PowerLossTests) run.
struct WriteOperation: CustomStringConvertible, Sendable {
    let name: String
    /// The disk before the operation; runs work on copies of it.
    let start: @Sendable () throws -> MemoryFileSystem
    /// What a process does before the operation (open and unlock the keychain); nil for
    /// operations that open or create the keychain themselves.
    let setup: (@Sendable (MemoryFileSystem) throws -> Keychain)?
    /// The operation. Returns the keychain it opened or created, if any.
    let run: @Sendable (MemoryFileSystem, Keychain?) throws -> Keychain?
    /// The operation changes the keychain file when it succeeds (false: it only writes the
    /// device state).
    let writesKeychain: Bool
    /// Every run ends with this error (a wrong passcode), faults or not.
    let alwaysFails: KeychainStatus?

    var description: String { name }

    init(
        _ name: String, start: @escaping @Sendable () throws -> MemoryFileSystem = { Prepared.shared.disk.clone() },
        setup: (@Sendable (MemoryFileSystem) throws -> Keychain)? = WriteOperation.openUnlocked,
        writesKeychain: Bool = true, alwaysFails: KeychainStatus? = nil,
        run: @escaping @Sendable (MemoryFileSystem, Keychain?) throws -> Keychain?
    ) {
        self.name = name
        self.start = start
        self.setup = setup
        self.run = run
        self.writesKeychain = writesKeychain
        self.alwaysFails = alwaysFails
    }

    /// The `FaultScenario` of the older crash tests, on the prepared keychain.
    init(_ scenario: FaultScenario) {
        self.init(scenario.name) { _, kc in
            try scenario.operation(kc!)
            return kc
        }
    }

    static let openUnlocked: @Sendable (MemoryFileSystem) throws -> Keychain = { disk in
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        return kc
    }

    /// The prepared keychain (FaultScenarios.swift), built once for the whole suite.
    enum Prepared {
        static let shared = try! PreparedKeychain.make()
    }

    // MARK: The operations

    /// Twenty items in one transaction, as `latchkey import` writes them.
    static let addMany = WriteOperation("add of 20 items in one transaction") { _, kc in
        try kc!.add(
            contentsOf: (0..<20).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "import-\($0)", "svce": "batch"]),
                    data: bytes("batch-secret-\($0)"))
            })
        return kc
    }

    /// A streaming transaction (KeychainStore+Streaming.swift, what restore and large imports
    /// use) of a 1 MiB item and two small ones: its first batch fills at the large item, so it
    /// appends in two writes before its one fsync.
    static let streaming = WriteOperation("streaming transaction of 1 MiB") { _, kc in
        try kc!.localStore!.withStreamingTransaction { tx in
            for (i, size) in [StreamingTransaction.batchSize, 100, 100].enumerated() {
                let plaintext = ItemPlaintext(
                    itemClass: .genericPassword,
                    attributes: [
                        "acct": .string("stream-\(i)"), "cdat": .date(1000), "mdat": .date(1000),
                        "sync": .integer(0)
                    ],
                    data: [UInt8](repeating: UInt8(0x41 + i), count: size))
                try tx.put(
                    uuid: [0x57, 0x54, UInt8(i)] + [UInt8](repeating: 0, count: 13), plaintext: plaintext,
                    protection: .afterFirstUnlock, flags: 0)
            }
        }
        return kc
    }

    /// `restore --merge` of a backup that adds one item and replaces another with a newer
    /// version (LatchkeyBackup, one streaming transaction).
    static let restore = WriteOperation("restore of a backup into the keychain") { _, kc in
        let backup = try VerifiedBackup.verify(
            try BackupSource.file(MergeBackup.path), device: nil, password: { nil },
            target: .existing(kc!))
        precondition(
            backup.plan.restored == 1 && backup.plan.replaced == 1, "the backup should add one item and replace another"
        )
        _ = try backup.restore()
        return kc
    }

    /// An add right after a compaction by the same process: the compaction was acknowledged,
    /// so its new file must be the keychain for good (its rename durable) before the add lands
    /// in it.
    static let addAfterCompact = WriteOperation(
        "add after a compaction",
        setup: { disk in
            let kc = try WriteOperation.openUnlocked(disk)
            try kc.compact()
            return kc
        }
    ) { _, kc in
        try FaultScenario.add.operation(kc!)
        return kc
    }

    /// An add on a disk where a power cut left the device state far behind the file (it is
    /// not fsync'd on each commit, spec §9.3): recovery judges torn tails against it, and must
    /// neither cut an acknowledged commit nor call the file rolled back.
    static let addWithStateBehind = WriteOperation(
        "add with the device state behind after a power cut",
        start: {
            let disk = Prepared.shared.disk.clone()
            let kc = try WriteOperation.openUnlocked(disk)
            for i in 0..<3 {
                try kc.add(
                    .genericPassword, attributes: attrs(["acct": "behind-\(i)", "svce": "behind"]), data: bytes("b\(i)")
                )
            }
            return disk.rebooted(.loseUnsynced)
        }
    ) { _, kc in
        try FaultScenario.add.operation(kc!)
        return kc
    }

    static let create = WriteOperation("create", start: { try makeDisk() }, setup: nil) { disk, _ in
        try createKeychain(on: disk)
    }

    /// `latchkey init` on a new machine: the directories, the device secret and the keychain
    /// are all made, and must all be durable once it returns (issue 14 defect 6).
    static let createWithDevice = WriteOperation(
        "create with a new device secret and directories",
        start: { MemoryFileSystem() }, setup: nil
    ) { disk, _ in
        try createKeychain(on: disk)
    }

    /// The first open of a keychain on this device records its device state (spec §9).
    static let firstOpen = WriteOperation(
        "first open (records the device state)",
        start: {
            let disk = Prepared.shared.disk.clone()
            for name in disk.list(TestEnv.stateDirectory) { try disk.remove(TestEnv.stateDirectory + "/" + name) }
            try disk.syncDirectory(TestEnv.stateDirectory)
            return disk
        }, setup: nil, writesKeychain: false
    ) { disk, _ in
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        return kc
    }

    /// A wrong passcode is counted in the device state (PasscodeThrottle).
    static let wrongPasscode = WriteOperation(
        "wrong passcode (counts the attempt)", writesKeychain: false,
        alwaysFails: .authFailed
    ) { _, kc in
        try kc!.unlock(passcode: TestEnv.wrongPasscode)
        return kc
    }

    /// The prepared keychain with an index file (spec/FORMAT.md §17) covering all of it.
    static func indexedDisk() throws -> MemoryFileSystem {
        let disk = Prepared.shared.disk.clone()
        let kc = try openKeychain(on: disk)
        kc.localStore!.indexTailLimit = 0
        try kc.localStore!.write { _ in }
        precondition(disk.contents(TestEnv.keychainPath + ".index") != nil, "no index was written")
        // A writer does not sync the directory after renaming an index into place (a lost
        // index costs a rebuild): sync it here, as a later write would, so that the copies the
        // runs start from (`clone`, a reboot) have the index too.
        try disk.syncDirectory("/keychains")
        return disk
    }

    /// A process that writes a new index after every write.
    static let openIndexing: @Sendable (MemoryFileSystem) throws -> Keychain = { disk in
        let kc = try WriteOperation.openUnlocked(disk)
        kc.localStore!.indexTailLimit = 0
        return kc
    }

    /// An update of three items that makes the writer replace the index: the cut may land in
    /// the log's append, the log fsync before the index, the index's temporary file, its fsync
    /// or its rename; the next process must find the items of the old index or of the new.
    static let updateWithIndex = WriteOperation(
        "update that rewrites the index", start: { try indexedDisk() },
        setup: openIndexing
    ) { _, kc in
        try FaultScenario.updateSeveral.operation(kc!)
        return kc
    }

    /// A compaction of a keychain with an index: the old index no longer matches the new file.
    static let compactWithIndex = WriteOperation(
        "compaction of an indexed keychain", start: { try indexedDisk() },
        setup: openIndexing
    ) { _, kc in
        try kc!.compact()
        return kc
    }

    /// The prepared keychain with 600 more items and an index over all of it: enough pages
    /// that an import's lookups keep reading ones they have not read before (in a small index
    /// every page is read, and kept, by the first few).
    enum LargeIndexed {
        static let disk: MemoryFileSystem = {
            let disk = Prepared.shared.disk.clone()
            let kc = try! WriteOperation.openUnlocked(disk)
            kc.localStore!.indexTailLimit = 0
            try! kc.add(
                contentsOf: (0..<600).map {
                    NewItem(
                        .genericPassword, attributes: attrs(["acct": "bulk-\($0)", "svce": "bulk"]),
                        data: bytes("bulk-\($0)"))
                })
            precondition(disk.contents(TestEnv.keychainPath + ".index") != nil, "no index was written")
            try! disk.syncDirectory("/keychains")
            return disk
        }()
    }

    /// A process whose lookups stay on the index however much of it they read (a small
    /// index is otherwise brought into memory after a few lookups).
    static let openOnIndex: @Sendable (MemoryFileSystem) throws -> Keychain = { disk in
        let kc = try openKeychain(on: disk)
        kc.localStore!.indexPromotionPages = .max
        try kc.unlock(passcode: TestEnv.passcode)
        precondition(kc.localStore!.usesIndex, "the keychain was opened without its index")
        return kc
    }

    /// `import` into a keychain with an index: a streaming transaction that checks each
    /// line's unique key through the index's pages (0.4.3), not a table read into memory.
    static let importWithIndex = WriteOperation(
        "import into an indexed keychain", start: { try indexedDisk() },
        setup: openOnIndex
    ) { _, kc in
        try kc!.importItems { importer in
            for i in 0..<20 {
                try importer.add(
                    NewItem(
                        .genericPassword, attributes: attrs(["acct": "imported-\(i)", "svce": "import"]),
                        data: bytes("imported-secret-\(i)")))
            }
        }
        return kc
    }

    /// `import` into an indexed keychain whose index is damaged under it: its pages are spoiled
    /// in place once `spoilAt` lines are in, so the next lookup fails its check and the import
    /// goes on from the log (the state rebuilt up to where it began, its own lines put back):
    /// every fault and power cut inside that fallback must leave the keychain before or after.
    static func importWithIndexFailing(after spoilAt: Int) -> WriteOperation {
        WriteOperation(
            "import into an indexed keychain whose index fails after \(spoilAt) lines",
            start: { LargeIndexed.disk.clone() }, setup: openOnIndex
        ) { disk, kc in
            try kc!.importItems { importer in
                for i in 0..<20 {
                    // (Unless a fault before made the import give the index up already.)
                    if i == spoilAt, disk.contents(TestEnv.keychainPath + ".index") != nil {
                        try StreamingIndexTests.spoilIndexPages(disk)
                    }
                    try importer.add(
                        NewItem(
                            .genericPassword, attributes: attrs(["acct": "imported-\(i)", "svce": "import"]),
                            data: bytes("imported-secret-\(i)")))
                }
            }
            return kc
        }
    }

    /// `restore --merge` into a keychain with an index: the merge looks each archived item up
    /// through the index (0.4.3), adds one item and replaces another.
    static let restoreWithIndex = WriteOperation(
        "restore of a backup into an indexed keychain", start: { try indexedDisk() },
        setup: openOnIndex
    ) { disk, kc in
        try restore.run(disk, kc)
    }

    static let all: [WriteOperation] = [
        WriteOperation(.add), WriteOperation(.updateSeveral), WriteOperation(.deleteSeveral), addMany, streaming,
        WriteOperation(.changePasscode), WriteOperation(.compact), addAfterCompact, create, createWithDevice, restore,
        firstOpen, wrongPasscode, updateWithIndex, compactWithIndex, importWithIndex, importWithIndexFailing(after: 5),
        restoreWithIndex, addWithStateBehind
    ]
}

/// A device-only backup (same device as TestEnv) of the prepared keychain after one item was
/// changed (newer, so a merge replaces it) and one added: merging it into the prepared
/// keychain restores two items and skips the others (same modification date). It lives in an
/// anonymous file (O_TMPFILE, never linked into a directory), read through /proc/self/fd.
enum MergeBackup {
    static let path: String = {
        let disk = WriteOperation.Prepared.shared.disk.clone()
        let kc = try! openKeychain(on: disk)
        try! kc.unlock(passcode: TestEnv.passcode)
        Thread.sleep(forTimeInterval: 0.01)  // a modification date later than the prepared one
        try! kc.update(
            Query(.genericPassword, attrs(["acct": "bob"])), attributes: attrs(["labl": "from the backup"]),
            data: bytes("b-secret, restored"))
        try! kc.add(.genericPassword, attributes: attrs(["acct": "grace", "svce": "backup"]), data: bytes("g-secret"))
        let fd = open(FileManager.default.temporaryDirectory.path, 0o20000000 | O_DIRECTORY | O_RDWR | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "no O_TMPFILE in the temporary directory (errno \(errno))")
        try! BackupArchive.write(kc, to: fd, options: BackupOptions(password: nil, kdfLogN: TestEnv.logN))
        return "/proc/self/fd/\(fd)"  // kept open for the life of the test process
    }()
}

/// What a new process finds on a disk: no keychain, or a keychain that opens, verifies and
/// unlocks with one of the two passcodes, and its items (decrypted, as `shape`s).
enum Observed: Equatable, CustomStringConvertible {
    case noKeychain
    /// `history`: how many earlier versions (spec/FORMAT.md §7.7) each kind counts, of every
    /// class: a crash keeps a transaction's history records exactly when it keeps the
    /// transaction.
    case keychain(items: [ItemShape: Int], newPasscode: Bool, history: [String: Int] = [:])
    /// It does not open, verify or unlock: why.
    case broken(String)

    var description: String {
        switch self {
        case .noKeychain: return "no keychain"
        case .keychain(let items, let new, let history):
            return "\(items.values.reduce(0, +)) items, \(new ? "new" : "old") passcode, history \(history)"
        case .broken(let why): return "broken: \(why)"
        }
    }

    var usesNewPasscode: Bool {
        if case .keychain(_, true, _) = self { return true }
        return false
    }

    var itemCount: Int? {
        if case .keychain(let items, _, _) = self { return items.values.reduce(0, +) }
        return nil
    }

    /// Opens the keychain on `disk` as a new process would (this may cut a torn tail and write
    /// the device state, so `disk` should be one nobody needs afterwards).
    static func of(_ disk: MemoryFileSystem, knownRefs: Set<[UInt8]>) -> Observed {
        guard disk.contents(TestEnv.keychainPath) != nil else { return .noKeychain }
        do {
            let kc = try openKeychain(on: disk)
            var new = false
            do {
                try kc.unlock(passcode: TestEnv.passcode)
            } catch {
                try kc.unlock(passcode: TestEnv.newPasscode)
                new = true
            }
            let report = kc.verify()
            guard report.ok else { return .broken("verify: \(report.problems)") }
            var history: [String: Int] = [:]
            for c in ItemClass.allCases {
                for v in try kc.history(Query(c, synchronizable: .any)).versions where v.kind != .current {
                    history[v.kind.rawValue, default: 0] += 1
                }
            }
            return .keychain(
                items: shape(try kc.snapshot(), knownRefs: knownRefs), newPasscode: new, history: history)
        } catch {
            return .broken("\(error)")
        }
    }
}

/// The persistent references of the items on `disk` (read on a copy).
func persistentRefs(_ disk: MemoryFileSystem) -> Set<[UInt8]> {
    guard disk.contents(TestEnv.keychainPath) != nil, let kc = try? openKeychain(on: disk.clone()),
        (try? kc.unlock(passcode: TestEnv.passcode)) != nil, let items = try? kc.snapshot()
    else { return [] }
    return Set(items.keys)
}

/// A count from the environment (for longer runs through make targets), or `default`.
func environmentCount(_ name: String, default value: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) }.map { max(1, $0) } ?? value
}
