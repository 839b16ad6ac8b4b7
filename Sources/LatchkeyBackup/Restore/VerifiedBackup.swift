#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// Where a restore will put the items, as far as planning needs to know.
public enum RestoreTarget {
    /// A keychain that does not exist yet; `hasPasscode` says whether it will have one.
    case newKeychain(hasPasscode: Bool)
    /// An existing keychain (`--merge`), unlocked for every class the backup restores.
    case existing(Keychain)
}

/// A backup whose every byte has been checked (spec/BACKUP.md §11): the manifest MAC, the
/// size and SHA-256 of every entry, and every item that can be decrypted here. Nothing has
/// been written. `plan` is what a restore would do now; `restore(into:)` and
/// `restoreNewKeychain(…)` read the archive a second time and write.
///
/// ```swift
/// let source = try BackupSource.file("keychain.backup")
/// let backup = try VerifiedBackup.verify(source, device: try? Device.load(path: devicePath),
///                                        password: { Array("backup password".utf8) },
///                                        target: .newKeychain(hasPasscode: true))
/// let report = try backup.restoreNewKeychain(path: keychainPath, devicePath: devicePath,
///                                            passcode: Array("new passcode".utf8))
/// ```
public final class VerifiedBackup {
    public let source: BackupSource
    public let info: BackupInfo
    /// What a restore into the target would do now: the `--dry-run` report.
    public private(set) var plan: RestoreReport
    let unlocked: UnlockedKeybag
    let entries: [ManifestEntry]
    let device: Device?
    let target: RestoreTarget
    let policy: RestoreConflictPolicy

    private init(
        source: BackupSource, info: BackupInfo, plan: RestoreReport, unlocked: UnlockedKeybag,
        entries: [ManifestEntry], device: Device?, target: RestoreTarget, policy: RestoreConflictPolicy
    ) {
        self.source = source
        self.info = info
        self.plan = plan
        self.unlocked = unlocked
        self.entries = entries
        self.device = device
        self.target = target
        self.policy = policy
    }

    /// Reads the whole archive once and checks every byte, without writing anything.
    /// - Parameters:
    ///   - device: this machine's device (nil when it has no device secret yet); for
    ///     `.existing`, the keychain's own device is used.
    ///   - password: asked once, after the keybag entry is read, when the backup has one.
    ///   - conflicts: for `.existing`, how an item the keychain already holds is settled.
    ///   - listItems: the report lists each item's outcome (`RestoreReport.items`), which
    ///     takes memory per item; the counts are there either way.
    /// - Throws: errSecAuthFailed (wrong or missing password; a device-only backup from
    ///   another device); errSecDecode (damaged, truncated, tampered, unknown version, path
    ///   traversal, links); errSecIO; for `.existing`, errors reading the keychain's items.
    public static func verify(
        _ source: BackupSource, device: Device?, password: () throws -> [UInt8]?,
        target: RestoreTarget, conflicts policy: RestoreConflictPolicy = .newerWins, listItems: Bool = false,
        progress: ((_ done: Int64, _ total: Int64) -> Void)? = nil
    ) throws -> VerifiedBackup {
        var device = device
        var keychainPath = ""
        var hasPasscode = false
        var existing: KeychainStore?
        if case .existing(let kc) = target {
            let store = try kc.requireLocalStore()
            existing = store
            device = store.boundDevice
            keychainPath = store.path
            hasPasscode = kc.hasPasscode
        } else if case .newKeychain(let p) = target {
            hasPasscode = p
        }
        var unlocked: UnlockedKeybag?
        var report: RestoreReport?
        var checks = DuplicateCheck()
        let pass = ArchivePass(source: source, progress: progress)
        let result = try pass.run(
            unlock: { bag, digest in
                let u = try Self.unlock(bag, digest: digest, device: device, password: password, source: source)
                unlocked = u
                report = RestoreReport(
                    backup: Self.info(bag, manifest: nil, device: device), keychain: keychainPath,
                    createdKeychain: { if case .newKeychain = target { return true } else { return false } }(),
                    merge: { if case .existing = target { return true } else { return false } }(), dryRun: true)
                if case .existing = target { report!.conflicts = policy }
                if listItems { report!.items = [] }
                return u
            },
            item: { item in
                try checks.check(item, source: source)
                let decision: Decision
                switch target {
                case .newKeychain:
                    decision = try Self.decide(
                        item, hasPasscode: hasPasscode, provenance: unlocked!.provenance, policy: policy,
                        conflicts: { _, _ in [] }, read: { _ in fatalError() })
                case .existing:
                    let store = existing!
                    decision = try Self.decide(
                        item, hasPasscode: hasPasscode, provenance: unlocked!.provenance, policy: policy,
                        conflicts: store.conflicts(uuid:uniqueKey:), read: { try store.read($0) })
                }
                Self.count(decision, item, into: &report!)
            })
        var finalReport = report!
        finalReport.backup = Self.info(result.keybag, manifest: result.manifest, device: device)
        return VerifiedBackup(
            source: source, info: finalReport.backup, plan: finalReport, unlocked: unlocked!,
            entries: result.entries, device: device, target: target, policy: policy)
    }

    // MARK: Restoring

    /// Restores into the existing keychain given as the target (`--merge`), in one streaming
    /// transaction: for the same UUID or unique key, the newer modification date wins (a date
    /// later than the archive's creation is taken as that), and a ThisDeviceOnly item of the
    /// keychain is never replaced from a backup made on another device.
    /// Either every restorable item lands or none does.
    /// - Throws: as `verify` when the archive changed since; errSecInteractionNotAllowed when a
    ///   class the backup needs is locked; errSecIO. The keychain is unchanged on any error.
    public func restore(progress: ((_ done: Int64, _ total: Int64) -> Void)? = nil) throws -> RestoreReport {
        guard case .existing(let kc) = target else {
            preconditionFailure("restore() is for an existing keychain; use restoreNewKeychain")
        }
        let store = try kc.requireLocalStore()
        try requireWritable(store)
        return try write(into: store, created: false, progress: progress)
    }

    /// Creates a keychain at `path` (and the device secret at `devicePath` when there is none)
    /// and restores into it. The keychain is written under a temporary name beside `path` and
    /// linked into place only when every item has landed; on any error, nothing is left
    /// behind (not even a device secret this call created).
    /// - Parameters:
    ///   - passcode: the new keychain's passcode; nil for none.
    /// - Throws: errSecDuplicateKeychain when a keychain appears at `path`; as `restore`.
    public func restoreNewKeychain(
        path: String, devicePath: String, passcode: [UInt8]?,
        kdfLogN: UInt8 = KDFParameters.defaultLogN,
        progress: ((_ done: Int64, _ total: Int64) -> Void)? = nil
    ) throws -> RestoreReport {
        try restoreNewKeychain(
            path: path, devicePath: devicePath, passcode: passcode, kdfLogN: kdfLogN, progress: progress,
            fs: PosixFileSystem.shared)
    }

    /// `restoreNewKeychain`, on `fs` (tests inject failures). The temporary keychain is moved
    /// into place with a rename that refuses to replace (never a second name left behind); a
    /// signal (Ctrl-C) before that removes everything this call made (`InterruptCleanup`).
    package func restoreNewKeychain(
        path: String, devicePath: String, passcode: [UInt8]?, kdfLogN: UInt8,
        progress: ((_ done: Int64, _ total: Int64) -> Void)?, fs: FileSystem
    ) throws -> RestoreReport {
        if try Self.fsCall({ try fs.ownership(path: path) }, "check \(path)") != nil {
            throw KeychainError(
                .duplicateKeychain, "a keychain already exists at \(path)", remedy: .mergeOrChooseAnotherKeychain)
        }
        var createdDevice = false
        var cleanups: [InterruptCleanup.Token?] = []
        defer { cleanups.forEach(InterruptCleanup.unregister) }
        let device: Device
        if let d = self.device {
            device = d
        } else {
            // Registered before they exist, so that no moment is left in which a signal finds
            // them made but not yet registered.
            let secretExisted = try Self.fsCall({ try fs.ownership(path: devicePath) }, "check \(devicePath)") != nil
            let stateExisted =
                try Self.fsCall({ try fs.ownership(path: devicePath + ".state") }, "check \(devicePath).state") != nil
            if !secretExisted {
                cleanups.append(InterruptCleanup.register(devicePath, on: fs))
                if !stateExisted {
                    cleanups.append(InterruptCleanup.register(devicePath + ".state", directory: true, on: fs))
                }
            }
            let made = try Device.loadOrCreate(path: devicePath, fs: fs)
            device = made.device
            createdDevice = made.created
            if !createdDevice {
                cleanups.forEach(InterruptCleanup.unregister)
                cleanups = []
            }
        }
        let temp = try temporaryName(path + ".restore-")
        // The transaction's writer may leave an index beside the temporary keychain (spec
        // §17); it moves with the keychain, and goes with it on failure.
        let tempIndex = KeychainStore.indexPath(of: temp)
        let tempToken = InterruptCleanup.register(temp, on: fs)
        let tempIndexToken = InterruptCleanup.register(tempIndex, on: fs)
        defer {
            InterruptCleanup.unregister(tempToken)
            InterruptCleanup.unregister(tempIndexToken)
        }
        var store: KeychainStore?
        var report: RestoreReport
        /// Set when the keychain reached `path` although the move reported a failure.
        var inPlace = false
        // The temporary keychain's state file goes too if a signal ends the restore.
        device.removeNewStateFilesOnInterrupt()
        defer { device.keepNewStateFiles() }
        do {
            store = try KeychainStore.create(path: temp, device: device, passcode: passcode, logN: kdfLogN)
            report = try write(into: store!, created: true, progress: progress)
            report.keychain = path
            // From here on the device secret and state belong to a keychain that is about to
            // exist: a signal must no longer remove them.
            cleanups.forEach(InterruptCleanup.unregister)
            cleanups = []
            device.keepNewStateFiles()
            do {
                try fs.renameNoReplace(temp, path)
                moveIndex(from: tempIndex, to: KeychainStore.indexPath(of: path), fs: fs)
                // What earlier restores or inits to this path left when they were killed.
                KeychainStore.removeAbandonedCreations(besides: path, fs: fs)
            } catch let f as IOFailure
                where f.errno == EEXIST || (f.errno == ENOENT && (try? fs.identity(path: path)) != nil)
            {
                // ENOENT: the keychain that appeared at `path` was made by a process that
                // removed this temporary name as a leftover.
                throw KeychainError(
                    .duplicateKeychain, "a keychain appeared at \(path) during the restore; nothing was restored")
            } catch let f as IOFailure {
                if let there = try? fs.identity(path: path), let ours = try? fs.identity(path: temp), there == ours {
                    // Linked, and neither name could be removed again: the keychain is in place.
                    inPlace = true
                    throw KeychainError(
                        .io,
                        "the restore is complete at \(path), but its temporary name \(temp) could not be removed (\(Self.errnoDescription(f.errno))) and is a second name of the same file: remove \(temp) by hand, and never use it as a keychain",
                        underlying: f.description)
                }
                throw KeychainError(
                    .io,
                    "could not put the restored keychain at \(path): \(Self.errnoDescription(f.errno)); nothing was restored",
                    underlying: f.description)
            }
        } catch {
            if inPlace { throw error }
            try? fs.remove(temp)
            try? fs.remove(tempIndex)
            if let s = store { try? fs.remove(device.stateFilePath(fileUUID: s.fileUUID)) }
            if createdDevice {
                try? fs.remove(devicePath)
                try? fs.removeDirectory(devicePath + ".state")
            }
            throw error
        }
        // The keychain is in place; its bytes were fsynced before the rename.
        try BackupArchive.syncDirectory(of: path, fs: fs) { reason in
            "the restore is complete: \(path) holds every restored item and its bytes are on disk, but syncing its directory failed (\(reason)), so after a power cut the file may be missing. Run 'sync' and check that \(path) is there; keep the backup until then"
        }
        return report
    }

    /// Puts the index written beside the temporary keychain beside the restored one. The
    /// index names the keychain by its file UUID and header, not its path, so it stays valid;
    /// when it cannot be moved it is removed (the keychain then has none until its next
    /// write, and an open scans the log). Nothing to do when no index was written.
    private func moveIndex(from tempIndex: String, to index: String, fs: FileSystem) {
        guard (try? fs.ownership(path: tempIndex)) != nil else { return }
        do {
            try fs.rename(tempIndex, index)
        } catch {
            try? fs.remove(tempIndex)
        }
    }

    /// The second pass: the same checks again, and every decision applied in one streaming
    /// transaction that closes only after the manifest has been checked again and every
    /// entry found identical to the first pass.
    private func write(into store: KeychainStore, created: Bool, progress: ((_ done: Int64, _ total: Int64) -> Void)?)
        throws -> RestoreReport
    {
        var report = plan
        report.dryRun = false
        report.createdKeychain = created
        report.keychain = store.path
        report.clearCounts()
        let hasPasscode = store.hasPasscode
        try store.withStreamingTransaction { tx in
            try reread(
                progress: progress, changed: "\(source.name) changed while it was being restored; nothing was restored",
                item: { item in
                    // A new keychain holds nothing to conflict with (and `put` still refuses a
                    // duplicate), so only a merge looks items up.
                    let provenance = unlocked.provenance
                    let decision = try Self.decide(
                        item, hasPasscode: hasPasscode, provenance: provenance, policy: policy,
                        conflicts: created ? { _, _ in [] } : tx.conflicts(uuid:uniqueKey:),
                        read: { try store.read($0) })
                    switch decision {
                    case .add:
                        // `decide` found no live item with this UUID (or the keychain is new).
                        try tx.put(
                            uuid: item.record.uuid, plaintext: provenance.trusted(item.plaintext!),
                            protection: item.record.protectionClass, flags: item.record.flags, isNew: true)
                    case .replace(let old):
                        for o in old where o.uuid != item.record.uuid { try tx.delete(uuid: o.uuid) }
                        try tx.put(
                            uuid: item.record.uuid, plaintext: provenance.trusted(item.plaintext!),
                            protection: item.record.protectionClass, flags: item.record.flags)
                    case .skip:
                        break
                    }
                    Self.count(decision, item, into: &report)
                })
        }
        return report
    }

    /// Reads the archive a second time under the keys the first pass unlocked and calls `item`
    /// for each item, with the same checks as `verify`.
    /// - Throws: errSecDecode with the message `changed` when the archive is no longer the one
    ///   verified (another keybag, or an entry that differs from the first pass: then `item`
    ///   may have seen some items, each authenticated under this backup's keys); what `item`
    ///   throws.
    func reread(
        progress: ((_ done: Int64, _ total: Int64) -> Void)?, changed: String, item: (PassItem) throws -> Void
    ) throws {
        let pass = ArchivePass(source: source, progress: progress)
        let result = try pass.run(
            unlock: { _, digest in
                guard digest == unlocked.keybagDigest else { throw KeychainError(.decode, changed) }
                return unlocked
            },
            item: item)
        guard result.entries == entries else { throw KeychainError(.decode, changed) }
    }

    /// Every class that an item to restore needs must be unlocked before anything is written.
    private func requireWritable(_ store: KeychainStore) throws {
        for (code, n) in plan.restoredByProtection where n > 0 {
            guard let pc = ProtectionClass(code: code), store.canWrite(pc) else {
                throw KeychainError(
                    .interactionNotAllowed,
                    "the keychain \(store.path) is locked: restoring \(code) items needs its passcode; nothing was restored",
                    remedy: .unlock)
            }
        }
    }

    // MARK: Decisions

    enum Decision {
        case add
        /// Replace these items of the keychain (same UUID or unique key, older).
        case replace([StoredItem])
        case skip(RestoreSkipReason)
    }

    /// spec/BACKUP.md §9.2, in its order. Only a record this device made may replace a
    /// ThisDeviceOnly item of the keychain, under either policy: one whose class key needed
    /// this device's secret (`Provenance.deviceBound`). Any other record, a migratory one of
    /// this device's own password backup included, could be the work of whoever knows the
    /// password, and would put their secret in its place, in a migratory class. An item's
    /// dates count only up to the archive's creation (`Provenance`).
    static func decide(
        _ item: PassItem, hasPasscode: Bool, provenance: Provenance, policy: RestoreConflictPolicy,
        conflicts: ([UInt8], UniqueKey) throws -> [StoredItem],
        read: (StoredItem) throws -> ItemPlaintext
    ) throws -> Decision {
        guard let p = item.plaintext else { return .skip(.thisDeviceOnlyFromAnotherDevice) }
        if item.record.flags & ItemPutPayload.userPresenceFlag != 0, !hasPasscode {
            return .skip(.userPresenceNeedsPasscode)
        }
        let found = try conflicts(item.record.uuid, UniqueKey(itemClass: p.itemClass, attributes: p.attributes))
        if found.isEmpty { return .add }
        if !provenance.madeHere(item.record.protectionClass), found.contains(where: { $0.protection.isThisDeviceOnly })
        {
            return .skip(.destinationThisDeviceOnly)
        }
        if policy == .backupWins { return .replace(found) }
        let mine = modificationDate(provenance.trusted(p))
        for existing in found where modificationDate(try read(existing)) >= mine {
            return .skip(.destinationNewer)
        }
        return .replace(found)
    }

    static func modificationDate(_ p: ItemPlaintext) -> Double {
        if case .date(let d)? = p.attributes["mdat"] { return d }
        return -.infinity
    }

    static func count(_ d: Decision, _ item: PassItem, into report: inout RestoreReport) {
        let outcome: RestoreOutcome
        var why: RestoreSkipReason?
        switch d {
        case .add:
            report.restored += 1
            report.countWritten(item.plaintext!, item.record.protectionClass)
            outcome = .restored
        case .replace(let old):
            report.replaced += 1
            report.replacedKeychainItems += old.count
            report.countWritten(item.plaintext!, item.record.protectionClass)
            outcome = .replaced
        case .skip(let reason):
            report.countSkipped(reason, item.record.protectionClass)
            outcome = reason == .destinationNewer || reason == .destinationThisDeviceOnly ? .kept : .skipped
            why = reason
        }
        if report.items != nil {
            report.items!.append(
                RestoreItemOutcome(
                    uuid: hexString(item.record.uuid), class: item.plaintext?.itemClass.rawValue,
                    protection: item.record.protectionClass.code, outcome: outcome,
                    reason: why?.rawValue))
        }
    }

    // MARK: Keys

    /// Unwraps the backup class keys that can be unwrapped here (§4.3): a wrong password is
    /// an authentication error; ThisDeviceOnly classes of another device's backup stay
    /// wrapped (their items are skipped).
    static func unlock(
        _ bag: BackupKeybag, digest: [UInt8], device: Device?, password: () throws -> [UInt8]?,
        source: BackupSource
    ) throws -> UnlockedKeybag {
        let c = bag.common
        let sameDevice = device.map { $0.deviceSecret.uuid == c.sourceDeviceUUID } ?? false
        let deviceKey =
            sameDevice ? try BackupKeys.deviceKey(device: device!.deviceSecret, backupUUID: c.backupUUID) : nil
        var passwordKey: SecretKey?
        switch c.mode {
        case .deviceOnly:
            guard sameDevice else {
                let here = device.map { "this device is \($0.uuidHex)" } ?? "this machine has no device secret yet"
                throw KeychainError(
                    .authFailed,
                    "\(source.name) was made without a password on device \(hexString(c.sourceDeviceUUID)); it can be restored only there (\(here)); nothing was restored"
                )
            }
        case .password:
            guard var pw = try password() else {
                throw KeychainError(
                    .authFailed, "\(source.name) is protected by a backup password", remedy: .giveBackupPassword)
            }
            defer { Crypto.cleanse(&pw) }
            passwordKey = try BackupKeys.passwordKey(password: pw, kdf: c.kdf, backupUUID: c.backupUUID)
        }
        let keys = BackupKeys(passwordKey: passwordKey, deviceKey: deviceKey)
        var classKeys: [ProtectionClass: SecretKey] = [:]
        var deviceBound = Set<ProtectionClass>()
        for e in bag.entries {
            guard let kek = try keys.kek(e.wrap) else { continue }  // ThisDeviceOnly, another device
            do {
                classKeys[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: kek)
                // Kinds 1 and 3 need DBK, which only this device's secret gives (§4.3).
                if e.wrap != .password { deviceBound.insert(e.protectionClass) }
            } catch {
                if e.wrap == .password {
                    throw KeychainError(.authFailed, "wrong backup password for \(source.name); nothing was restored")
                }
                throw KeychainError(
                    .authFailed,
                    "\(source.name) was made on a device with the UUID of this one (\(hexString(c.sourceDeviceUUID))) but another device secret; its \(e.protectionClass.code) class does not unwrap here; nothing was restored"
                )
            }
        }
        return UnlockedKeybag(
            classKeys: classKeys, macKey: try keys.manifestMACKey(mode: c.mode)!, keybagDigest: digest,
            provenance: Provenance(deviceBound: deviceBound, createdAt: c.createdAt))
    }

    static func info(_ bag: BackupKeybag, manifest: Manifest?, device: Device?) -> BackupInfo {
        let c = bag.common
        return BackupInfo(
            formatVersion: "\(c.major).\(c.minor)", backupUUID: hexString(c.backupUUID),
            sourceDeviceUUID: hexString(c.sourceDeviceUUID), keychainUUID: hexString(c.keychainUUID),
            createdAt: c.createdAt, passwordProtected: c.mode == .password,
            sameDevice: device.map { $0.deviceSecret.uuid == c.sourceDeviceUUID } ?? false,
            items: Int(manifest?.itemCount ?? 0), notExported: Int(manifest?.notExported ?? 0))
    }

    static func fsCall<T>(_ body: () throws -> T, _ what: String) throws -> T {
        try BackupArchive.fsCall(body, what)
    }

    static func errnoDescription(_ e: Int32) -> String { BackupArchive.errnoDescription(e) }
}

/// The backup invariants that span entries (§5.4): no two items share a UUID, and no two
/// decryptable items share a unique key.
struct DuplicateCheck {
    private var uuids = Set<Key16>()
    private var uniqueKeys = Set<Key16>()

    mutating func check(_ item: PassItem, source: BackupSource) throws {
        guard uuids.insert(Key16(item.record.uuid)).inserted else {
            throw KeychainError(
                .decode,
                "\(source.name) holds two items with the UUID \(hexString(item.record.uuid)): it was tampered with; nothing was restored"
            )
        }
        if let p = item.plaintext {
            let key = UniqueKey(itemClass: p.itemClass, attributes: p.attributes)
            guard uniqueKeys.insert(Key16(Crypto.sha256(key.encoded).prefix(16))).inserted else {
                throw KeychainError(
                    .decode,
                    "\(source.name) holds two items with the same unique key: it was tampered with; nothing was restored"
                )
            }
        }
    }
}

/// 16 bytes as a cheap set element.
struct Key16: Hashable {
    var high: UInt64
    var low: UInt64
    init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        var h: UInt64 = 0, l: UInt64 = 0
        for (i, b) in bytes.enumerated() where i < 16 {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        high = h
        low = l
    }
}
