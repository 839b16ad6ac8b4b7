/// Every constant of the on-disk format, in one place.
/// Specification: spec/FORMAT.md (section numbers in the comments refer to it).
public enum FormatConstants {
    // §3 Keychain file header
    /// `89 4C 4B 43 0D 0A 1A 0A`: "\x89LKC\r\n\x1a\n", PNG-style (§3.1 rationale).
    public static let fileMagic: [UInt8] = [0x89, 0x4C, 0x4B, 0x43, 0x0D, 0x0A, 0x1A, 0x0A]
    public static let fileMajor: UInt16 = 1
    public static let fileMinor: UInt16 = 0
    /// Fixed part of the header before the keybag (§3.2).
    public static let headerFixedSize = 74
    public static let headerMACSize = 32
    /// Largest header a reader accepts (§3.4).
    public static let headerMaxSize = 65_536

    // §4 Keybag
    /// KDF id, logN, reserved, r, p, reserved, salt (§4.1); a backup's common part ends with
    /// the same bytes.
    public static let kdfParametersSize = 32
    /// The KDF parameters, a u8 entry count and a reserved byte.
    public static let keybagFixedSize = kdfParametersSize + 2
    public static let keybagEntrySize = 42
    public static let wrappedKeySize = 40
    public static let saltSize = 16

    // §6 Record frame
    public static let frameHeaderSize = 20
    public static let frameTagSize = 16
    /// Largest payload a reader accepts: 16 MiB (§6.4).
    public static let maxPayloadSize: UInt32 = 16 << 20
    /// Largest item plaintext a writer may seal: the payload limit less the put payload's
    /// fixed part and GCM tag, 16 777 120 bytes (§6.4).
    public static let maxItemPlaintextSize = Int(maxPayloadSize) - 96

    // §7 Item put payload
    public static let itemPutFixedSize = 80
    public static let gcmTagSize = 16
    /// The item key is used for exactly one encryption, so the nonce is fixed (§7.3 rationale).
    public static let itemNonce = [UInt8](repeating: 0, count: 12)
    public static let itemPlaintextVersion: UInt8 = 1

    // §17 Index file (sidecar)
    public static let indexMagic: [UInt8] = Array("LKINDEX\u{0}".utf8)
    public static let indexMajor: UInt16 = 1
    /// 1.1: attribute-hash and unhashed-item pages after the unique-key pages (§17.2).
    public static let indexMinor: UInt16 = 1
    /// Every part of an index file (header, item pages, unique-key pages) is one page.
    public static let indexPageSize = 4096
    /// The MAC that ends every page; the rest of the page is its body.
    public static let indexPageMACSize = 32
    public static let indexPageBodySize = indexPageSize - indexPageMACSize
    public static let indexItemEntrySize = 58
    public static let indexUniqueEntrySize = 32
    /// 70 item entries and 127 unique-key entries fill a page body.
    public static let indexItemsPerPage = indexPageBodySize / indexItemEntrySize
    public static let indexUniquesPerPage = indexPageBodySize / indexUniqueEntrySize
    /// An attribute entry: an 8-byte attribute hash and the item's UUID (§17.2); 169 a page.
    public static let indexAttributeEntrySize = 24
    public static let indexAttributesPerPage = indexPageBodySize / indexAttributeEntrySize
    /// An unhashed-item entry: a UUID; 254 a page.
    public static let indexUnhashedEntrySize = 16
    public static let indexUnhashedPerPage = indexPageBodySize / indexUnhashedEntrySize
    /// Bytes of the index header that carry fields; the rest of its body is zero.
    public static let indexHeaderFieldsSize = 176

    // §2 Device secret file
    public static let deviceMagic: [UInt8] = Array("LKDEVICE".utf8)
    public static let deviceFileSize = 96
    public static let deviceSecretSize = 32

    // §9 Device state file
    public static let stateMagic: [UInt8] = Array("LKSTATE\u{0}".utf8)
    public static let stateFileSize = 88

    // §5 Key schedule: HKDF info strings (ASCII, no terminator)
    public static let infoDeviceKey = Array("latchkey v1 device key".utf8)
    public static let infoHeaderMAC = Array("latchkey v1 header mac".utf8)
    public static let infoRecordMAC = Array("latchkey v1 record mac".utf8)
    public static let infoIndex = Array("latchkey v1 index".utf8)
    public static let infoDeviceWrap = Array("latchkey v1 device wrap".utf8)
    public static let infoPasscodeWrap = Array("latchkey v1 passcode wrap".utf8)
    public static let infoState = Array("latchkey v1 device state".utf8)
    public static let infoIndexFileMAC = Array("latchkey v1 index file mac".utf8)
    /// Prefix of the AAD of every item encryption (§7.4).
    public static let itemAADPrefix = Array("LKv1item".utf8)
    /// Prefix of the unique-key hash input (§7.5).
    public static let uniqueKeyPrefix = Array("LKv1uniq".utf8)
    /// Prefix of the class tag input (§7.5).
    public static let classTagPrefix = Array("LKv1clas".utf8)
    /// Prefix of the attribute hash input (§7.6).
    public static let attributeHashPrefix = Array("LKv1attr".utf8)
}

/// Record types (§6.3). Types 0x80 and above are ancillary: a reader that does not know one
/// skips it. An unknown type below 0x80 means the file needs a newer reader.
public enum RecordType: UInt8, Sendable {
    case itemPut = 1
    case itemDelete = 2
    case keybagChange = 3
    /// Ancillary: keyed hashes of a few attributes of the put just before it (§7.6).
    case attributeHashes = 0x80
    /// Ancillary: an earlier version of an item, the put it replaced or deleted (§7.7).
    case history = 0x81

    public static func isAncillary(_ raw: UInt8) -> Bool { raw >= 0x80 }
}

/// Item classes stored in the file, by Apple's 4-character `kSecClass` value.
public enum ItemClass: String, CaseIterable, Sendable, Codable {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case certificate = "cert"
    case key = "keys"

    public var code: [UInt8] { Array(rawValue.utf8) }
}

/// A value for each item class, made once: a lookup is a switch, with no hashing of the class
/// (tables that a bulk import consults for every item and attribute).
package struct PerItemClass<Value: Sendable>: Sendable {
    @usableFromInline let genericPassword: Value
    @usableFromInline let internetPassword: Value
    @usableFromInline let certificate: Value
    @usableFromInline let key: Value

    package init(_ make: (ItemClass) -> Value) {
        genericPassword = make(.genericPassword)
        internetPassword = make(.internetPassword)
        certificate = make(.certificate)
        key = make(.key)
    }

    @inlinable
    package subscript(_ c: ItemClass) -> Value {
        switch c {
        case .genericPassword: return genericPassword
        case .internetPassword: return internetPassword
        case .certificate: return certificate
        case .key: return key
        }
    }
}

/// Protection classes (kSecAttrAccessible) with Apple's AKS class numbers (reference §3.1).
public enum ProtectionClass: UInt8, CaseIterable, Sendable, Comparable {
    case whenUnlocked = 6  // ak
    case afterFirstUnlock = 7  // ck
    case always = 8  // dk
    case whenUnlockedThisDeviceOnly = 9  // aku
    case afterFirstUnlockThisDeviceOnly = 10  // cku
    case alwaysThisDeviceOnly = 11  // dku
    case whenPasscodeSetThisDeviceOnly = 12  // akpu

    /// The `pdmn` code: ak, ck, dk, aku, cku, dku, akpu.
    public var code: String {
        switch self {
        case .whenUnlocked: return "ak"
        case .afterFirstUnlock: return "ck"
        case .always: return "dk"
        case .whenUnlockedThisDeviceOnly: return "aku"
        case .afterFirstUnlockThisDeviceOnly: return "cku"
        case .alwaysThisDeviceOnly: return "dku"
        case .whenPasscodeSetThisDeviceOnly: return "akpu"
        }
    }

    /// Apple's long name without the `kSecAttrAccessible` prefix.
    public var longName: String {
        switch self {
        case .whenUnlocked: return "WhenUnlocked"
        case .afterFirstUnlock: return "AfterFirstUnlock"
        case .always: return "Always"
        case .whenUnlockedThisDeviceOnly: return "WhenUnlockedThisDeviceOnly"
        case .afterFirstUnlockThisDeviceOnly: return "AfterFirstUnlockThisDeviceOnly"
        case .alwaysThisDeviceOnly: return "AlwaysThisDeviceOnly"
        case .whenPasscodeSetThisDeviceOnly: return "WhenPasscodeSetThisDeviceOnly"
        }
    }

    /// Parses `ak` … `akpu`, or the long names with or without the `kSecAttrAccessible` prefix.
    public init?(code: String) {
        let name = code.hasPrefix("kSecAttrAccessible") ? String(code.dropFirst(18)) : code
        guard
            let match = ProtectionClass.allCases.first(where: {
                $0.code == name || $0.longName.lowercased() == name.lowercased()
            })
        else { return nil }
        self = match
    }

    /// Keys available always (wrapped by the device key only): dk, dku.
    public var isAlwaysAvailable: Bool { self == .always || self == .alwaysThisDeviceOnly }
    /// Keys that survive `lock()` once unlocked: ck, cku.
    public var survivesLock: Bool { self == .afterFirstUnlock || self == .afterFirstUnlockThisDeviceOnly }
    /// ThisDeviceOnly classes never leave the device in a usable form.
    public var isThisDeviceOnly: Bool { rawValue >= 9 }

    public static func < (a: ProtectionClass, b: ProtectionClass) -> Bool { a.rawValue < b.rawValue }
}
