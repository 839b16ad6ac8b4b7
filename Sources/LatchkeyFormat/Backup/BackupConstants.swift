/// Every constant of the backup format, in one place.
/// Specification: spec/BACKUP.md (section numbers in the comments refer to it).
package enum BackupConstants {
    // §2 Archive layout
    /// Directory of every entry name.
    package static let directory = "latchkey-backup/"
    package static let keybagName = "latchkey-backup/keybag"
    package static let manifestName = "latchkey-backup/manifest"
    /// Items entries are `latchkey-backup/items-000001`, `…-000002`, … (six digits).
    package static let itemsPrefix = "latchkey-backup/items-"
    /// Ancillary entries a newer minor version may add (§10).
    package static let ancillaryPrefix = "latchkey-backup/x-"
    /// An ancillary entry's name: the prefix, then 1 to 82 of `a`–`z`, `0`–`9` and `-`, so the
    /// whole name fits the 100 bytes of a ustar name field (§10).
    package static func isAncillaryName(_ name: String) -> Bool {
        guard name.hasPrefix(ancillaryPrefix) else { return false }
        let suffix = name.utf8.dropFirst(ancillaryPrefix.utf8.count)
        return (1...(100 - ancillaryPrefix.utf8.count)).contains(suffix.count)
            && suffix.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2d }
    }
    package static let maxItemsEntries = 999_999

    /// The name of items entry `n` (1-based).
    package static func itemsName(_ n: Int) -> String {
        let digits = String(n)
        return itemsPrefix + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    // §3 Keybag entry, §5 Items entries, §6 Manifest
    package static let keybagMagic: [UInt8] = Array("LKBACKUP".utf8)
    package static let itemsMagic: [UInt8] = Array("LKBITEMS".utf8)
    package static let manifestMagic: [UInt8] = Array("LKBMANIF".utf8)
    package static let major: UInt16 = 1
    package static let minor: UInt16 = 0

    /// Bytes 0..<104 of the keybag entry and of the manifest: the common part (§3.1), which
    /// ends with the KDF parameters as a keychain's keybag holds them.
    package static let commonSize = 72 + FormatConstants.kdfParametersSize
    /// The common part, a u8 entry count and 3 reserved bytes; the entries that follow are
    /// wrapped class keys of `FormatConstants.keybagEntrySize` bytes, as in a keychain.
    package static let keybagFixedSize = commonSize + 4
    /// The SHA-256 that ends the keybag entry, the HMAC-SHA256 that ends the manifest.
    package static let checksumSize = 32
    package static let macSize = 32
    /// The common part, eight u64 counts (items, items of each of the six classes, items not
    /// exported), a u32 entry count and 4 reserved bytes (§6.1).
    package static let manifestFixedSize = commonSize + 8 * 8 + 8
    package static let itemsFixedSize = 16
    package static let itemClearSize = 24
    /// An item record without its ciphertext: the clear part, the wrapped item key and the
    /// GCM tag (§5.2).
    package static let itemRecordFixedSize = itemClearSize + FormatConstants.wrappedKeySize + FormatConstants.gcmTagSize

    // §7 Limits
    /// Largest keybag entry a reader accepts.
    package static let maxKeybagEntrySize = 64 << 10
    /// Largest items entry a reader accepts: exactly one item of the largest size a keychain
    /// holds (spec/FORMAT.md §6.4) fits.
    package static let maxItemsEntrySize = 16 << 20
    /// Largest manifest a reader accepts.
    package static let maxManifestSize = 64 << 20
    /// Largest ancillary entry a reader of an older minor version accepts (and skips).
    package static let maxAncillaryEntrySize = 16 << 20
    /// Largest item plaintext (spec/FORMAT.md §6.4).
    package static let maxPlaintextSize = FormatConstants.maxItemPlaintextSize
    /// A writer closes an items entry at this many records or this many bytes.
    package static let writerItemsPerEntry = 1024
    package static let writerEntryBytes = 4 << 20

    // §4 Key schedule: HKDF info strings (ASCII, no terminator)
    package static let infoPassword = Array("latchkey backup v1 password key".utf8)
    package static let infoDevice = Array("latchkey backup v1 device key".utf8)
    package static let infoPasswordWrap = Array("latchkey backup v1 password wrap".utf8)
    package static let infoDeviceWrap = Array("latchkey backup v1 device wrap".utf8)
    package static let infoBothWrap = Array("latchkey backup v1 password device wrap".utf8)
    package static let infoManifestMAC = Array("latchkey backup v1 manifest mac".utf8)
    /// Prefix of the AAD of every item encryption (§5.3).
    package static let itemAADPrefix = Array("LKBKitem".utf8)

    /// Default scrypt cost of a backup password: N = 2^17, r = 8, p = 1 (128 MiB). A backup
    /// leaves the device, so its migratory classes can be attacked offline with the password
    /// alone; it is made once and opened rarely, so it can afford four times a keychain's cost.
    package static let defaultLogN: UInt8 = 17

    /// The classes a backup carries: every class but akpu (§4.2).
    package static let exportedClasses: [ProtectionClass] = [
        .whenUnlocked, .afterFirstUnlock, .always,
        .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
    ]
}

/// Who can open a backup (keybag entry offset 12).
package enum BackupMode: UInt8, Sendable {
    /// A backup password: migratory classes open anywhere with it, ThisDeviceOnly classes only
    /// on the source device.
    case password = 1
    /// No password: every class is wrapped by the source device; restorable only there.
    case deviceOnly = 2
}

/// How a backup class key is wrapped (§4.2).
package enum BackupWrapKind: UInt8, Sendable {
    case device = 1
    case password = 2
    case passwordAndDevice = 3
}
