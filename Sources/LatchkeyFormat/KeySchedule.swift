import LatchkeyCrypto

/// The per-device secret: 32 random bytes and the device UUID (spec/FORMAT.md §2).
public struct DeviceSecret: Sendable {
    public let uuid: [UInt8]
    public let secret: SecretKey

    public init(uuid: [UInt8], secret: SecretKey) {
        self.uuid = uuid
        self.secret = secret
    }

    /// A new device: random UUID (version 4 bits set) and random secret.
    public static func generate() throws -> DeviceSecret {
        var uuid = try Crypto.randomBytes(16)
        uuid[6] = (uuid[6] & 0x0f) | 0x40
        uuid[8] = (uuid[8] & 0x3f) | 0x80
        return DeviceSecret(uuid: uuid, secret: try SecretKey.random(count: FormatConstants.deviceSecretSize))
    }

    /// The device secret file (§2.1): magic, version, UUID, secret, SHA-256 checksum.
    public func encodeFile() -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.deviceFileSize)
        w.writeBytes(FormatConstants.deviceMagic)
        w.writeInteger(1, as: UInt16.self)
        w.writeInteger(0, as: UInt16.self)
        w.writeZeros(4)
        w.writeBytes(uuid)
        secret.withUnsafeBytes { w.writeBytes($0) }
        w.writeBytes(Crypto.sha256(w.bytes))
        return w.bytes
    }

    public static func decodeFile(_ bytes: [UInt8]) throws -> DeviceSecret {
        var r = ByteReader(bytes)
        // Shorter than the magic: not a device secret file at all (spec §2.3, §1.4).
        guard bytes.count >= FormatConstants.deviceMagic.count else {
            throw FormatError.badMagic(what: "Latchkey device secret file")
        }
        _ = try r.readPreamble(
            magic: FormatConstants.deviceMagic, major: 1, field: "device secret", file: "device secret file")
        guard bytes.count == FormatConstants.deviceFileSize else {
            throw FormatError.truncated(field: "device secret file")
        }
        try r.readReserved(count: 4, "device secret reserved")
        let uuid = try r.readBytes(count: 16, "device UUID")
        var secret = try r.readBytes(count: 32, "device secret")
        defer { Crypto.cleanse(&secret) }
        let sum = try r.readBytes(count: 32, "device secret checksum")
        // The checksummed bytes include the secret: cleanse that copy too.
        var covered = Array(bytes[0..<64])
        defer { Crypto.cleanse(&covered) }
        guard Crypto.constantTimeEqual(Crypto.sha256(covered), sum) else {
            throw FormatError.checksumMismatch(what: "device secret file")
        }
        return DeviceSecret(uuid: uuid, secret: SecretKey(copying: secret))
    }
}

/// Keys derived from the device secret for one keychain file (§5.1). All are always available:
/// they need no passcode.
public struct FileKeys: Sendable {
    /// HKDF(device secret, salt = file UUID, "latchkey v1 device key").
    public let deviceKey: SecretKey
    public let headerMAC: SecretKey
    public let recordMAC: SecretKey
    public let index: SecretKey
    public let deviceWrap: SecretKey
    /// MAC key of the index file (§17): HKDF(device key, "latchkey v1 index file mac").
    public let indexFileMAC: SecretKey

    public init(device: DeviceSecret, fileUUID: [UInt8]) throws {
        deviceKey = try Crypto.hkdfSHA256(ikm: device.secret, salt: fileUUID, info: FormatConstants.infoDeviceKey)
        headerMAC = try Crypto.hkdfSHA256(ikm: deviceKey, salt: [], info: FormatConstants.infoHeaderMAC)
        recordMAC = try Crypto.hkdfSHA256(ikm: deviceKey, salt: [], info: FormatConstants.infoRecordMAC)
        index = try Crypto.hkdfSHA256(ikm: deviceKey, salt: [], info: FormatConstants.infoIndex)
        deviceWrap = try Crypto.hkdfSHA256(ikm: deviceKey, salt: [], info: FormatConstants.infoDeviceWrap)
        indexFileMAC = try Crypto.hkdfSHA256(ikm: deviceKey, salt: [], info: FormatConstants.infoIndexFileMAC)
        let index = self.index
        classTagWords = [ItemClass.genericPassword, .internetPassword, .certificate, .key].map {
            Crypto.hmacSHA256(key: index, parts: [FormatConstants.classTagPrefix, $0.code]).prefix(4).reduce(0) {
                $0 << 8 | UInt32($1)
            }
        }
    }

    /// The class tags of genp, inet, cert and keys as big-endian words (made once: a reader
    /// compares the class tag of every item it decrypts with its plaintext's class, §8.4).
    private let classTagWords: [UInt32]

    /// `classTag(c)` as a big-endian word.
    public func classTagWord(_ c: ItemClass) -> UInt32 {
        switch c {
        case .genericPassword: return classTagWords[0]
        case .internetPassword: return classTagWords[1]
        case .certificate: return classTagWords[2]
        case .key: return classTagWords[3]
        }
    }

    /// The passcode key (§5.2): scrypt of the passcode, then HKDF with the device key as salt,
    /// so that the file and the passcode are not enough without the device.
    public func passcodeKey(passcode: [UInt8], kdf: KDFParameters) throws -> SecretKey {
        guard kdf.kind == .scrypt else {
            throw FormatError.invalidField(field: "keybag KDF", reason: "this keychain has no passcode")
        }
        var stretched = try Crypto.scrypt(
            password: passcode, salt: kdf.salt, n: kdf.n, r: kdf.r, p: kdf.p,
            maxMemory: kdf.maxMemory, count: 32)
        defer { Crypto.cleanse(&stretched) }
        var salt = deviceKey.copyBytes()
        defer { Crypto.cleanse(&salt) }
        var out = try Crypto.hkdfSHA256(ikm: stretched, salt: salt, info: FormatConstants.infoPasscodeWrap, count: 32)
        return SecretKey(consuming: &out)
    }

    /// The 4-byte keyed tag of an item class (§7.5).
    public func classTag(_ c: ItemClass) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: index, parts: [FormatConstants.classTagPrefix, c.code]).prefix(4))
    }

    /// The 16-byte keyed hash of an item's unique key (§7.5).
    public func uniqueKeyHash(_ key: UniqueKey) -> [UInt8] {
        withUniqueKeyHash(key) { Array($0) }
    }

    /// Calls `body` with `uniqueKeyHash(key)`, held on the stack (a lookup by unique key makes
    /// no array of it).
    public func withUniqueKeyHash<R>(_ key: UniqueKey, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        FormatConstants.uniqueKeyPrefix.withUnsafeBytes { p in
            key.encoded.withUnsafeBytes { k in
                withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { mac in
                    Crypto.hmacSHA256(key: index, p, k, into: mac)
                    return body(UnsafeRawBufferPointer(rebasing: mac[0..<16]))
                }
            }
        }
    }
}

/// The canonical encoding of an item's unique key (§7.5): the class code, then for each
/// attribute of the class's key, in the order of `UniqueKey.attributes(for:)`, its name, kind
/// and value bytes. Absent attributes take their default (empty bytes, 0, date 0).
public struct UniqueKey: Hashable, Sendable {
    public let encoded: [UInt8]

    /// Kinds of the key attributes, which decide the default of an absent one.
    public enum Kind: Sendable { case bytes, integer, date }

    /// The documented unique key of each class plus `agrp` and `sync` (reference §2.1).
    /// (Made once: queries look them up on every call.)
    public static func attributes(for c: ItemClass) -> [(name: String, kind: Kind)] {
        switch c {
        case .genericPassword: return genericPasswordKey
        case .internetPassword: return internetPasswordKey
        case .certificate: return certificateKey
        case .key: return keyKey
        }
    }

    private static let genericPasswordKey: [(name: String, kind: Kind)] =
        [("acct", .bytes), ("svce", .bytes), ("agrp", .bytes), ("sync", .integer)]
    private static let internetPasswordKey: [(name: String, kind: Kind)] =
        [
            ("acct", .bytes), ("sdmn", .bytes), ("srvr", .bytes), ("ptcl", .integer), ("atyp", .bytes),
            ("port", .integer), ("path", .bytes), ("agrp", .bytes), ("sync", .integer)
        ]
    private static let certificateKey: [(name: String, kind: Kind)] =
        [("ctyp", .integer), ("issr", .bytes), ("slnr", .bytes), ("agrp", .bytes), ("sync", .integer)]
    private static let keyKey: [(name: String, kind: Kind)] =
        [
            ("kcls", .integer), ("klbl", .bytes), ("atag", .bytes), ("crtr", .integer), ("type", .integer),
            ("bsiz", .integer), ("esiz", .integer), ("sdat", .date), ("edat", .date), ("agrp", .bytes),
            ("sync", .integer)
        ]

    public init(itemClass: ItemClass, attributes: [String: AttributeValue]) {
        self.init(itemClass: itemClass) { attributes[$0] }
    }

    /// The unique key of an item of class `itemClass` whose attribute `name` is `value(name)`
    /// (nil: absent), for callers that would otherwise copy a dictionary to change one value.
    public init(itemClass: ItemClass, value: (String) -> AttributeValue?) {
        self.init(itemClass: itemClass, at: { value(UniqueKey.attributes(for: itemClass)[$0].name) })
    }

    /// The same with the attributes given by their position in `attributes(for: itemClass)`.
    public init(itemClass: ItemClass, at value: (Int) -> AttributeValue?) {
        var w = ByteWriter(capacity: 96)
        w.writeBytes(itemClass.rawValue.utf8)
        for (i, (name, kind)) in UniqueKey.attributes(for: itemClass).enumerated() {
            w.writeInteger(UInt8(name.utf8.count), as: UInt8.self)
            w.writeBytes(name.utf8)
            switch value(i) {
            case .string(let s)?:
                w.writeInteger(0, as: UInt8.self)
                w.writeInteger(UInt32(s.utf8.count), as: UInt32.self)
                w.writeBytes(s.utf8)
            case .data(let d)?:
                w.writeInteger(0, as: UInt8.self)
                w.writeInteger(UInt32(d.count), as: UInt32.self)
                w.writeBytes(d)
            case .integer(let i)?:
                w.writeInteger(1, as: UInt8.self)
                w.writeInteger(8, as: UInt32.self)
                w.writeInteger(UInt64(bitPattern: i), as: UInt64.self)
            case .date(let d)?:
                w.writeInteger(2, as: UInt8.self)
                w.writeInteger(8, as: UInt32.self)
                w.writeInteger(d.bitPattern, as: UInt64.self)
            case nil:
                // The default of an absent attribute: empty bytes, 0, date 0.
                switch kind {
                case .bytes: w.writeInteger(0, as: UInt8.self); w.writeInteger(0, as: UInt32.self)
                case .integer:
                    w.writeInteger(1, as: UInt8.self); w.writeInteger(8, as: UInt32.self);
                    w.writeInteger(0, as: UInt64.self)
                case .date:
                    w.writeInteger(2, as: UInt8.self); w.writeInteger(8, as: UInt32.self);
                    w.writeInteger(Double(0).bitPattern, as: UInt64.self)
                }
            }
        }
        encoded = w.bytes
    }
}
