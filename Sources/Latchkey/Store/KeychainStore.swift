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

/// One change inside a transaction.
enum Mutation {
    case put(id: ID16, plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8)
    case delete(ID16)
}

/// The storage engine: one open keychain file (spec/FORMAT.md §10–§13).
///
/// Readers see records appended by other processes (`refresh`); writers take an exclusive
/// `flock`, catch up, append one transaction with one write and one fsync, then update the
/// device state. All file access goes through `FileSystem`.
package final class KeychainStore: @unchecked Sendable {
    package let path: String
    let device: Device
    let fs: FileSystem
    private let mutex = Lock(recursive: true)

    private(set) var fd: Int32
    private var identity: FileIdentity
    private(set) var header: FileHeader
    private(set) var headerSize: Int
    private(set) var keys: FileKeys
    var log: LogState
    /// Counts reopenings (after a compaction, by this or another process): item offsets and
    /// sequence numbers start over in the new file, and `log.journal` with them.
    var epoch: UInt64 = 0
    /// The file's status when the path was last seen to name it (see `refresh`).
    private var verifiedStatus: FileStatus?
    private var classKeys: [ProtectionClass: SecretKey] = [:]
    private var tagToClass: [UInt32: ItemClass] = [:]
    /// True once the passcode has been given since open (ck/cku then stay available).
    package private(set) var unlockedOnce = false
    /// Why this keychain can be read but not changed, nil when it can be: a newer minor
    /// version (spec §12.2), or a file this process may not write (a read-only medium).
    var readOnlyReason: String?
    private static let notWritable = "this process may not write the file (a read-only file system, or its permissions); it can be read here, and changed where it is writable"
    package var readOnly: Bool { readOnlyReason != nil }
    /// Bytes of an incomplete tail removed on open, for the caller to report.
    package private(set) var recoveredTailBytes: UInt64 = 0
    /// The highest last sequence number this handle has seen the keychain reach: a file older
    /// than that is rolled back even when the device state is gone (spec §13).
    private var highestSeen: UInt64 = 0
    /// How the last scan of `log` ended.
    private var lastScan: ScanEnd?
    /// Set when the state in memory may no longer match the file after a durable change (a read
    /// failed after it): the next operation reads the file again from its start.
    var needsReopen = false
    /// The file at the path was put there by a rename this process has not seen made durable
    /// (another process's compaction or passcode change, or one of ours whose directory fsync
    /// failed): the next writer fsyncs the directory before it appends. Set for every file
    /// `open` finds: the process that renamed it may have died, or failed, before its
    /// directory fsync, so each process syncs the directory once before its first append.
    private var directoryUnsynced = false
    /// The keybag the class keys in `classKeys` were unwrapped from: a file with another
    /// keybag (after a passcode change) has other class keys.
    private var keybagOfKeys: Keybag
    /// The covered end of the newest valid index this handle loaded or wrote (0: none).
    var indexedEnd: UInt64 = 0
    /// The index in use failed a check: the next writer writes a new one whatever the tail.
    var indexDamaged = false
    /// What killed operations left beside the keychain was removed under this handle's lock
    /// (`removeLeftoversOnce`).
    var leftoversRemoved = false
    /// Items decrypted by `read` (tests: the query planner decrypts only its candidates).
    package private(set) var itemsDecrypted = 0
    /// The cipher context and plaintext buffer that `open` reuses under `mutex` (the plaintext
    /// is zeroed after each item is decoded from it).
    private let gcm = GCMContext()
    private var plaintextScratch: [UInt8] = []
    /// A writer writes a new index once the records after the newest one pass this many bytes
    /// (spec §17.6): opening then scans at most that much of the log. Tests lower it.
    package var indexTailLimit: UInt64 = 256 << 10
    /// Index pages this handle's lookups read before it holds the whole index in memory (at
    /// least; see `IndexBase.worthMaterializing`). Tests lower it.
    package var indexPromotionPages = 64
    /// Unix seconds now, for the passcode attempt delays (PasscodeThrottle); tests replace it.
    package var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    private init(path: String, device: Device, fs: FileSystem, fd: Int32, identity: FileIdentity,
                 header: FileHeader, headerSize: Int, keys: FileKeys) {
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
        for c in ItemClass.allCases { tagToClass[keys.classTagWord(c)] = c }
    }

    deinit {
        if fd >= 0 { fs.close(fd) }
    }

    // MARK: Create

    /// Creates a new keychain file. Without a passcode every class but akpu is wrapped by the
    /// device key alone.
    /// - Throws: errSecDuplicateKeychain when a file exists at `path`; errSecIO.
    package static func create(path: String, device: Device, passcode: [UInt8]?, logN: UInt8 = KDFParameters.defaultLogN,
                               now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws -> KeychainStore {
        let fs = device.fs
        if try io({ try fs.identity(path: path) }, "check the keychain path") != nil {
            throw existing(fs: fs, path: path)
        }
        let fileUUID = try ID16.random().bytes
        let keys = try FileKeys(device: device.secret, fileUUID: fileUUID)
        var classKeys: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || passcode != nil {
            classKeys[pc] = try SecretKey.random()
        }
        let kdf: KDFParameters = passcode == nil ? .none : .scrypt(salt: try Crypto.randomBytes(FormatConstants.saltSize), logN: logN)
        let passKey = try passcode.map { try keys.passcodeKey(passcode: $0, kdf: kdf) }
        let bag = try wrapKeybag(classKeys, kdf: kdf, keys: keys, passcodeKey: passKey)
        let header = FileHeader(fileUUID: fileUUID, deviceUUID: device.secret.uuid, baseSequence: 0, createdAt: now, keybag: bag)
        let bytes = header.encode(macKey: keys.headerMAC)
        let fd = try io({ () throws -> Int32 in
            try fs.makeDirectory(directoryOf(path), mode: 0o700)
            let temp = try temporaryName(path + ".create-")
            let registered = InterruptCleanup.register(temp, on: fs)   // before it exists: no window
            defer { InterruptCleanup.unregister(registered) }
            let tfd = try fs.open(temp, create: true, exclusive: true, mode: 0o600)
            var named = false
            do {
                try fs.write(tfd, offset: 0, bytes)
                try fs.sync(tfd)
                try fs.renameNoReplace(temp, path)
                named = true
                try fs.syncDirectory(directoryOf(path))
                // What an init or a restore to this path left when it was killed: with a
                // keychain here, each of them would fail now anyway.
                removeAbandonedCreations(besides: path, fs: fs)
                return tfd
            } catch {
                // Until the directory fsync returns, the new name may not survive a power cut:
                // the call fails, so it leaves no keychain behind either.
                if named {
                    try? fs.remove(path)
                    try? fs.syncDirectory(directoryOf(path))
                } else {
                    try? fs.remove(temp)
                }
                fs.close(tfd)
                // ENOENT: another process created the keychain at `path` and removed this
                // temporary file as a leftover (`removeAbandonedCreations`).
                if let f = error as? IOFailure, f.errno == EEXIST || (f.errno == ENOENT && (try? fs.identity(path: path)) != nil) {
                    throw existing(fs: fs, path: path)
                }
                throw error
            }
        }, "create the keychain")
        // Durable from here: the store is made from what was written, never read back (a read
        // failing now must not turn a created keychain into a reported failure).
        let store = KeychainStore(path: path, device: device, fs: fs, fd: fd,
                                  identity: (try? fs.identity(fd)) ?? FileIdentity(device: 0, inode: 0),
                                  header: header, headerSize: bytes.count, keys: keys)
        store.classKeys = classKeys
        store.unlockedOnce = passcode != nil
        store.recordCommit(0)
        return store
    }

    /// The error for creating a keychain where something already is: a directory, or a file that
    /// must never be deleted to make room (it may be the only copy of someone's items).
    package static func existing(fs: FileSystem, path: String) -> KeychainError {
        do {
            fs.close(try fs.open(path, create: false, exclusive: false, mode: 0o600))
        } catch let f as IOFailure where f.errno == EISDIR {
            return KeychainError.pathIsDirectory(path)
        } catch {}
        return KeychainError(.duplicateKeychain, "a keychain already exists at \(path); nothing was changed", remedy: .useExistingOrChooseAnother)
    }

    static func wrapKeybag(_ classKeys: [ProtectionClass: SecretKey], kdf: KDFParameters, keys: FileKeys,
                           passcodeKey: SecretKey?) throws -> Keybag {
        var entries: [KeybagEntry] = []
        for (pc, key) in classKeys.sorted(by: { $0.key < $1.key }) {
            let usePasscode = !pc.isAlwaysAvailable && passcodeKey != nil
            let kek = usePasscode ? passcodeKey! : keys.deviceWrap
            entries.append(KeybagEntry(protectionClass: pc, wrap: usePasscode ? .passcode : .device,
                                       wrappedKey: try Crypto.wrap(key, with: kek)))
        }
        return Keybag(kdf: kdf, entries: entries)
    }

    // MARK: Open

    /// Opens a keychain locked: only the classes wrapped by the device key are available.
    /// Cuts off and reports an incomplete tail; refuses damage, foreign devices, newer majors
    /// and rolled-back files.
    /// - Throws: errSecDecode (damaged, newer version, rolled back), errSecAuthFailed (another
    ///   device's keychain), errSecIO.
    package static func open(path: String, device: Device, acceptRollback: Bool = false) throws -> KeychainStore {
        try open(path: path, device: device, acceptRollback: acceptRollback, unlockingWith: nil)
    }

    /// Opens and, with a passcode, unlocks. The scrypt KDF for the passcode starts on another
    /// thread as soon as the header is read and runs while this one checks every record of
    /// the file (issue 8: a CLI command without the agent costs at most the KDF + 30 ms; at
    /// 10,000 items the scan alone is about 30 ms). The derived key is used only if the
    /// current keybag (a later keybag record may replace the header's, spec §4) has the same
    /// KDF parameters, and only inside the throttled attempt; while a delay after wrong
    /// passcodes runs, no KDF is started at all.
    package static func open(path: String, device: Device, acceptRollback: Bool = false,
                             unlockingWith passcode: [UInt8]?) throws -> KeychainStore {
        let fs = device.fs
        guard try io({ try fs.identity(path: path) }, "open the keychain") != nil else {
            throw KeychainError(.io, "no keychain at \(path)", remedy: .createKeychain)
        }
        let (fd, writable) = try openFile(fs: fs, path: path)
        let parts: (FileHeader, Int, FileKeys, FileIdentity)
        do {
            let (header, size, keys) = try readHeader(fs: fs, fd: fd, path: path, device: device)
            parts = (header, size, keys, try io({ try fs.identity(fd) }, "open the keychain"))
        } catch {
            fs.close(fd)
            throw error
        }
        var prefetched: PrefetchedPasscodeKey?
        if let passcode, parts.0.keybag.hasPasscode,
           PasscodeThrottle.remaining((try? device.state(fileUUID: parts.0.fileUUID)) ?? nil, now: Int64(Date().timeIntervalSince1970)) == 0 {
            prefetched = PrefetchedPasscodeKey(keys: parts.2, passcode: passcode, kdf: parts.0.keybag.kdf)
        }
        // The thread is always waited for, whatever is thrown: a process that exits while it runs
        // scrypt would have OpenSSL's atexit cleanup free what the thread uses (KillTests saw
        // SIGSEGV in a `verify` that exited with "wrong passcode").
        defer { _ = try? prefetched?.key() }
        // From here the store owns fd and closes it in deinit.
        let store = KeychainStore(path: path, device: device, fs: fs, fd: fd, identity: parts.3,
                                  header: parts.0, headerSize: parts.1, keys: parts.2)
        store.directoryUnsynced = true
        (store.log, store.indexedEnd) = store.initialState(fd: fd, header: parts.0, headerSize: parts.1, keys: parts.2)
        if parts.0.minor > FormatConstants.fileMinor {
            store.readOnlyReason = "it was written by a newer Latchkey (format 1.\(parts.0.minor)); upgrade Latchkey to change it"
        } else if !writable {
            store.readOnlyReason = KeychainStore.notWritable
        }
        // Rollback is judged on the committed records before anything is cut off: a file
        // that is rolled back (or carries a forged tail) keeps every byte (spec §10.5, §13).
        try store.catchUp(mayTruncate: false)
        try store.checkRollback(accept: acceptRollback)
        try store.catchUp(mayTruncate: !store.readOnly)
        try store.unwrapDeviceClasses()
        if let passcode { try store.unlock(passcode: passcode, prefetched: prefetched) }
        return store
    }

    /// Opens the keychain file for reading and writing, or, where it may only be read (a
    /// read-only file system, a file without write permission), for reading alone: readers then
    /// work and writers say why they cannot (spec §10.4: a reader that may not write never cuts
    /// a torn tail).
    static func openFile(fs: FileSystem, path: String) throws -> (fd: Int32, writable: Bool) {
        let opened: (fd: Int32, writable: Bool)
        do {
            opened = (try fs.open(path, create: false, exclusive: false, mode: 0o600), true)
        } catch let f as IOFailure where f.errno == EROFS || f.errno == EACCES || f.errno == EPERM {
            opened = (try io({ try fs.openReadOnly(path) }, "open the keychain"), false)
        } catch let f as IOFailure where f.errno == EISDIR {
            throw KeychainError.pathIsDirectory(path)
        } catch {
            return try io({ throw error }, "open the keychain")
        }
        try requireRegularFile(fs: fs, fd: opened.fd, path: path)
        return opened
    }

    /// Refuses (and closes) a keychain descriptor that is not a regular file: a FIFO, socket or
    /// device planted at the keychain's path. The open did not block (the file system opens
    /// with O_NONBLOCK); reading such a file could, or would fail with a misleading error.
    static func requireRegularFile(fs: FileSystem, fd: Int32, path: String) throws {
        let kind: FileOwnership.Kind
        do {
            kind = try io({ try fs.ownership(fd) }, "check the keychain").kind
        } catch {
            fs.close(fd)
            throw error
        }
        guard kind == .regular else {
            fs.close(fd)
            throw kind == .directory ? KeychainError.pathIsDirectory(path) : KeychainError.pathIsNotRegularFile(path)
        }
    }

    static func readHeader(fs: FileSystem, fd: Int32, path: String, device: Device) throws -> (FileHeader, Int, FileKeys) {
        let what = "the keychain \(path)"
        let prefix = try io({ try fs.read(fd, offset: 0, count: 16) }, "read the keychain")
        // A file that cannot hold the magic cannot be identified: not a Latchkey file (spec §10.1).
        guard prefix.count >= FormatConstants.fileMagic.count else {
            throw KeychainError(.decode, "\(what) is not a Latchkey file: it is \(prefix.count) bytes long, shorter than the 8-byte magic number; check the path")
        }
        do {
            let length = try FileHeader.peekLength(prefix)
            let bytes = try io({ try fs.read(fd, offset: 0, count: length) }, "read the keychain")
            let (header, authenticated, mac) = try FileHeader.decode(bytes)
            guard header.deviceUUID == device.secret.uuid else {
                throw KeychainError(.authFailed, "\(what) belongs to another device (device \(hexString(header.deviceUUID)), this device secret is \(device.uuidHex)); use the device secret it was made with, or restore a backup here")
            }
            let keys = try FileKeys(device: device.secret, fileUUID: header.fileUUID)
            guard FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: keys.headerMAC) else {
                throw KeychainError(.decode, "\(what): the header failed its integrity check (damaged, tampered with, or made with a different device secret that has the same UUID); restore from a backup")
            }
            return (header, length, keys)
        } catch let e as FormatError {
            if case .truncated = e, prefix.count < 16 {
                throw KeychainError(.decode, "\(what) is empty or truncated inside its header; restore from a backup")
            }
            throw KeychainError.fromFormat(what, e)
        }
    }

    // MARK: Reading the log

    /// Applies records appended since the last look. With `mayTruncate` (a writer, or open),
    /// an incomplete tail is confirmed under the lock and cut off.
    private func catchUp(mayTruncate: Bool) throws {
        let found = try scanMapped()
        guard found.tornAt != nil, mayTruncate else { return }
        try io({ try fs.lock(fd) }, "lock the keychain")
        defer { fs.unlock(fd) }
        // Another writer may have been mid-append: look again now that nobody can be.
        try cutTornTail(try scanMapped())
    }

    /// Cuts off the torn tail a scan found; call holding the exclusive lock (spec §10.4). A
    /// tail that holds a record failing its checksum or tag is cut only when this device has
    /// acknowledged no commit beyond the committed end: otherwise the failure is damage to
    /// an acknowledged record, which is reported and never dropped.
    private func cutTornTail(_ found: ScanEnd) throws {
        guard let torn = found.tornAt else { return }
        if let failure = found.failure, let acknowledged = try acknowledgedBeyond(log.lastSequence) {
            throw damagedTail(failure, acknowledged: acknowledged, last: log.lastSequence)
        }
        try io({
            try fs.truncate(fd, to: torn)
            try fs.sync(fd)
        }, "cut off the incomplete end of the keychain")
        recoveredTailBytes += found.fileSize - torn
    }

    /// Scans a state without an index over the open file (see `scan`).
    func scanFresh(_ state: inout LogState) throws -> ScanEnd {
        try scan(&state, fd: fd, keys: keys)
    }

    /// Scans the records of `state`'s file from where it stopped, mapping damage to errors.
    private func scan(_ state: inout LogState, fd: Int32, keys: FileKeys) throws -> ScanEnd {
        do {
            return try io({ try state.scan(fs: fs, fd: fd, keys: keys) }, "read the keychain")
        } catch let c as Corruption {
            switch c {
            case .damaged(let offset, let reason):
                throw KeychainError(.decode, "the keychain \(path) is damaged at byte \(offset) (\(reason)); nothing was changed", remedy: .repairOrRestore)
            case .newerVersion(let offset, let type):
                throw KeychainError(.decode, "the keychain \(path) holds a record of type \(type) at byte \(offset) that this Latchkey does not know; upgrade Latchkey")
            case .retiredKeybagChange(let offset):
                throw KeychainError(.decode, "the keychain \(path) holds a passcode change appended as a keybag record at byte \(offset); such records are no longer accepted because anyone holding the device secret could forge one (spec/FORMAT.md §6.6); if you changed this keychain's passcode with Latchkey 0.1, run 'latchkey compact' with that version first, then open it here; otherwise the record is forged: restore from a backup")
            }
        }
    }

    func scanMapped() throws -> ScanEnd {
        let found: ScanEnd
        do {
            found = try scan(&log, fd: fd, keys: keys)
        } catch is IndexBase.Unusable {
            found = try rebuildWithoutIndex()
        }
        highestSeen = max(highestSeen, log.lastSequence)
        lastScan = found
        return found
    }

    /// The newest sequence number this device acknowledged for this keychain when it is beyond
    /// `last`: the device state's, or this handle's own memory of the file when that is
    /// higher (a state deleted or replaced by an older copy). nil when nothing beyond `last`
    /// was acknowledged.
    private func acknowledgedBeyond(_ last: UInt64) throws -> UInt64? {
        let remembered = try acknowledgedSequence()
        return remembered > last ? remembered : nil
    }

    /// The newest sequence number this device acknowledged for this keychain: the device
    /// state's, or this handle's own memory of the file when that is higher.
    private func acknowledgedSequence() throws -> UInt64 {
        max(highestSeen, (try device.state(fileUUID: header.fileUUID))?.newestSequence ?? 0)
    }

    private func damagedTail(_ failure: TailFailure, acknowledged: UInt64, last: UInt64) -> KeychainError {
        KeychainError(.decode, "the keychain \(path) is damaged at byte \(failure.offset) (\(failure.reason)): this device acknowledged changes up to \(acknowledged), and the intact part ends at change \(last); nothing was changed",
                      remedy: .repairOrRestore)
    }

    /// The error for a file older than what this device acknowledged: damage when the scan
    /// stopped at a record that fails its checks, a rollback otherwise (spec §10.4, §13).
    private func olderThanAcknowledged(_ acknowledged: UInt64, last: UInt64, scan found: ScanEnd?) -> KeychainError {
        if let failure = found?.failure { return damagedTail(failure, acknowledged: acknowledged, last: last) }
        return KeychainError(.decode, "the keychain \(path) has been rolled back: this device last saw change \(acknowledged), the file ends at change \(last) (an older copy was put back?)",
                             remedy: .adoptRollback)
    }

    /// A keychain without a passcode whose device state remembers one (spec/SECURITY.md §2.5):
    /// someone with the device secret but not the passcode can write a header whose keybag has
    /// no passcode, so that the items added next are readable without it.
    static func passcodeRemovedBehindYourBack(_ path: String) -> KeychainError {
        KeychainError(.decode, "the keychain \(path) has no passcode, but this device remembers that it had one at its last change here: its header may have been replaced by someone who has the device secret, so that what is added to it would be readable without your passcode; nothing was read or written. If you did not remove the passcode yourself, do not use this file: restore the keychain from a backup",
                      remedy: .adoptRollback)
    }

    private func checkRollback(accept: Bool) throws {
        let state = try device.state(fileUUID: header.fileUUID)
        if let s = state, log.lastSequence < s.newestSequence, !accept {
            // The state is written only after the commit it records is durable (spec §9.3), so
            // a commit or a compaction by another process between our scan and our read of the
            // state looks like a file older than the state. Look at the file again (reopening
            // it if a compaction replaced it): a file still older than the state we read was
            // put back.
            try refresh()
        }
        if let s = state, log.lastSequence < s.newestSequence, !accept {
            throw olderThanAcknowledged(s.newestSequence, last: log.lastSequence, scan: lastScan)
        }
        if let s = state, s.passcodeSet, !header.keybag.hasPasscode, !accept {
            throw KeychainStore.passcodeRemovedBehindYourBack(path)
        }
        if state == nil || state!.newestSequence != log.lastSequence || (accept && state!.passcodeSet != header.keybag.hasPasscode) {
            var s = state ?? DeviceState(fileUUID: header.fileUUID, newestSequence: 0)
            if accept || log.lastSequence > s.newestSequence {
                s.newestSequence = log.lastSequence
                try? device.saveState(s, allowLower: accept, passcodeSet: accept ? header.keybag.hasPasscode : nil)
            }
        }
        if accept {
            highestSeen = log.lastSequence
            // An index of the newer history is ignored anyway (§17.5); removing it keeps it
            // from ever meeting a later append to the adopted file.
            if readOnlyReason == nil, let s = state, s.newestSequence > log.lastSequence { try? fs.remove(indexPath) }
        }
    }

    /// Sees what other processes appended, and reopens when compaction replaced the file.
    ///
    /// One fstat when nothing changed since the last look: `verifiedStatus` is the file's status
    /// when the path was last seen to name it. Any append, write or change of the file's links
    /// (a compaction renaming its file over the path unlinks ours) moves the inode's ctime, and
    /// then the path is compared as well. Writers compare the path under the lock every time
    /// (§11.2), so a reader could only miss a replacement whose links went 1 → 2 → 1 within one
    /// tick of the coarse ctime clock with no append: someone hard-linking the file during a
    /// compaction.
    package func refresh() throws {
        mutex.lock(); defer { mutex.unlock() }
        if needsReopen {
            try reopen()
            needsReopen = false
            return
        }
        let status = try io({ try fs.status(fd) }, "read the keychain")
        if let status, status == verifiedStatus, status.links == 1, status.size == log.end { return }
        let now = try io({ try fs.identity(path: path) }, "read the keychain")
        if now != identity {
            verifiedStatus = nil
            try reopen()
            directoryUnsynced = true
            return
        }
        if try status?.size ?? io({ try fs.size(fd) }, "read the keychain") != log.end {
            _ = try scanMapped()
        }
        // Taken before the path was compared: a change after it moves the stamp again.
        verifiedStatus = status
    }

    /// Reads the file now at the path from its start (another process compacted it, changed
    /// its passcode, or put another file there) and takes it in place of the one open, after
    /// the checks `open` makes: the same keychain (file UUID), and not older than what this
    /// device acknowledged or this handle has seen (spec §13) — an older copy renamed into
    /// place is refused, never served or written on top of. The class keys in memory are kept
    /// when the keybag is the same (a compaction); a new keybag (a passcode change, §11.6)
    /// has new class keys, so the store is locked again.
    private func reopen() throws {
        // What this device acknowledged is read once, before the file is opened: the state is
        // written only after the commit it records is durable in the file then at the path
        // (spec §9.3), and every file later put there by a compaction or a passcode change
        // continues that file's numbering, so the file opened after this read holds every
        // commit it records unless an older copy was put back. Read after the scan instead, it
        // could meet a commit that landed since and take a healthy file for a rolled-back one.
        let acknowledged = try acknowledgedSequence()
        let (newFD, writable) = try KeychainStore.openFile(fs: fs, path: path)
        do {
            let (h, size, k) = try KeychainStore.readHeader(fs: fs, fd: newFD, path: path, device: device)
            guard h.fileUUID == header.fileUUID else {
                throw KeychainError(.decode, "the file at \(path) was replaced by a different keychain; open it again")
            }
            var (fresh, covered) = initialState(fd: newFD, header: h, headerSize: size, keys: k)
            var damaged = false
            let found: ScanEnd
            do {
                found = try scan(&fresh, fd: newFD, keys: k)
            } catch is IndexBase.Unusable {
                fresh = LogState(header: h, headerSize: size)
                (covered, damaged) = (0, true)
                found = try scan(&fresh, fd: newFD, keys: k)
            }
            if fresh.lastSequence < acknowledged {
                throw olderThanAcknowledged(acknowledged, last: fresh.lastSequence, scan: found)
            }
            let sameKeys = h.keybag == keybagOfKeys
            fs.close(fd)
            fd = newFD
            identity = try io({ try fs.identity(newFD) }, "open the keychain")
            header = h
            headerSize = size
            keys = k
            log = fresh
            indexedEnd = covered
            if damaged { indexDamaged = true }
            lastScan = found
            highestSeen = max(highestSeen, log.lastSequence)
            if !writable, readOnlyReason == nil {
                readOnlyReason = KeychainStore.notWritable
            }
            epoch += 1
            verifiedStatus = nil
            if !sameKeys {
                classKeys = [:]
                unlockedOnce = false
                keybagOfKeys = h.keybag
                try unwrapDeviceClasses()
            }
        } catch {
            fs.close(newFD)
            throw error
        }
    }

    // MARK: Keys and lock state

    package var hasPasscode: Bool { mutex.lock(); defer { mutex.unlock() }; return log.keybag.hasPasscode }

    private func unwrapDeviceClasses() throws {
        for e in log.keybag.entries where e.wrap == .device {
            do {
                classKeys[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: keys.deviceWrap)
            } catch {
                throw KeychainError(.decode, "the keychain \(path): the \(e.protectionClass.code) class key does not unwrap with this device's key (damaged or tampered keybag)")
            }
        }
    }

    /// Unlocks the passcode-protected classes.
    /// - Throws: errSecAuthFailed for a wrong passcode, or while a delay after repeated wrong
    ///   passcodes runs (PasscodeThrottle); errSecParam when there is no passcode.
    package func unlock(passcode: [UInt8]) throws {
        try unlock(passcode: passcode, prefetched: nil)
    }

    private func unlock(passcode: [UInt8], prefetched: PrefetchedPasscodeKey?) throws {
        mutex.lock(); defer { mutex.unlock() }
        try refreshLocked()
        let bag = log.keybag
        guard bag.hasPasscode else { throw KeychainError.passcodeForKeychainWithout(path) }
        let unwrapped = try throttledPasscodeAttempt { () throws -> [ProtectionClass: SecretKey] in
            let passKey = try prefetched.flatMap { $0.kdf == bag.kdf ? try $0.key() : nil }
                ?? keys.passcodeKey(passcode: passcode, kdf: bag.kdf)
            var unwrapped: [ProtectionClass: SecretKey] = [:]
            for e in bag.entries where e.wrap == .passcode {
                do {
                    unwrapped[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: passKey)
                } catch {
                    throw KeychainError(.authFailed, "wrong passcode for the keychain \(path)")
                }
            }
            return unwrapped
        }
        classKeys.merge(unwrapped) { $1 }
        unlockedOnce = true
    }

    private func refreshLocked() throws { try refresh() }

    /// Drops the WhenUnlocked keys (ak, aku, akpu); AfterFirstUnlock (ck, cku) stay.
    package func lock() {
        mutex.lock(); defer { mutex.unlock() }
        guard log.keybag.hasPasscode else { return }
        for pc in [ProtectionClass.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly] {
            classKeys[pc] = nil
        }
    }

    /// Drops every class key (each `SecretKey` zeroes its bytes when released) and closes the
    /// file: `Keychain.close()`. Every later operation on this store fails with errSecIO
    /// (no open file), so nothing is read or written through it again.
    package func close() {
        mutex.lock(); defer { mutex.unlock() }
        classKeys = [:]
        log = LogState(header: header, headerSize: headerSize)   // the item table, and the index file it read
        if fd >= 0 { fs.close(fd); fd = -1 }
    }

    /// Whether items of `pc` can be read and written now.
    package func isAvailable(_ pc: ProtectionClass) -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        return classKeys[pc] != nil
    }

    /// The class key, or the error the API must return for it (errSecInteractionNotAllowed, or errSecNotAvailable for akpu without a passcode).
    func classKey(_ pc: ProtectionClass) throws -> SecretKey {
        if let k = classKeys[pc] { return k }
        if pc == .whenPasscodeSetThisDeviceOnly && !log.keybag.hasPasscode {
            throw KeychainError(.notAvailable, "WhenPasscodeSetThisDeviceOnly (akpu) items need a keychain with a passcode, and this keychain has none",
                                remedy: .setPasscode)
        }
        throw KeychainError.locked(pc)
    }

    // MARK: Items

    /// A snapshot of the live items (after `refresh`). Reads the whole index when one is in
    /// use; when that fails and the log cannot be read either (it is damaged), throws, and
    /// the next call opens the file again (`needsReopen`): never a shorter list.
    func slots() throws -> [(ID16, ItemSlot)] {
        mutex.lock(); defer { mutex.unlock() }
        do {
            try materializeItems()
        } catch {
            needsReopen = true
            throw error
        }
        return log.items.map { ($0.key, $0.value) }
    }

    /// Runs `body` holding the store's (recursive) lock, so that what it reads and decrypts is
    /// one consistent state. Locks taken inside `body` come after the store's: the attribute
    /// index takes its own there, as `update` and `delete` do (withWriteLock → matches → index),
    /// so the two orders never meet.
    func withStoreLock<T>(_ body: () throws -> T) rethrows -> T {
        mutex.lock(); defer { mutex.unlock() }
        return try body()
    }

    /// Runs `body` on the current log state (live items and the journal of changes) and the
    /// reopen count, under the store's lock; no copy of the item table is made. The items are
    /// in memory (read from the index first when one is in use), so `body` may enumerate them.
    /// - Throws: errSecDecode / errSecIO when the index fails and the log cannot be read again.
    func withLogState<T>(_ body: (LogState, UInt64) throws -> T) throws -> T {
        mutex.lock(); defer { mutex.unlock() }
        try materializeItems()
        return try body(log, epoch)
    }

    func itemClass(of slot: ItemSlot) -> ItemClass? { itemClass(tag: slot.classTag) }

    func itemClass(tag: UInt32) -> ItemClass? { tagToClass[tag] }

    func classTag(_ c: ItemClass) -> UInt32 { keys.classTagWord(c) }

    /// The live item with this unique key. With an index in use this reads the O(log N) pages
    /// its search touches; when one fails, or the index and the records after it break a rule
    /// of the log together (ItemTable), the items are rebuilt from the log; when that fails too
    /// (the log is damaged) the error is thrown, and the next call opens the file again
    /// (`needsReopen`).
    func slot(uniqueKey: UniqueKey) throws -> (ID16, ItemSlot)? {
        mutex.lock(); defer { mutex.unlock() }
        let hash = keys.withUniqueKeyHash(uniqueKey) {
            ID16(high: UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 low: UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        promoteIndexIfWorthIt()
        do {
            return try withIndexFallback { () throws -> (ID16, ItemSlot)? in
                try log.items.item(uniqueHash: hash)
            }
        } catch {
            needsReopen = true
            throw error
        }
    }

    /// The live item with this UUID (as `slot(uniqueKey:)`).
    func slot(id: ID16) throws -> ItemSlot? {
        mutex.lock(); defer { mutex.unlock() }
        promoteIndexIfWorthIt()
        do {
            return try withIndexFallback { try log.items.slot(id) }
        } catch {
            needsReopen = true
            throw error
        }
    }

    /// Decrypts one item.
    /// - Throws: errSecInteractionNotAllowed / errSecNotAvailable when its class is locked;
    ///   errSecDecode when it does not decrypt, or when its plaintext has a version this
    ///   Latchkey does not know (then the message says to upgrade, spec §12.5).
    /// `descriptor` is the file the slot was found in, when that is not the store's own
    /// (`verify` scans the file now at the path, which a compaction may have replaced).
    /// `id`, when the caller knows it, is the UUID the slot was found under: the record must
    /// carry it (`authenticatedPayload`).
    func read(_ slot: ItemSlot, id: ID16? = nil, from descriptor: Int32? = nil) throws -> ItemPlaintext {
        mutex.lock(); defer { mutex.unlock() }
        let record = try io({ try fs.read(descriptor ?? fd, offset: slot.offset, count: Int(slot.recordSize)) }, "read the keychain")
        return try open(authenticatedPayload(record[...], slot, id: id), slot)
    }

    /// Decrypts the payload of an item's put record (from `authenticatedPayload`).
    func open(_ payload: ArraySlice<UInt8>, _ slot: ItemSlot) throws -> ItemPlaintext {
        mutex.lock(); defer { mutex.unlock() }
        let key = try classKey(slot.protection)
        itemsDecrypted += 1
        // A buffer grown for a large item is not kept (it was zeroed when the item was decoded).
        defer { if plaintextScratch.count > 64 << 10 { plaintextScratch = [] } }
        let plaintext = try KeychainStore.open(payload, offset: slot.offset, classKey: key, fileUUID: header.fileUUID, path: path,
                                               context: gcm, scratch: &plaintextScratch)
        // The class the clear part files the item under must be the one it reports (spec §8.4).
        guard keys.classTagWord(plaintext.itemClass) == slot.classTag else {
            throw KeychainError(.decode, "the item at byte \(slot.offset) of \(path) is filed under another class than its contents say (written by a faulty writer, or by someone who held its class key); nothing was returned",
                                remedy: .verifyAndRestore)
        }
        return plaintext
    }

    /// Decrypts an item's put payload with its class key; touches no state of a store, so
    /// `verify` runs it on a second thread.
    static func open(_ payload: ArraySlice<UInt8>, offset: UInt64, classKey key: SecretKey, fileUUID: [UInt8],
                     path: String) throws -> ItemPlaintext {
        var unused: [UInt8] = []
        return try open(payload, offset: offset, classKey: key, fileUUID: fileUUID, path: path, context: nil, scratch: &unused)
    }

    /// The same; with `context` (and its `scratch`, used by one thread at a time) the payload
    /// is opened in place (`ItemPutPayload.open(_:classKey:fileUUID:context:scratch:)`); when
    /// that fails, decoding and opening it again gives the error to report.
    static func open(_ payload: ArraySlice<UInt8>, offset: UInt64, classKey key: SecretKey, fileUUID: [UInt8],
                     path: String, context: GCMContext?, scratch: inout [UInt8]) throws -> ItemPlaintext {
        do {
            if let context, let p = try ItemPutPayload.open(payload, classKey: key, fileUUID: fileUUID, context: context, scratch: &scratch) {
                return p
            }
            let put = try ItemPutPayload.decode(payload)
            return try put.open(classKey: key, fileUUID: fileUUID)
        } catch {
            // An unknown plaintext version needs a newer Latchkey; it is not damage (spec §1.4, §12.5).
            if let e = error as? FormatError, case .unsupportedVersion = e {
                throw KeychainError.fromFormat("an item at byte \(offset) of \(path)", e)
            }
            throw KeychainError(.decode, "an item at byte \(offset) of \(path) does not decrypt (damaged or tampered)", underlying: String(describing: error))
        }
    }

    /// The payload of an item's put record as read now, after checking that it is still the
    /// record the scan authenticated: its frame, its tag at the slot's offset and its sequence
    /// number. Bytes overwritten in place after the scan (an older record of the same item
    /// copied over the newer one, say) are refused, never served (spec §10.6).
    ///
    /// With `id` the record must also be the put of that item: a slot read from an index whose
    /// entries name other items' records (signed by someone with the device secret, spec
    /// §17.5) is never served as this item. The index is removed and the next call reads the
    /// keychain again from its log (`needsReopen`).
    func authenticatedPayload(_ record: ArraySlice<UInt8>, _ slot: ItemSlot, id: ID16? = nil) throws -> ArraySlice<UInt8> {
        guard record.count == Int(slot.recordSize) else {
            throw KeychainError(.decode, "the keychain \(path) ends inside an item record at byte \(slot.offset); it was truncated by something other than Latchkey",
                                remedy: .verifyAndRestore)
        }
        guard let frame = try? FrameHeader.decode(record[...]), frame.type == RecordType.itemPut.rawValue,
              frame.sequence == slot.sequence, frame.recordSize == record.count,
              RecordFrame.verify(record: record[...], offset: slot.offset, macKey: keys.recordMAC),
              let clear = try? ItemPutPayload.decodeClear(record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)),
              clear.classTag == slot.classTag, clear.protectionClass == slot.protection,
              clear.flags == slot.flags, ID16(clear.uniqueKeyHash) == slot.uniqueHash else {
            // A slot from an index (spec §17) that does not match its record: the index goes.
            if !log.items.isMaterialized, readOnlyReason == nil { try? fs.remove(indexPath) }
            throw KeychainError(.decode, "the item record at byte \(slot.offset) of \(path) changed after the keychain was read (overwritten in place: damaged or tampered with); nothing was returned",
                                remedy: .verifyAndRestore)
        }
        let payload = record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)
        if let id, !id.bytes.elementsEqual(payload.prefix(16)) {
            if readOnlyReason == nil { try? fs.remove(indexPath) }
            needsReopen = true
            throw KeychainError(.decode, "the index of \(path) named, for one item, the record of another item (at byte \(slot.offset)); nothing was returned, and the index will not be used again: run the command again (the keychain is then read from its log), then 'verify'",
                                remedy: .verifyAndRestore)
        }
        return payload
    }

    // MARK: Writing

    /// Runs `body` with the exclusive file lock held and the log caught up: the place for
    /// read-check-write sequences such as "fail if the unique key exists, else add".
    func withWriteLock<T>(_ body: () throws -> T) throws -> T {
        mutex.lock(); defer { mutex.unlock() }
        if let readOnlyReason {
            throw KeychainError(.readOnly, "the keychain \(path) can be read but not changed: \(readOnlyReason)")
        }
        while true {
            try io({ try fs.lock(fd) }, "lock the keychain")
            let now = try io({ try fs.identity(path: path) }, "lock the keychain")
            if now == identity { break }
            fs.unlock(fd)
            try reopen()
            directoryUnsynced = true
        }
        defer { fs.unlock(fd) }
        removeLeftoversOnce()
        try catchUpLocked()
        if directoryUnsynced {
            // Another process (or a failed directory fsync of ours) put this file at the path;
            // an append to it is durable only once that name is (spec §11.4).
            try io({ try fs.syncDirectory(directoryOf(path)) }, "sync the keychain's directory")
            directoryUnsynced = false
        }
        let result = try body()
        maybeWriteIndex()
        return result
    }

    private func catchUpLocked() throws {
        try cutTornTail(try scanMapped())
    }

    /// Appends one transaction: every record in one write, then one fsync. Call inside
    /// `withWriteLock`. Checks unique keys first; on any failure nothing changes.
    /// - Throws: errSecDuplicateItem, errSecItemNotFound (delete of a missing item), class-key
    ///   errors, errSecIO.
    func commit(_ mutations: [Mutation]) throws {
        guard !mutations.isEmpty else { return }
        let planned = try withIndexFallback { try plan(mutations) }
        try append(planned)
    }

    /// Seals and checks the records of a transaction against the live items (read, not
    /// changed).
    private func plan(_ mutations: [Mutation]) throws -> [(type: RecordType, payload: [UInt8], op: PendingOp)] {
        // Validate against small overlays on the live indexes (copying the indexes would
        // cost O(items) per commit): nil in an overlay means "removed by this transaction".
        var owners: [ID16: ID16?] = [:]
        var slots: [ID16: ItemSlot?] = [:]
        func owner(_ hash: ID16) throws -> ID16? { if let o = owners[hash] { return o }; return try log.items.owner(hash) }
        func slot(_ id: ID16) throws -> ItemSlot? { if let s = slots[id] { return s }; return try log.items.slot(id) }
        var planned: [(type: RecordType, payload: [UInt8], op: PendingOp)] = []
        for m in mutations {
            switch m {
            case .put(let id, let plaintext, let pc, let flags):
                let sealed = try seal(plaintext, uuid: id.bytes, protection: pc, flags: flags)
                let hash = ID16(sealed.uniqueKeyHash)
                if let o = try owner(hash), o != id {
                    throw KeychainError(.duplicateItem, "an item with the same unique key already exists (for a password: same class, account, service and access group)")
                }
                if let old = try slot(id) { owners[old.uniqueHash] = .some(nil) }
                owners[hash] = id
                let s = ItemSlot(offset: 0, recordSize: 0, classTag: sealed.classTagWord,
                                 protection: pc, flags: flags, uniqueHash: hash, sequence: 0)
                slots[id] = s
                let encoded = sealed.encode()
                planned.append((.itemPut, encoded, .put(id, s)))
                // Right after its put, in the same transaction (spec §7.6).
                let hashes = keys.attributeHashRecord(for: plaintext, putPayload: encoded)
                planned.append((.attributeHashes, hashes.encode(), .hashes(id, hashes.hashes)))
            case .delete(let id):
                guard let old = try slot(id) else {
                    throw KeychainError(.itemNotFound, "the item to delete no longer exists")
                }
                slots[id] = .some(nil)
                owners[old.uniqueHash] = .some(nil)
                planned.append((.itemDelete, ItemDeletePayload(uuid: id.bytes).encode(), .delete(id)))
            }
        }
        return planned
    }

    /// Appends planned records as one transaction (see `commit`).
    private func append(_ planned: [(type: RecordType, payload: [UInt8], op: PendingOp)]) throws {
        let start = log.end
        var offset = start
        var sequence = log.lastSequence
        var records: [UInt8] = []
        var applied: [(PendingOp, UInt64)] = []
        var lastOffset = start
        for (i, p) in planned.enumerated() {
            sequence += 1
            let flags = i < planned.count - 1 ? FrameHeader.continuesFlag : 0
            let record = RecordFrame.encode(type: p.type.rawValue, flags: flags, sequence: sequence, payload: p.payload,
                                            offset: offset, macKey: keys.recordMAC)
            if case .put(let id, var s) = p.op {
                (s.offset, s.recordSize, s.sequence) = (offset, UInt32(record.count), sequence)
                applied.append((.put(id, s), offset))
            } else {
                applied.append((p.op, offset))
            }
            lastOffset = offset
            offset += UInt64(record.count)
            records.append(contentsOf: record)
        }
        do {
            try fs.write(fd, offset: start, records)
            try fs.sync(fd)
        } catch {
            // Leave the file as it was: cut back whatever part of the write landed.
            let cutBack = Result { () throws -> Void in
                try fs.truncate(fd, to: start)
                try fs.sync(fd)
            }
            if case .failure = cutBack { throw changeMayHaveLanded(error) }
            _ = try io({ throw error }, "write to the keychain")
        }
        // Durable from here: the call succeeds whatever follows (spec §11.4). The records are
        // applied as a reader would apply them, from what was written rather than by reading
        // it back, so a failing read cannot turn a commit into a reported failure.
        do {
            for (op, at) in applied { try log.apply(op, at: at) }
            log.lastRecordOffset = lastOffset
            log.end = offset
            log.lastSequence = sequence
            log.recordCount += planned.count
            log.skippedAncillary += planned.filter { RecordType.isAncillary($0.type.rawValue) }.count
            highestSeen = max(highestSeen, sequence)
        } catch {
            needsReopen = true
        }
        recordCommit(sequence)
    }

    /// The error for a transaction whose write or fsync failed after its closing record was
    /// handed to the file, when cutting the file back failed too: the records may be in the
    /// file whole, or come back whole after a power cut, and every reader then takes them as
    /// committed (spec §10.4). "Nothing changed" cannot be promised, and trying again blindly
    /// could make the change twice. The next operation reads the file again.
    func changeMayHaveLanded(_ error: Error) -> KeychainError {
        needsReopen = true
        let what = "what was written could not be cut back either, so the change may be in the keychain: check with 'latchkey find' before trying again"
        if let e = error as? KeychainError {
            return KeychainError(.io, "\(e.message); \(what)", underlying: e.underlying)
        }
        return KeychainError(.io, "could not write to the keychain \(path): \(ioHint(error)); \(what)", underlying: String(describing: error))
    }

    /// Records a durable commit's last sequence number in the device state (spec §9.3): best
    /// effort, after the data is durable, never failing the commit.
    /// `hasPasscode`: whether the keychain has a passcode after this commit (default: the
    /// header's keybag), which the state remembers (spec §9.2) so that a header replaced by
    /// one without a passcode is refused at the next open.
    func recordCommit(_ sequence: UInt64, hasPasscode: Bool? = nil) {
        highestSeen = max(highestSeen, sequence)
        // saveState reads the state under its lock and keeps the other fields (attempt counter).
        try? device.saveState(DeviceState(fileUUID: header.fileUUID, newestSequence: sequence),
                              passcodeSet: hasPasscode ?? header.keybag.hasPasscode)
    }

    /// Encrypts an item for a put record under a fresh item key. Every writer seals through
    /// here, so the size limit of spec §6.4 is checked before any byte is written.
    /// - Throws: errSecParam for an item over the limit; class-key errors.
    func seal(_ plaintext: ItemPlaintext, uuid: [UInt8], protection: ProtectionClass, flags: UInt8) throws -> ItemPutPayload {
        let key = try classKey(protection)
        do {
            return try ItemPutPayload.seal(plaintext, uuid: uuid, protectionClass: protection, flags: flags,
                                           keys: keys, classKey: key, fileUUID: header.fileUUID)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the item", e)
        }
    }

    // MARK: Passcode change

    /// Changes, sets or removes the passcode (spec §11.6). Every class whose wrapping changes
    /// gets a new random class key (all but dk and dku, whose entries are kept byte for byte),
    /// each live item key of those classes is rewrapped under its class's new key, and the
    /// whole file is rewritten as compaction rewrites it: so no keybag of the old passcode
    /// survives in the keychain, and nothing added or changed afterwards can be read with the
    /// old passcode and an old copy of the file. Removing the passcode deletes the
    /// WhenPasscodeSetThisDeviceOnly (akpu) items, as iOS does. A kill at any moment leaves the
    /// old file with the old passcode or the new file with the new one.
    /// - Parameters:
    ///   - old: the current passcode; nil for a keychain without one.
    ///   - new: the new passcode; nil removes the passcode.
    /// - Returns: the number of akpu items deleted (only when the passcode is removed).
    /// - Throws: errSecAuthFailed for a wrong current passcode (throttled as an unlock);
    ///   errSecParam for an empty new passcode, for a current passcode given to a keychain
    ///   without one, or for removing a passcode that is not set; errSecIO.
    @discardableResult
    package func changePasscode(old: [UInt8]?, new: [UInt8]?, logN: UInt8 = KDFParameters.defaultLogN) throws -> Int {
        if let new, new.isEmpty { throw KeychainError(.param, "the new passcode is empty; choose a non-empty passcode, or remove the passcode instead") }
        return try withWriteLock {
            let bag = log.keybag
            var current: [ProtectionClass: SecretKey] = [:]
            if bag.hasPasscode {
                guard let old else { throw KeychainError(.authFailed, "the current passcode of \(path) is needed to change it") }
                current = try throttledPasscodeAttempt { () throws -> [ProtectionClass: SecretKey] in
                    let oldKey = try keys.passcodeKey(passcode: old, kdf: bag.kdf)
                    var all: [ProtectionClass: SecretKey] = [:]
                    for e in bag.entries {
                        do {
                            all[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: e.wrap == .passcode ? oldKey : keys.deviceWrap)
                        } catch {
                            throw KeychainError(.authFailed, "wrong current passcode for the keychain \(path)")
                        }
                    }
                    return all
                }
            } else {
                if old != nil { throw KeychainError.passcodeForKeychainWithout(path) }
                guard new != nil else { throw KeychainError(.param, "the keychain \(path) has no passcode to remove") }
                for e in bag.entries { current[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: keys.deviceWrap) }
            }
            var fresh: [ProtectionClass: SecretKey] = [:]
            for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || new != nil {
                fresh[pc] = pc.isAlwaysAvailable ? current[pc]! : try SecretKey.random()
            }
            let kdf: KDFParameters = new == nil ? .none : .scrypt(salt: try Crypto.randomBytes(FormatConstants.saltSize), logN: logN)
            let newKey = try new.map { try keys.passcodeKey(passcode: $0, kdf: kdf) }
            var newBag = try KeychainStore.wrapKeybag(fresh, kdf: kdf, keys: keys, passcodeKey: newKey)
            // dk and dku keep their keys and their entries, byte for byte.
            newBag.entries = newBag.entries.map { e in e.wrap == .device && e.protectionClass.isAlwaysAvailable ? (bag.entry(for: e.protectionClass) ?? e) : e }
            var dropped = 0
            try rewrite(keybag: newBag, keys: fresh, operation: "change the passcode of") { payload in
                let pc = ProtectionClass(rawValue: payload[20])!
                guard let newClassKey = fresh[pc] else { dropped += 1; return false }
                if pc.isAlwaysAvailable { return true }
                guard let oldClassKey = current[pc] else {
                    throw KeychainError(.decode, "the keychain \(path) holds a \(pc.code) item but its keybag has no \(pc.code) class key (damaged)")
                }
                let wrapped = Array(payload[40..<80])
                let itemKey: SecretKey
                do {
                    itemKey = try Crypto.unwrap(wrapped, with: oldClassKey)
                } catch {
                    throw KeychainError(.decode, "an item of the keychain \(path) does not unwrap with its class key (damaged or tampered); nothing was changed",
                                        remedy: .verifyAndRestore)
                }
                payload.replaceSubrange(40..<80, with: try Crypto.wrap(itemKey, with: newClassKey))
                return true
            }
            return dropped
        }
    }

    // MARK: Compaction

    /// Rewrites the live records into a new file: temp file, fsync, rename, fsync directory
    /// (spec §11). Works while locked: item payloads are copied unchanged.
    /// - Returns: bytes before and after.
    @discardableResult
    package func compact() throws -> (before: UInt64, after: UInt64) {
        try withWriteLock {
            let before = log.end
            try rewrite(keybag: log.keybag, keys: nil, operation: "compact") { _ in true }
            return (before, log.end)
        }
    }

    /// Writes the live items into a new file with the header's `keybag` and takes it in place
    /// of the keychain (spec §11.5): a temporary file in the same directory (0600), fsync,
    /// rename over the path, fsync of the directory, then the device state. Each live put
    /// record is read, authenticated again, and passed to `transform`, which may change its
    /// wrapped item key (bytes 40–79) and returns false to leave the item out; the frames and
    /// tags are recomputed. `newKeys` are the class keys of `keybag` when it has other keys
    /// than the file's (a passcode change). Call inside `withWriteLock`. On any failure before
    /// the rename the keychain is untouched and the temporary file removed; once the new file
    /// is renamed into place it is the keychain, and the call succeeds only when the directory
    /// fsync that makes the rename durable returns.
    private func rewrite(keybag: Keybag, keys newKeys: [ProtectionClass: SecretKey]?, operation: String,
                         _ transform: (inout [UInt8]) throws -> Bool) throws {
        // The new file takes a sequence number of its own: it is newer than every copy of the
        // old one even with no live item, so putting an old copy back is a rollback (§11.5).
        var newHeader = header
        newHeader.baseSequence = log.lastSequence + 1
        newHeader.keybag = keybag
        newHeader.minor = FormatConstants.fileMinor
        newHeader.extensionBytes = []
        let headerBytes = newHeader.encode(macKey: keys.headerMAC)
        removeAbandonedCompactions()
        let temp = path + ".compact-" + hexString(try Crypto.randomBytes(4))
        var offset = UInt64(headerBytes.count)
        var sequence = newHeader.baseSequence
        let tfd = try io({ try fs.open(temp, create: true, exclusive: true, mode: 0o600) }, "create the new file to \(operation) the keychain")
        do {
            try io({ try fs.write(tfd, offset: 0, headerBytes) }, "write the new file to \(operation) the keychain")
            var batch: [UInt8] = []
            batch.reserveCapacity(1 << 20)
            func flush() throws {
                try io({ try fs.write(tfd, offset: offset - UInt64(batch.count), batch) }, "write the new file to \(operation) the keychain")
                batch.removeAll(keepingCapacity: true)
            }
            for (id, slot) in try liveSlotsInFileOrder() {
                let record = try io({ try fs.read(fd, offset: slot.offset, count: Int(slot.recordSize)) }, "read the keychain")
                var payload = Array(try authenticatedPayload(record[...], slot, id: id))
                // A put without one (an older writer's) gets its hash record here when its class
                // key is available (spec §11.5), so compacting makes such items hashed.
                let hashes = try boundHashRecord(after: slot, put: record) ?? hashRecordByDecrypting(payload)
                guard try transform(&payload) else { continue }
                sequence += 1
                let reframed = RecordFrame.encode(type: RecordType.itemPut.rawValue, flags: hashes == nil ? 0 : FrameHeader.continuesFlag,
                                                  sequence: sequence, payload: payload, offset: offset, macKey: keys.recordMAC)
                offset += UInt64(reframed.count)
                batch.append(contentsOf: reframed)
                if var h = hashes {
                    // The put's hash record goes with it, hashes unchanged; a passcode change
                    // rewraps the item key, so the binding is taken from the new payload (§11.6).
                    h.binding = Array(payload[AttributeHashRecord.bindingRange])
                    sequence += 1
                    let hashRecord = RecordFrame.encode(type: RecordType.attributeHashes.rawValue, flags: 0, sequence: sequence,
                                                        payload: h.encode(), offset: offset, macKey: keys.recordMAC)
                    offset += UInt64(hashRecord.count)
                    batch.append(contentsOf: hashRecord)
                }
                if batch.count >= 1 << 20 { try flush() }
            }
            if !batch.isEmpty { try flush() }
            try io({ try fs.sync(tfd) }, "write the new file to \(operation) the keychain")
            if !keybag.hasPasscode, header.keybag.hasPasscode {
                // The passcode goes: the device state forgets it first, so that a process killed
                // between the rename and `recordCommit` leaves no state that refuses the new
                // file (spec §9.2, §10.5). Killed before the rename, the old file keeps its
                // passcode and the flag is set again at its next commit.
                try? device.saveState(DeviceState(fileUUID: header.fileUUID, newestSequence: 0), passcodeSet: false)
            }
            try io({ try fs.rename(temp, path) }, "replace the keychain with the new file")
        } catch {
            fs.close(tfd)
            try? fs.remove(temp)
            throw error
        }
        fs.close(tfd)
        // From here on the new file is the keychain, for every process. The old file's index
        // no longer matches its header (§17.5); the next index is written for the new one.
        try? fs.remove(indexPath)
        let synced = Result { try fs.syncDirectory(directoryOf(path)) }
        if let newKeys {
            classKeys = newKeys
            keybagOfKeys = keybag
            unlockedOnce = true
        }
        do {
            try reopen()
        } catch {
            needsReopen = true
        }
        if case .failure(let error) = synced {
            directoryUnsynced = true
            throw KeychainError(.io, "the keychain \(path) was replaced by its new file, which is in force now, but the directory could not be synced, so after a power cut the old file may come back",
                                underlying: String(describing: error), remedy: .compactAgain)
        }
        recordCommit(sequence, hasPasscode: keybag.hasPasscode)
    }

    /// The hash record bound to the put record at `slot` (spec §7.6), read again from the file
    /// and authenticated at its offset: the record right after the put, in its transaction,
    /// with the put's UUID and binding. Nil when there is none (the item is unhashed).
    private func boundHashRecord(after slot: ItemSlot, put record: [UInt8]) throws -> AttributeHashRecord? {
        let at = slot.offset + UInt64(slot.recordSize)
        let headerSize = FormatConstants.frameHeaderSize
        let largest = headerSize + FormatConstants.frameTagSize + AttributeHashRecord.fixedSize
            + AttributeHashRecord.maxHashes * AttributeHashRecord.hashSize
        guard let put = try? FrameHeader.decode(record[...]), put.continues, at + UInt64(headerSize) <= log.end else { return nil }
        let head = try io({ try fs.read(fd, offset: at, count: headerSize) }, "read the keychain")
        guard let frame = try? FrameHeader.decode(head[...]), frame.type == RecordType.attributeHashes.rawValue,
              frame.sequence == slot.sequence + 1, frame.recordSize <= largest, at + UInt64(frame.recordSize) <= log.end else { return nil }
        let bytes = try io({ try fs.read(fd, offset: at, count: frame.recordSize) }, "read the keychain")
        guard bytes.count == frame.recordSize, RecordFrame.verify(record: bytes[...], offset: at, macKey: keys.recordMAC),
              let h = AttributeHashRecord.decode(bytes.dropFirst(headerSize).dropLast(FormatConstants.frameTagSize)),
              let binding = AttributeHashRecord.binding(ofPut: record.dropFirst(headerSize).dropLast(FormatConstants.frameTagSize)),
              h.uuid.elementsEqual(record[headerSize..<headerSize + 16]), h.binding.elementsEqual(binding) else { return nil }
        return h
    }

    /// The hash record of a put payload computed from its plaintext (spec §7.6), or nil when
    /// its class key is not available or it does not decrypt (it is then copied unhashed, as it
    /// was).
    private func hashRecordByDecrypting(_ payload: [UInt8]) -> AttributeHashRecord? {
        guard let put = try? ItemPutPayload.decode(payload[...]), let key = try? classKey(put.protectionClass),
              let plaintext = try? put.open(classKey: key, fileUUID: header.fileUUID) else { return nil }
        return keys.attributeHashRecord(for: plaintext, putPayload: payload)
    }

    private func liveSlotsInFileOrder() throws -> [(ID16, ItemSlot)] {
        try materializeItems()
        return log.items.map { ($0.key, $0.value) }.sorted { $0.1.offset < $1.1.offset }
    }

    /// Removes the temporary files of compactions that died before their rename (a killed
    /// process, a power cut). Call with the write lock held: a live compaction holds the lock
    /// from creating its temporary file until the rename, so none of them can be live now
    /// (spec §11.5). Best effort: a file that cannot be removed stays.
    func removeAbandonedCompactions() {
        let directory = directoryOf(path)
        let prefix = lastPathComponent(path) + ".compact-"
        for name in fs.list(directory) where isTemporaryName(name, prefix: prefix) {
            try? fs.remove(path.contains("/") ? directory + "/" + name : name)
        }
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

extension KeychainStore {
    /// Checks a passcode without changing the lock state (user presence).
    /// - Throws: errSecAuthFailed when it is wrong; errSecNotAvailable without a passcode.
    package func checkPasscode(_ passcode: [UInt8]) throws {
        let bag = kdfAndEntry()
        guard let entry = bag.entry else {
            throw KeychainError(.notAvailable, "this keychain has no passcode to check")
        }
        try throttledPasscodeAttempt {
            let passKey = try keys.passcodeKey(passcode: passcode, kdf: bag.kdf)
            do {
                _ = try Crypto.unwrap(entry.wrappedKey, with: passKey)
            } catch {
                throw KeychainError(.authFailed, "wrong passcode")
            }
        }
    }

    private func kdfAndEntry() -> (kdf: KDFParameters, entry: KeybagEntry?) {
        mutex.lock(); defer { mutex.unlock() }
        let bag = log.keybag
        return (bag.kdf, bag.entries.first { $0.wrap == .passcode })
    }
}

/// The passcode key of `FileKeys.passcodeKey`, derived on a thread of its own (see
/// `KeychainStore.open(path:device:acceptRollback:unlockingWith:)`).
///
/// The thread is a joined pthread, not a detached one: `key()` returns only once it has ended,
/// its OpenSSL state freed (`Crypto.releaseThreadState`). A process that exited while a
/// detached thread was still ending had OpenSSL's exit-time cleanup free that state a second
/// time (AddressSanitizer: double free; LeakSanitizer: its 904 bytes leaked).
final class PrefetchedPasscodeKey: @unchecked Sendable {
    let kdf: KDFParameters
    private let lock = Lock()
    private var thread: pthread_t?
    /// Written by the deriving thread; read only after it was joined.
    private var result: Result<SecretKey, Error>?
    private let keys: FileKeys
    private var passcode: [UInt8]

    init(keys: FileKeys, passcode: [UInt8], kdf: KDFParameters) {
        self.kdf = kdf
        self.keys = keys
        self.passcode = passcode
        var t = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        if pthread_create(&t, nil, { raw in
            let me = Unmanaged<PrefetchedPasscodeKey>.fromOpaque(raw!).takeRetainedValue()
            me.derive()
            Crypto.releaseThreadState()
            return nil
        }, context) == 0 {
            thread = t
        } else {
            Unmanaged<PrefetchedPasscodeKey>.fromOpaque(context).release()
            derive()   // no thread: derive here
        }
    }

    private func derive() {
        result = Result { try keys.passcodeKey(passcode: passcode, kdf: kdf) }
        Crypto.cleanse(&passcode)
    }

    /// Joins the thread (once); rethrows what the derivation threw.
    func key() throws -> SecretKey {
        lock.lock(); defer { lock.unlock() }
        if let t = thread {
            pthread_join(t, nil)
            thread = nil
        }
        return try result!.get()
    }

    /// `open` always calls `key()`; this only covers a caller that did not (the last reference
    /// may then be the thread's own, and a thread cannot join itself).
    deinit {
        if let t = thread {
            if pthread_equal(t, pthread_self()) != 0 { pthread_detach(t) } else { pthread_join(t, nil) }
        }
    }
}

