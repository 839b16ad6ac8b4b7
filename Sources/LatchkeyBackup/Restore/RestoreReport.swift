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
    /// The device restoring it made the backup.
    public var sameDevice: Bool
    public var items: Int
    /// akpu items of the source keychain, which no backup carries.
    public var notExported: Int
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
    /// `--merge` of a backup made on another device: the keychain's item with the same UUID or
    /// unique key is ThisDeviceOnly (aku, cku, dku, akpu), and such an item is never replaced
    /// from another device, whatever the dates say.
    case destinationThisDeviceOnly
}

/// What a restore did (or, with `dryRun`, would do).
public struct RestoreReport: Sendable, Codable, Equatable {
    public var backup: BackupInfo
    /// The keychain restored into.
    public var keychain: String
    /// A new keychain was (or would be) created.
    public var createdKeychain: Bool
    public var merge: Bool
    public var dryRun: Bool
    public var restored = 0
    /// By item class code (genp, inet, cert, keys).
    public var restoredByClass: [String: Int] = [:]
    /// By protection class code (ak, ck, dk, aku, cku, dku).
    public var restoredByProtection: [String: Int] = [:]
    /// Items of the keychain that a newer item of the backup replaced (`--merge`).
    public var replaced = 0
    /// Items of the backup that the keychain kept its own version of (`--merge`): a newer one,
    /// or a ThisDeviceOnly one that another device's backup may not replace.
    public var kept = 0
    public var skipped = 0
    /// By `RestoreSkipReason` raw value.
    public var skippedByReason: [String: Int] = [:]
    public var skippedByProtection: [String: Int] = [:]

    init(backup: BackupInfo, keychain: String, createdKeychain: Bool, merge: Bool, dryRun: Bool) {
        self.backup = backup
        self.keychain = keychain
        self.createdKeychain = createdKeychain
        self.merge = merge
        self.dryRun = dryRun
    }

    mutating func countRestored(_ p: ItemPlaintext, _ pc: ProtectionClass) {
        restored += 1
        restoredByClass[p.itemClass.rawValue, default: 0] += 1
        restoredByProtection[pc.code, default: 0] += 1
    }

    mutating func countSkipped(_ reason: RestoreSkipReason, _ pc: ProtectionClass) {
        skipped += 1
        if reason == .destinationNewer || reason == .destinationThisDeviceOnly { kept += 1 }
        skippedByReason[reason.rawValue, default: 0] += 1
        skippedByProtection[pc.code, default: 0] += 1
    }
}
