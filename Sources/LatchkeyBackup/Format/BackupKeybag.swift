import LatchkeyCrypto
import LatchkeyFormat

/// Bytes 8..<104 of the keybag entry, repeated in the manifest (spec/BACKUP.md §3.1).
package struct BackupCommon: Equatable, Sendable {
    package var major: UInt16 = BackupConstants.major
    package var minor: UInt16 = BackupConstants.minor
    package var mode: BackupMode
    package var backupUUID: [UInt8]
    package var sourceDeviceUUID: [UInt8]
    package var keychainUUID: [UInt8]
    /// Seconds since 1970-01-01T00:00:00Z.
    package var createdAt: UInt64
    package var kdf: KDFParameters

    package init(mode: BackupMode, backupUUID: [UInt8], sourceDeviceUUID: [UInt8], keychainUUID: [UInt8],
                 createdAt: UInt64, kdf: KDFParameters) {
        self.mode = mode
        self.backupUUID = backupUUID
        self.sourceDeviceUUID = sourceDeviceUUID
        self.keychainUUID = keychainUUID
        self.createdAt = createdAt
        self.kdf = kdf
    }

    /// Writes bytes 0..<104 with `magic` first.
    func encode(magic: [UInt8], into w: inout ByteWriter) {
        w.raw(magic)
        w.u16(major)
        w.u16(minor)
        w.u8(mode.rawValue)
        w.zeros(3)
        w.raw(backupUUID)
        w.raw(sourceDeviceUUID)
        w.raw(keychainUUID)
        w.u64(createdAt)
        w.u8(kdf.kind.rawValue)
        w.u8(kdf.logN)
        w.zeros(2)
        w.u32(kdf.r)
        w.u32(kdf.p)
        w.zeros(4)
        w.raw(kdf.salt)
    }

    /// Reads bytes 0..<104: magic, then the major version before anything else (§10).
    static func decode(magic: [UInt8], what: String, _ r: inout ByteReader) throws -> BackupCommon {
        guard try r.bytes(8, "\(what) magic") == magic else { throw FormatError.badMagic(what: "Latchkey backup \(what)") }
        let major = try r.u16("\(what) major version")
        let minor = try r.u16("\(what) minor version")
        guard major == BackupConstants.major else {
            throw FormatError.unsupportedVersion(what: "backup", major: major, minor: minor)
        }
        let rawMode = try r.u8("\(what) mode")
        guard let mode = BackupMode(rawValue: rawMode) else {
            throw FormatError.invalidField(field: "\(what) mode", reason: "unknown mode \(rawMode)")
        }
        try r.reserved(3, "\(what) reserved bytes 13-15")
        let backupUUID = try r.bytes(16, "backup UUID")
        let device = try r.bytes(16, "source device UUID")
        let keychain = try r.bytes(16, "keychain UUID")
        let created = try r.u64("creation time")
        let rawKDF = try r.u8("KDF id")
        guard let kind = KDFParameters.Kind(rawValue: rawKDF) else {
            throw FormatError.invalidField(field: "KDF id", reason: "unknown KDF \(rawKDF)")
        }
        let logN = try r.u8("scrypt logN")
        try r.reserved(2, "\(what) reserved bytes 74-75")
        let rr = try r.u32("scrypt r")
        let p = try r.u32("scrypt p")
        try r.reserved(4, "\(what) reserved bytes 84-87")
        let salt = try r.bytes(16, "scrypt salt")
        let kdf: KDFParameters
        switch kind {
        case .none:
            guard logN == 0, rr == 0, p == 0, salt.allSatisfy({ $0 == 0 }) else {
                throw FormatError.invalidField(field: "KDF", reason: "parameters must be zero when there is no password")
            }
            kdf = .none
        case .scrypt:
            kdf = .scrypt(salt: salt, logN: logN, r: rr, p: p)
            try kdf.validate()
        }
        guard (mode == .password) == (kind == .scrypt) else {
            throw FormatError.invalidField(field: "KDF id", reason: mode == .password ? "a password backup needs scrypt" : "a backup without a password has no KDF")
        }
        var c = BackupCommon(mode: mode, backupUUID: backupUUID, sourceDeviceUUID: device, keychainUUID: keychain,
                             createdAt: created, kdf: kdf)
        c.major = major
        c.minor = minor
        return c
    }
}

/// One wrapped backup class key (§3.2).
package struct BackupKeybagEntry: Equatable, Sendable {
    package var protectionClass: ProtectionClass
    package var wrap: BackupWrapKind
    package var wrappedKey: [UInt8]
}

/// The first entry of every backup: who can open it, the KDF, and the six backup class keys,
/// wrapped (spec/BACKUP.md §3).
package struct BackupKeybag: Equatable, Sendable {
    package var common: BackupCommon
    package var entries: [BackupKeybagEntry]
    /// Bytes a newer minor version put between the entries and the checksum (§10).
    package var extensionBytes: [UInt8] = []

    /// The wrap kind each class must have in `mode` (§4.2).
    package static func wrapKind(_ pc: ProtectionClass, mode: BackupMode) -> BackupWrapKind {
        switch mode {
        case .deviceOnly: return .device
        case .password: return pc.isThisDeviceOnly ? .passwordAndDevice : .password
        }
    }

    package func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 512)
        common.encode(magic: BackupConstants.keybagMagic, into: &w)
        w.u8(UInt8(entries.count))
        w.zeros(3)
        for e in entries {
            w.u8(e.protectionClass.rawValue)
            w.u8(e.wrap.rawValue)
            w.raw(e.wrappedKey)
        }
        w.raw(extensionBytes)
        w.raw(Crypto.sha256(w.bytes))
        return w.bytes
    }

    /// Decodes and checks every rule of §3.3 that needs no key.
    package static func decode(_ bytes: [UInt8]) throws -> BackupKeybag {
        var r = ByteReader(bytes)
        let common = try BackupCommon.decode(magic: BackupConstants.keybagMagic, what: "keybag", &r)
        guard bytes.count >= BackupConstants.keybagFixedSize + BackupConstants.checksumSize else {
            throw FormatError.truncated(field: "backup keybag")
        }
        let sum = Array(bytes.suffix(BackupConstants.checksumSize))
        guard Crypto.constantTimeEqual(Crypto.sha256(Array(bytes.dropLast(BackupConstants.checksumSize))), sum) else {
            throw FormatError.checksumMismatch(what: "backup keybag")
        }
        let count = Int(try r.u8("keybag entry count"))
        try r.reserved(3, "keybag reserved bytes 105-107")
        guard count == BackupConstants.exportedClasses.count else {
            throw FormatError.invalidField(field: "keybag entry count", reason: "must be 6")
        }
        var entries: [BackupKeybagEntry] = []
        for expected in BackupConstants.exportedClasses {
            let raw = try r.u8("keybag entry class")
            guard raw == expected.rawValue else {
                throw FormatError.invalidField(field: "keybag entries", reason: "class \(raw) where \(expected.rawValue) (\(expected.code)) was expected")
            }
            let kind = try r.u8("keybag entry wrap kind")
            guard kind == wrapKind(expected, mode: common.mode).rawValue else {
                throw FormatError.invalidField(field: "keybag entries", reason: "class \(expected.code) has wrap kind \(kind)")
            }
            entries.append(BackupKeybagEntry(protectionClass: expected, wrap: BackupWrapKind(rawValue: kind)!,
                                             wrappedKey: try r.bytes(40, "wrapped class key")))
        }
        let extra = r.remaining - BackupConstants.checksumSize
        guard extra >= 0 else { throw FormatError.truncated(field: "backup keybag") }
        if extra > 0, common.minor <= BackupConstants.minor {
            throw FormatError.invalidField(field: "backup keybag", reason: "\(extra) unexpected bytes before the checksum")
        }
        var bag = BackupKeybag(common: common, entries: entries)
        bag.extensionBytes = try r.bytes(extra, "keybag extension bytes")
        return bag
    }
}
