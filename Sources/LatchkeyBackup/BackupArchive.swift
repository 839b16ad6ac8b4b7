#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// How to write a backup.
public struct BackupOptions: Sendable {
    /// The backup password; nil makes a device-only backup (`--no-password`), which only this
    /// device can restore.
    public var password: [UInt8]?
    public var compression: BackupCompression
    /// scrypt cost of the password as log2(N), 10–22 (r = 8, p = 1).
    public var kdfLogN: UInt8
    /// Called now and then with the items written so far and the item count.
    public var progress: (@Sendable (_ done: Int, _ total: Int) -> Void)?
    /// This device, for a keychain served by `latchkey agent`: the device-bound keys of the
    /// backup (spec/BACKUP.md §4) are derived from its secret in this process, which must be
    /// the secret the keychain is bound to. A keychain opened in this process has its own.
    public var device: Device?

    public init(
        password: [UInt8]?, compression: BackupCompression = .none, kdfLogN: UInt8 = BackupOptions.defaultLogN,
        device: Device? = nil, progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
    ) {
        self.password = password
        self.compression = compression
        self.kdfLogN = kdfLogN
        self.device = device
        self.progress = progress
    }

    /// N = 2^17, r = 8, p = 1: 128 MiB per guess (spec/BACKUP.md §4.1).
    public static let defaultLogN: UInt8 = BackupConstants.defaultLogN
}

/// What a backup holds.
public struct BackupSummary: Sendable, Codable, Equatable {
    public var backupUUID: String
    public var passwordProtected: Bool
    public var items: Int
    public var itemsByClass: [String: Int]
    public var itemsByProtection: [String: Int]
    /// akpu items, which are never exported.
    public var notExported: Int
    /// Tar entries: keybag, items entries, manifest.
    public var entries: Int
}

/// Backup archives of a keychain (spec/BACKUP.md): a pax tar stream of a keybag entry, items
/// entries and a manifest, holding no plaintext secret or attribute.
///
/// ```swift
/// let kc = try Keychain.open(path: path, devicePath: devicePath)
/// try kc.unlock(passcode: passcode)
/// try BackupArchive.write(kc, toFile: "keychain.backup", options: BackupOptions(password: Array("pw".utf8)))
/// ```
public enum BackupArchive {
    /// Writes a backup of every item but akpu ones to `fd` (e.g. 1, standard output), as a
    /// stream: each items entry is written as soon as it is full, so memory does not grow
    /// with the number of items beyond the list of live items.
    ///
    /// A keychain served by `latchkey agent` is read through it, as the trusted caller (every
    /// access group), an item at a time after a listing per item class and protection class:
    /// its unlocked classes are what the backup needs, no passcode here. `options.device`
    /// must then be the device secret the keychain is bound to.
    /// - Throws: errSecInteractionNotAllowed when an item's class is locked, or (agent) an item
    ///   needs user presence and no authentication handler is set (nothing has been written
    ///   then); errSecParam for an empty password, or (agent) no `options.device`;
    ///   errSecAuthFailed (agent) when `options.device` is not the keychain's device;
    ///   errSecDecode for a damaged item; errSecIO when writing fails.
    @discardableResult
    public static func write(_ keychain: Keychain, to fd: Int32, options: BackupOptions) throws -> BackupSummary {
        try write(keychain, to: fd, options: options, createdAt: UInt64(time(nil)), random: SystemRandomSource())
    }

    /// Writes a backup to a file, mode 0600: to a temporary name beside it first (created
    /// exclusively, never through a symlink), renamed into place once complete and synced, so
    /// a failed backup never leaves a partial file under the name. Only regular files are
    /// written: a FIFO, device, directory or symlink at `path` (which another user may have
    /// planted) is refused, never written into; write to a pipe through `write(_:to:options:)`.
    /// - Throws: as `write(_:to:options:)`; errSecIO when `path` is not a regular file, and when
    ///   the directory cannot be synced after the rename (the message says that the backup is
    ///   complete at `path`, but may not survive a power cut).
    @discardableResult
    public static func write(_ keychain: Keychain, toFile path: String, options: BackupOptions) throws -> BackupSummary
    {
        try write(keychain, toFile: path, options: options, fs: PosixFileSystem.shared)
    }

    /// - Parameter replacing: false for a name that must be new (`BackupRotation`): anything
    ///   at `path`, before or when the file is renamed there, fails the backup (errSecIO) and
    ///   is left as it is.
    package static func write(
        _ keychain: Keychain, toFile path: String, options: BackupOptions, fs: FileSystem, replacing: Bool = true
    ) throws -> BackupSummary {
        let exists = { () -> KeychainError in
            KeychainError(
                .io, "\(path) already exists; a backup under a new name never replaces a file, so nothing was written",
                remedy: .chooseBackupOutput)
        }
        if !replacing, try fsCall({ try fs.ownership(path: path) }, "check \(path)") != nil { throw exists() }
        if let found = try fsCall({ try fs.ownership(path: path) }, "check \(path)"), found.kind != .regular {
            let kind =
                found.kind == .directory
                ? "a directory" : found.kind == .symlink ? "a symbolic link" : "a FIFO, socket or device"
            throw KeychainError(
                .io,
                "\(path) exists and is \(kind), not a regular file; backup writes only regular files (through a temporary file beside it and a rename), so nothing was written",
                remedy: .chooseBackupOutput)
        }
        // A backup to `path` that was killed left its temporary file (as large as the backup):
        // each one's lock tells a live writer's from an abandoned one (spec/BACKUP.md §8).
        fs.removeAbandonedTemporaryFiles(prefix: path + ".tmp-")
        let (temp, fd, registered) = try fsCall(
            { try fs.createLockedTemporaryFile(prefix: path + ".tmp-", mode: 0o600) },
            "create a temporary file beside \(path)")
        defer { InterruptCleanup.unregister(registered) }
        var open = true
        let summary: BackupSummary
        do {
            summary = try write(keychain, to: fd, options: options, destination: path)
            try fsCall({ try fs.sync(fd) }, "write \(temp)")
            fs.close(fd)
            open = false
            if replacing {
                try fsCall({ try fs.rename(temp, path) }, "rename \(temp) to \(path)")
            } else {
                try fsCall(
                    {
                        do {
                            try fs.renameNoReplace(temp, path)
                        } catch let f as IOFailure where f.errno == EEXIST {
                            throw exists()
                        }
                    }, "rename \(temp) to \(path)")
            }
        } catch {
            if open { fs.close(fd) }
            try? fs.remove(temp)
            throw error
        }
        try syncDirectory(of: path, fs: fs) { reason in
            "the backup is complete at \(path) and its bytes are on disk, but syncing its directory failed (\(reason)): after a power cut the file may be missing. Run 'sync', check that \(path) is there, or run the backup again"
        }
        return summary
    }

    /// `write(_:to:options:)`, with the name of the output for messages.
    @discardableResult
    package static func write(_ keychain: Keychain, to fd: Int32, options: BackupOptions, destination: String) throws
        -> BackupSummary
    {
        try write(
            keychain, to: fd, options: options, createdAt: UInt64(time(nil)), random: SystemRandomSource(),
            destination: destination)
    }

    package static func write(
        _ keychain: Keychain, to fd: Int32, options: BackupOptions, createdAt: UInt64,
        random: BackupRandomSource, destination: String = "the output"
    ) throws -> BackupSummary {
        if let p = options.password, p.isEmpty {
            throw KeychainError(.param, "the backup password is empty", remedy: .chooseBackupPassword)
        }
        guard (10...22).contains(options.kdfLogN) else {
            throw KeychainError(.param, "the backup KDF cost must be between 10 and 22")
        }
        let items: BackupItemSource =
            try keychain.localStore.map { try StoreItemSource($0) }
            ?? AgentItemSource(keychain, device: options.device)
        let writer: ArchiveWriter
        do {
            writer = try ArchiveWriter(fd: fd, compression: options.compression, mtime: createdAt)
        } catch let e as ArchiveError {
            throw KeychainError(
                .io,
                "could not write the backup to \(destination): \(e.description)\(nextStep(e.errno)); nothing was written"
            )
        }
        var byClass: [String: Int] = [:], byProtection: [String: Int] = [:]
        do {
            let encoder = try BackupEncoder(
                device: items.deviceSecret, keychainUUID: items.keychainUUID, createdAt: createdAt,
                password: options.password, logN: options.kdfLogN, random: random, sink: writer)
            let total = items.count
            var done = 0, last = 0
            try items.forEach(notExported: { encoder.noteNotExported() }) { uuid, protection, flags, plaintext in
                try encoder.add(uuid: uuid, protection: protection, flags: flags, plaintext: plaintext)
                byClass[plaintext.itemClass.rawValue, default: 0] += 1
                byProtection[protection.code, default: 0] += 1
                done += 1
                if let progress = options.progress, (done - last) * 100 >= total {
                    progress(done, total)
                    last = done
                }
            }
            let manifest = try encoder.finish()
            try writer.finish()
            options.progress?(total, total)
            return BackupSummary(
                backupUUID: hexString(encoder.common.backupUUID), passwordProtected: options.password != nil,
                items: Int(manifest.itemCount), itemsByClass: byClass, itemsByProtection: byProtection,
                notExported: Int(manifest.notExported), entries: manifest.entries.count + 1)
        } catch let e as ArchiveError {
            throw KeychainError(
                .io, "could not write the backup to \(destination): \(e.description)\(nextStep(e.errno))")
        } catch let e as FormatError {
            throw KeychainError(.param, "could not back up an item: \(e.description)")
        }
    }

    /// Runs a file-system call, turning its failure into errSecIO that says what failed and why.
    static func fsCall<T>(_ body: () throws -> T, _ what: String) throws -> T {
        do {
            return try body()
        } catch let f as IOFailure {
            throw KeychainError(
                .io, "could not \(what): \(errnoDescription(f.errno))\(nextStep(f.errno))", underlying: f.description)
        }
    }

    /// Syncs the directory of `path`, a complete file just renamed into place. A failure is
    /// errSecIO with the message `completeBut` makes from the errno's description: the file is
    /// there, but its name may not survive a power cut.
    static func syncDirectory(of path: String, fs: FileSystem, completeBut: (_ reason: String) -> String) throws {
        do {
            try fs.syncDirectory(directoryOf(path))
        } catch let f as IOFailure {
            throw KeychainError(.io, completeBut(errnoDescription(f.errno)), underlying: f.description)
        }
    }

    static func errnoDescription(_ e: Int32) -> String {
        strerror(e).map { String(cString: $0) } ?? "errno \(e)"
    }

    /// What to do about a failure with errno `e`, as the engine's messages say it ("" when
    /// the errno alone is the whole story).
    static func nextStep(_ e: Int32) -> String {
        e == ENOSPC ? "; the disk is full: free some space and try again" : ""
    }
}
