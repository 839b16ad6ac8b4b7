import LatchkeyCrypto

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

    package init(
        mode: BackupMode, backupUUID: [UInt8], sourceDeviceUUID: [UInt8], keychainUUID: [UInt8],
        createdAt: UInt64, kdf: KDFParameters
    ) {
        self.mode = mode
        self.backupUUID = backupUUID
        self.sourceDeviceUUID = sourceDeviceUUID
        self.keychainUUID = keychainUUID
        self.createdAt = createdAt
        self.kdf = kdf
    }

    /// Writes bytes 0..<104 with `magic` first.
    func encode(magic: [UInt8], into w: inout ByteWriter) {
        w.writeBytes(magic)
        w.writeInteger(major, as: UInt16.self)
        w.writeInteger(minor, as: UInt16.self)
        w.writeInteger(mode.rawValue, as: UInt8.self)
        w.writeZeros(3)
        w.writeBytes(backupUUID)
        w.writeBytes(sourceDeviceUUID)
        w.writeBytes(keychainUUID)
        w.writeInteger(createdAt, as: UInt64.self)
        kdf.encode(into: &w)
    }

    /// Reads bytes 0..<104: magic, then the major version before anything else (§10).
    static func decode(magic: [UInt8], what: String, _ r: inout ByteReader) throws -> BackupCommon {
        let minor = try r.readPreamble(
            magic: magic, major: BackupConstants.major, field: what, file: "backup \(what)", family: "backup")
        let rawMode = try r.readInteger(as: UInt8.self, "\(what) mode")
        guard let mode = BackupMode(rawValue: rawMode) else {
            throw FormatError.invalidField(field: "\(what) mode", reason: "unknown mode \(rawMode)")
        }
        try r.readReserved(count: 3, "\(what) reserved bytes 13-15")
        let backupUUID = try r.readBytes(count: 16, "backup UUID")
        let device = try r.readBytes(count: 16, "source device UUID")
        let keychain = try r.readBytes(count: 16, "keychain UUID")
        let created = try r.readInteger(as: UInt64.self, "creation time")
        let kdf = try KDFParameters.decode(&r, names: .backup)
        guard (mode == .password) == (kdf.kind == .scrypt) else {
            throw FormatError.invalidField(
                field: "KDF id",
                reason: mode == .password ? "a password backup needs scrypt" : "a backup without a password has no KDF")
        }
        var c = BackupCommon(
            mode: mode, backupUUID: backupUUID, sourceDeviceUUID: device, keychainUUID: keychain,
            createdAt: created, kdf: kdf)
        c.minor = minor
        return c
    }
}

/// One wrapped backup class key (§3.2).
package typealias BackupKeybagEntry = WrappedClassKey<BackupWrapKind>

/// The first entry of every backup: who can open it, the KDF, and the six backup class keys,
/// wrapped (spec/BACKUP.md §3).
package struct BackupKeybag: Equatable, Sendable {
    package var common: BackupCommon
    package var entries: [BackupKeybagEntry]
    /// Bytes a newer minor version put between the entries and the checksum (§10).
    package var extensionBytes: [UInt8] = []

    package init(common: BackupCommon, entries: [BackupKeybagEntry], extensionBytes: [UInt8] = []) {
        self.common = common
        self.entries = entries
        self.extensionBytes = extensionBytes
    }

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
        w.writeInteger(UInt8(entries.count), as: UInt8.self)
        w.writeZeros(3)
        for e in entries { e.encode(into: &w) }
        w.writeBytes(extensionBytes)
        w.writeBytes(Crypto.sha256(w.bytes))
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
        let count = Int(try r.readInteger(as: UInt8.self, "keybag entry count"))
        try r.readReserved(count: 3, "keybag reserved bytes 105-107")
        guard count == BackupConstants.exportedClasses.count else {
            throw FormatError.invalidField(field: "keybag entry count", reason: "must be 6")
        }
        var entries: [BackupKeybagEntry] = []
        for expected in BackupConstants.exportedClasses {
            let raw = try r.readInteger(as: UInt8.self, "keybag entry class")
            guard raw == expected.rawValue else {
                throw FormatError.invalidField(
                    field: "keybag entries",
                    reason: "class \(raw) where \(expected.rawValue) (\(expected.code)) was expected")
            }
            let kind = try r.readInteger(as: UInt8.self, "keybag entry wrap kind")
            guard kind == wrapKind(expected, mode: common.mode).rawValue else {
                throw FormatError.invalidField(
                    field: "keybag entries", reason: "class \(expected.code) has wrap kind \(kind)")
            }
            entries.append(
                BackupKeybagEntry(
                    protectionClass: expected, wrap: BackupWrapKind(rawValue: kind)!,
                    wrappedKey: try r.readBytes(count: 40, "wrapped class key")))
        }
        let extra = r.remaining - BackupConstants.checksumSize
        guard extra >= 0 else { throw FormatError.truncated(field: "backup keybag") }
        if extra > 0, common.minor <= BackupConstants.minor {
            throw FormatError.invalidField(
                field: "backup keybag", reason: "\(extra) unexpected bytes before the checksum")
        }
        var bag = BackupKeybag(common: common, entries: entries)
        bag.extensionBytes = try r.readBytes(count: extra, "keybag extension bytes")
        return bag
    }
}
