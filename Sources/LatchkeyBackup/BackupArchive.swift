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

    public init(password: [UInt8]?, compression: BackupCompression = .none, kdfLogN: UInt8 = BackupOptions.defaultLogN,
                progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil) {
        self.password = password
        self.compression = compression
        self.kdfLogN = kdfLogN
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
    /// - Throws: errSecInteractionNotAllowed when an item's class is locked (nothing has been
    ///   written then); errSecParam for an empty password; errSecDecode for a damaged item;
    ///   errSecIO when writing fails.
    @discardableResult
    public static func write(_ keychain: Keychain, to fd: Int32, options: BackupOptions) throws -> BackupSummary {
        try write(keychain, to: fd, options: options, createdAt: UInt64(time(nil)), random: SystemRandomSource())
    }

    /// Writes a backup to a file, mode 0600: to a temporary name beside it first, renamed
    /// into place once complete and synced, so a failed backup never leaves a partial file
    /// under the name.
    @discardableResult
    public static func write(_ keychain: Keychain, toFile path: String, options: BackupOptions) throws -> BackupSummary {
        var st = stat()
        if stat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG {
            // A device or a FIFO (/dev/stdout, a named pipe): write to it directly.
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw ioError("open \(path)", errno) }
            defer { close(fd) }
            return try write(keychain, to: fd, options: options)
        }
        let temp = path + ".tmp-" + hexString(try Crypto.randomBytes(4))
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("create \(temp)", errno) }
        do {
            let summary = try write(keychain, to: fd, options: options)
            guard fsync(fd) == 0 else { throw ioError("write \(temp)", errno) }
            close(fd)
            guard rename(temp, path) == 0 else { throw ioError("rename \(temp) to \(path)", errno) }
            VerifiedBackup.syncDirectory(of: path)
            return summary
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
    }

    package static func write(_ keychain: Keychain, to fd: Int32, options: BackupOptions, createdAt: UInt64,
                              random: BackupRandomSource) throws -> BackupSummary {
        if let p = options.password, p.isEmpty {
            throw KeychainError(.param, "the backup password is empty; choose a non-empty password, or use --no-password")
        }
        guard (10...22).contains(options.kdfLogN) else {
            throw KeychainError(.param, "the backup KDF cost must be between 10 and 22")
        }
        let store = keychain.engine
        try store.refresh()
        let items = store.storedItems()
        for item in items where item.protection != .whenPasscodeSetThisDeviceOnly && !store.isAvailable(item.protection) {
            throw KeychainError(.interactionNotAllowed, "the keychain is locked: backing up its \(item.protection.code) items needs the passcode (LATCHKEY_PASSCODE, --passcode-file or a prompt); nothing was written")
        }
        let writer: ArchiveWriter
        do {
            writer = try ArchiveWriter(fd: fd, compression: options.compression, mtime: createdAt)
        } catch let e as ArchiveError {
            throw KeychainError(.io, e.description)
        }
        var byClass: [String: Int] = [:], byProtection: [String: Int] = [:]
        do {
            let encoder = try BackupEncoder(device: store.boundDevice.deviceSecret, keychainUUID: store.fileUUID, createdAt: createdAt,
                                            password: options.password, logN: options.kdfLogN, random: random, sink: writer)
            var last = 0
            for (i, item) in items.enumerated() {
                if item.protection == .whenPasscodeSetThisDeviceOnly {
                    encoder.noteNotExported()
                    continue
                }
                let plaintext = try store.read(item)
                try encoder.add(uuid: item.uuid, protection: item.protection, flags: item.flags, plaintext: plaintext)
                byClass[plaintext.itemClass.rawValue, default: 0] += 1
                byProtection[item.protection.code, default: 0] += 1
                if let progress = options.progress, (i + 1 - last) * 100 >= items.count {
                    progress(i + 1, items.count)
                    last = i + 1
                }
            }
            let manifest = try encoder.finish()
            try writer.finish()
            options.progress?(items.count, items.count)
            return BackupSummary(backupUUID: hexString(encoder.common.backupUUID), passwordProtected: options.password != nil,
                                 items: Int(manifest.itemCount), itemsByClass: byClass, itemsByProtection: byProtection,
                                 notExported: Int(manifest.notExported), entries: manifest.entries.count + 1)
        } catch let e as ArchiveError {
            throw KeychainError(.io, "could not write the backup: \(e.description)")
        } catch let e as FormatError {
            throw KeychainError(.param, "could not back up an item: \(e.description)")
        }
    }

    static func ioError(_ what: String, _ e: Int32) -> KeychainError {
        KeychainError(.io, "could not \(what): \(String(cString: strerror(e)))")
    }
}
