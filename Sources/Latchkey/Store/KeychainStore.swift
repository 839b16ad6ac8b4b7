#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import LatchkeyCrypto
import LatchkeyFormat

/// The storage engine: one open keychain file (spec/FORMAT.md §10–§13).
///
/// Readers see records appended by other processes (`refresh`); every change goes through
/// `write`, which takes the exclusive `flock`, catches up and hands out the `WriteTransaction`
/// that appends (one transaction, one fsync) and then updates the device state. All file
/// access goes through `FileSystem`; `mutex` (recursive) makes each call one consistent state
/// for the threads of this process.
///
/// This file holds the state; each aspect has its own file: `+Open` (create and open),
/// `+Refresh` (scan, reopen, rollback), `+Keys` (unlock, lock, passcode check), `+Read`,
/// `+Write` (`write`, `WriteTransaction`, the batched commit), `+Streaming`, `+Compaction`
/// (and passcode change), `+Items` (the listing other modules use), `+Index`, `+Verify`,
/// `+Repair`, `+Leftovers`.
package final class KeychainStore: @unchecked Sendable {
    package let path: String
    let device: Device
    package let fs: FileSystem
    let mutex = Lock(recursive: true)

    var fd: Int32
    var identity: FileIdentity
    var header: FileHeader
    var headerSize: Int
    var keys: FileKeys
    var log: LogState
    /// Counts reopenings (after a compaction, by this or another process): item offsets and
    /// sequence numbers start over in the new file, and `log.journal` with them.
    var epoch: UInt64 = 0
    /// The file's status when the path was last seen to name it (see `refresh`).
    var verifiedStatus: FileStatus?
    var classKeys: [ProtectionClass: SecretKey] = [:]
    var tagToClass: [UInt32: ItemClass] = [:]
    /// The class tag of each item class (spec §7.5), as a put record carries it.
    var classTags: [ItemClass: [UInt8]] = [:]
    /// True once the passcode has been given since open (ck/cku then stay available).
    package internal(set) var unlockedOnce = false
    /// Why this keychain can be read but not changed, nil when it can be: a newer minor
    /// version (spec §12.2), or a file this process may not write (a read-only medium).
    var readOnlyReason: String?
    static let notWritable =
        "this process may not write the file (a read-only file system, or its permissions); it can be read here, and changed where it is writable"
    package var readOnly: Bool { readOnlyReason != nil }
    /// Bytes of an incomplete tail removed on open, for the caller to report.
    package internal(set) var recoveredTailBytes: UInt64 = 0
    /// The highest last sequence number this handle has seen the keychain reach: a file older
    /// than that is rolled back even when the device state is gone (spec §13).
    var highestSeen: UInt64 = 0
    /// How the last scan of `log` ended.
    var lastScan: ScanEnd?
    /// Set when the state in memory may no longer match the file after a durable change (a read
    /// failed after it): the next operation reads the file again from its start.
    var needsReopen = false
    /// The file at the path was put there by a rename this process has not seen made durable
    /// (another process's compaction or passcode change, or one of ours whose directory fsync
    /// failed): the next writer fsyncs the directory before it appends. Set for every file
    /// `open` finds: the process that renamed it may have died, or failed, before its
    /// directory fsync, so each process syncs the directory once before its first append.
    var directoryUnsynced = false
    /// The keybag the class keys in `classKeys` were unwrapped from: a file with another
    /// keybag (after a passcode change) has other class keys.
    var keybagOfKeys: Keybag
    /// The covered end of the newest valid index this handle loaded or wrote (0: none).
    var indexedEnd: UInt64 = 0
    /// The index in use failed a check: the next writer writes a new one whatever the tail.
    var indexDamaged = false
    /// What killed operations left beside the keychain was removed under this handle's lock
    /// (`removeLeftoversOnce`).
    var leftoversRemoved = false
    /// Items decrypted by `read` (tests: the query planner decrypts only its candidates).
    package internal(set) var itemsDecrypted = 0
    /// The cipher context and plaintext buffer that `open` reuses under `mutex` (the plaintext
    /// is zeroed after each item is decoded from it).
    let gcm = GCMContext()
    var plaintextScratch: [UInt8] = []
    /// A writer writes a new index once the records after the newest one pass this many bytes
    /// (spec §17.6): opening then scans at most that much of the log. Tests lower it.
    package var indexTailLimit: UInt64 = 256 << 10
    /// Index pages this handle's lookups read before it holds the whole index in memory (at
    /// least; see `IndexBase.worthMaterializing`). Tests lower it.
    package var indexPromotionPages = 64
    /// How the writers of this handle keep the versions they replace and delete (spec §7.7):
    /// from LATCHKEY_HISTORY_VERSIONS and LATCHKEY_HISTORY_DAYS, else ten versions, a year.
    package var historyPolicy = HistoryPolicy.fromProcessEnvironment()
    /// Unix seconds now, for the passcode attempt delays (PasscodeThrottle) and the history's
    /// times and bound (§7.7); tests replace it.
    package var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    init(
        path: String, device: Device, fs: FileSystem, fd: Int32, identity: FileIdentity,
        header: FileHeader, headerSize: Int, keys: FileKeys
    ) {
        self.path = path
        self.device = device
        self.fs = fs
        self.fd = fd
        self.identity = identity
        self.header = header
        self.headerSize = headerSize
        self.keys = keys
        self.log = LogState(header: header, headerSize: headerSize)
        self.keybagOfKeys = header.keybag
        for c in ItemClass.allCases {
            let tag = keys.classTag(c)
            classTags[c] = tag
            tagToClass[keys.classTagWord(c)] = c
        }
    }

    deinit {
        if fd >= 0 { fs.close(fd) }
    }

    // MARK: Facts

    package var fileUUID: [UInt8] { header.fileUUID }
    package var fileSize: UInt64 { mutex.lock(); defer { mutex.unlock() }; return log.end }
    package var recordCount: Int { mutex.lock(); defer { mutex.unlock() }; return log.recordCount }
    package var lastSequence: UInt64 { mutex.lock(); defer { mutex.unlock() }; return log.lastSequence }
    package var kdf: KDFParameters { mutex.lock(); defer { mutex.unlock() }; return log.keybag.kdf }
    /// Whether lookups go through an index file (spec §17) rather than items held in memory.
    package var usesIndex: Bool { mutex.lock(); defer { mutex.unlock() }; return !log.items.isMaterialized }
}
