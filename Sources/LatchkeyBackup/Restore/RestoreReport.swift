import Latchkey
import LatchkeyFormat

/// Facts about a verified backup, from its keybag entry and manifest.
public struct BackupInfo: Sendable, Codable, Equatable {
    /// `1.0`.
    public var formatVersion: String
    /// 32 lower-case hex digits.
    public var backupUUID: String
    public var sourceDeviceUUID: String
    public var keychainUUID: String
    /// Seconds since 1970-01-01T00:00:00Z.
    public var createdAt: UInt64
    public var passwordProtected: Bool
    /// The device restoring it made the backup's keybag: its device-bound classes unwrapped
    /// with this device's secret (spec/BACKUP.md §9.2). For a device-only backup that covers
    /// every item and the manifest; for a password backup only its ThisDeviceOnly items, since
    /// the password alone opens, and reseals, everything else.
    public var sameDevice: Bool
    public var items: Int
    /// akpu items of the source keychain, which no backup carries.
    public var notExported: Int

    /// Where the backup was made, claiming no more than the keys prove: "made on this device"
    /// only for a device-only backup of this device.
    public var origin: String {
        guard sameDevice else { return "made on device \(sourceDeviceUUID)" }
        return passwordProtected
            ? "its ThisDeviceOnly items made on this device (the password alone vouches for its other items)"
            : "made on this device"
    }
}

/// Why a restore left an item of the backup out.
public enum RestoreSkipReason: String, Sendable, Codable, CaseIterable {
    /// A ThisDeviceOnly item (aku, cku, dku) of a backup made on another device: its class key
    /// is wrapped by that device's secret too.
    case thisDeviceOnlyFromAnotherDevice
    /// `--merge`: the keychain holds the same item (same UUID or unique key) with the same or
    /// a newer modification date.
    case destinationNewer
    /// The item needs user presence (the passcode), and the keychain restored into has none.
    case userPresenceNeedsPasscode
    /// `--merge` or `--replace`: the keychain's item with the same UUID or unique key is
    /// ThisDeviceOnly (aku, cku, dku, akpu), and the backup's item does not prove it was made on
    /// this device (its class key needed no secret of this device: another device's backup, or
    /// a migratory item of a password backup), so it never replaces it, whatever the dates say.
    case destinationThisDeviceOnly
}

/// How a restore settles an item of the backup that the keychain already holds (the same
/// item UUID or unique key, spec/BACKUP.md §9.2 steps 4–5).
public enum RestoreConflictPolicy: String, Sendable, Codable {
    /// `--merge`: the newer modification date wins; a tie keeps the keychain's item.
    case newerWins
    /// `--replace`: the backup's item replaces the keychain's, whatever the dates say.
    case backupWins
}

/// What became of one item of the backup (`restore --json`'s `items`): exactly one outcome
/// per item, so the four counts of `RestoreReport` add up to the backup's item count.
public enum RestoreOutcome: String, Sendable, Codable, CaseIterable {
    /// Written; the keychain had no such item.
    case restored
    /// Written in place of the keychain's item(s) with its UUID or unique key.
    case replaced
    /// Not written: the keychain keeps its own item (reason `destinationNewer` or
    /// `destinationThisDeviceOnly`).
    case kept
    /// Not written for another reason (`thisDeviceOnlyFromAnotherDevice`,
    /// `userPresenceNeedsPasscode`).
    case skipped
}

/// One item of the backup and what the restore did with it; never a secret.
public struct RestoreItemOutcome: Sendable, Codable, Equatable {
    /// The item UUID (32 lower-case hex digits), kept by the restore.
    public var uuid: String
    /// The item class code (genp, inet, cert, keys); nil when the item could not be decrypted
    /// here (a ThisDeviceOnly item of another device's backup).
    public var `class`: String?
    /// The protection class code (ak … dku).
    public var protection: String
    public var outcome: RestoreOutcome
    /// Why it was kept or skipped (a `RestoreSkipReason` raw value).
    public var reason: String?
}

/// What a restore did (or, with `dryRun`, would do). Every item of the backup is counted
/// exactly once, under `restored`, `replaced`, `kept` or `skipped`: the four add up to
/// `backup.items`.
public struct RestoreReport: Sendable, Codable, Equatable {
    public var backup: BackupInfo
    /// The keychain restored into.
    public var keychain: String
    /// A new keychain was (or would be) created.
    public var createdKeychain: Bool
    /// Restored into an existing keychain (`--merge` or `--replace`).
    public var merge: Bool
    /// How an item the keychain already holds was settled (nil for a new keychain).
    public var conflicts: RestoreConflictPolicy?
    public var dryRun: Bool
    /// Items of the backup written where the keychain had no such item.
    public var restored = 0
    /// Every item written (restored or replaced), by item class code (genp, inet, cert, keys).
    public var restoredByClass: [String: Int] = [:]
    /// Every item written (restored or replaced), by protection class code (ak … dku).
    public var restoredByProtection: [String: Int] = [:]
    /// Items of the backup written in place of the keychain's item(s) with the same UUID or
    /// unique key.
    public var replaced = 0
    /// Items of the keychain removed by those replacements: one backup item can replace two
    /// (one with its UUID, another with its unique key).
    public var replacedKeychainItems = 0
    /// Items of the backup not written because the keychain keeps its own: a newer one
    /// (`--merge`), or a ThisDeviceOnly one that another device's backup may not replace.
    public var kept = 0
    /// By `RestoreSkipReason` raw value (`destinationNewer`, `destinationThisDeviceOnly`).
    public var keptByReason: [String: Int] = [:]
    /// Items of the backup not written for another reason.
    public var skipped = 0
    /// By `RestoreSkipReason` raw value (`thisDeviceOnlyFromAnotherDevice`,
    /// `userPresenceNeedsPasscode`).
    public var skippedByReason: [String: Int] = [:]
    public var skippedByProtection: [String: Int] = [:]
    /// Each item's outcome, in archive order, when the restore was asked to list them
    /// (`latchkey restore --json`); nil otherwise.
    public var items: [RestoreItemOutcome]?

    init(backup: BackupInfo, keychain: String, createdKeychain: Bool, merge: Bool, dryRun: Bool) {
        self.backup = backup
        self.keychain = keychain
        self.createdKeychain = createdKeychain
        self.merge = merge
        self.dryRun = dryRun
    }

    mutating func countWritten(_ p: ItemPlaintext, _ pc: ProtectionClass) {
        restoredByClass[p.itemClass.rawValue, default: 0] += 1
        restoredByProtection[pc.code, default: 0] += 1
    }

    mutating func countSkipped(_ reason: RestoreSkipReason, _ pc: ProtectionClass) {
        if reason == .destinationNewer || reason == .destinationThisDeviceOnly {
            kept += 1
            keptByReason[reason.rawValue, default: 0] += 1
        } else {
            skipped += 1
            skippedByReason[reason.rawValue, default: 0] += 1
            skippedByProtection[pc.code, default: 0] += 1
        }
    }

    /// The counts and lists of a pass, cleared for the next one.
    mutating func clearCounts() {
        restored = 0
        restoredByClass = [:]
        restoredByProtection = [:]
        replaced = 0
        replacedKeychainItems = 0
        kept = 0
        keptByReason = [:]
        skipped = 0
        skippedByReason = [:]
        skippedByProtection = [:]
        if items != nil { items = [] }
    }
}
