import LatchkeyCrypto

/// What the manifest says about one entry (§6.2).
package struct ManifestEntry: Equatable, Sendable {
    package var name: String
    package var size: UInt64
    package var sha256: [UInt8]

    package init(name: String, size: UInt64, sha256: [UInt8]) {
        self.name = name
        self.size = size
        self.sha256 = sha256
    }
}

/// The last entry of every backup (spec/BACKUP.md §6): the common fields again, the item
/// counts, the name, size and SHA-256 of every other entry in archive order, and a MAC over
/// all of it.
package struct Manifest: Equatable, Sendable {
    package var common: BackupCommon
    package var itemCount: UInt64
    /// Items per protection class, for classes 6…11 in that order.
    package var countsByClass: [UInt64]
    /// akpu items of the source keychain that were not exported.
    package var notExported: UInt64
    package var entries: [ManifestEntry]
    package var extensionBytes: [UInt8] = []

    package init(
        common: BackupCommon, itemCount: UInt64, countsByClass: [UInt64], notExported: UInt64, entries: [ManifestEntry]
    ) {
        self.common = common
        self.itemCount = itemCount
        self.countsByClass = countsByClass
        self.notExported = notExported
        self.entries = entries
    }

    package func encode(macKey: SecretKey) -> [UInt8] {
        var w = ByteWriter(capacity: BackupConstants.manifestFixedSize + entries.count * 72 + 32)
        common.encode(magic: BackupConstants.manifestMagic, into: &w)
        w.writeInteger(itemCount, as: UInt64.self)
        for c in countsByClass { w.writeInteger(c, as: UInt64.self) }
        w.writeInteger(notExported, as: UInt64.self)
        w.writeInteger(UInt32(entries.count), as: UInt32.self)
        w.writeZeros(4)
        for e in entries {
            let name = Array(e.name.utf8)
            w.writeInteger(UInt8(name.count), as: UInt8.self)
            w.writeBytes(name)
            w.writeInteger(e.size, as: UInt64.self)
            w.writeBytes(e.sha256)
        }
        w.writeBytes(extensionBytes)
        w.writeBytes(Crypto.hmacSHA256(key: macKey, parts: [w.bytes]))
        return w.bytes
    }

    /// The MAC check (§6.3), done before any other field after the common part is trusted.
    package static func verifyMAC(_ bytes: [UInt8], macKey: SecretKey) -> Bool {
        guard bytes.count >= BackupConstants.manifestFixedSize + BackupConstants.macSize else { return false }
        let body = Array(bytes.dropLast(BackupConstants.macSize))
        return Crypto.constantTimeEqual(
            Crypto.hmacSHA256(key: macKey, parts: [body]), Array(bytes.suffix(BackupConstants.macSize)))
    }

    /// The common part alone: magic, versions, mode, UUIDs, KDF (§6.1).
    package static func decodeCommon(_ bytes: [UInt8]) throws -> BackupCommon {
        var r = ByteReader(bytes)
        return try BackupCommon.decode(magic: BackupConstants.manifestMagic, what: "manifest", &r)
    }

    /// Decodes every field; the caller has verified the MAC.
    package static func decode(_ bytes: [UInt8]) throws -> Manifest {
        var r = ByteReader(bytes)
        let common = try BackupCommon.decode(magic: BackupConstants.manifestMagic, what: "manifest", &r)
        let total = try r.readInteger(as: UInt64.self, "manifest item count")
        var counts: [UInt64] = []
        for _ in 0..<6 { counts.append(try r.readInteger(as: UInt64.self, "manifest item count by class")) }
        let notExported = try r.readInteger(as: UInt64.self, "manifest count of items not exported")
        let n = Int(try r.readInteger(as: UInt32.self, "manifest entry count"))
        try r.readReserved(count: 4, "manifest reserved bytes 172-175")
        guard n <= r.remaining / 42 else { throw FormatError.truncated(field: "manifest entries") }
        var entries: [ManifestEntry] = []
        entries.reserveCapacity(n)
        for _ in 0..<n {
            let length = Int(try r.readInteger(as: UInt8.self, "manifest entry name length"))
            guard length >= 1 else { throw FormatError.invalidField(field: "manifest entry name", reason: "empty") }
            let name = try r.readBytes(count: length, "manifest entry name")
            guard name.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw FormatError.invalidField(field: "manifest entry name", reason: "must be printable ASCII")
            }
            entries.append(
                ManifestEntry(
                    name: String(decoding: name, as: UTF8.self),
                    size: try r.readInteger(as: UInt64.self, "manifest entry size"),
                    sha256: try r.readBytes(count: 32, "manifest entry SHA-256")))
        }
        let extra = r.remaining - BackupConstants.macSize
        guard extra >= 0 else { throw FormatError.truncated(field: "manifest") }
        if extra > 0, common.minor <= BackupConstants.minor {
            throw FormatError.invalidField(field: "manifest", reason: "\(extra) unexpected bytes before the MAC")
        }
        var m = Manifest(
            common: common, itemCount: total, countsByClass: counts, notExported: notExported, entries: entries)
        m.extensionBytes = try r.readBytes(count: extra, "manifest extension bytes")
        return m
    }
}
