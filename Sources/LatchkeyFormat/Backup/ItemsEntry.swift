import LatchkeyCrypto

/// One item in an items entry (spec/BACKUP.md §5.2): its UUID, protection class and flags in
/// clear, its plaintext (spec/FORMAT.md §8) sealed under a fresh item key wrapped by the
/// backup class key of its protection class.
package struct BackupItemRecord: Sendable {
    package var uuid: [UInt8]
    package var protectionClass: ProtectionClass
    package var flags: UInt8
    package var wrappedItemKey: [UInt8]
    package var ciphertext: ArraySlice<UInt8>
    package var tag: ArraySlice<UInt8>

    /// Bytes 0..<24 of the record, which the AAD covers.
    func clearPart() -> [UInt8] {
        var w = ByteWriter(capacity: BackupConstants.itemClearSize)
        w.writeBytes(uuid)
        w.writeInteger(protectionClass.rawValue, as: UInt8.self)
        w.writeInteger(flags, as: UInt8.self)
        w.writeZeros(2)
        w.writeInteger(UInt32(ciphertext.count), as: UInt32.self)
        return w.bytes
    }

    /// AAD (§5.3): "LKBKitem" ‖ backup UUID ‖ u32 entry number ‖ u32 record index ‖ clear part.
    func aad(backupUUID: [UInt8], entry: Int, index: Int) -> [UInt8] {
        var w = ByteWriter(capacity: 56)
        w.writeBytes(BackupConstants.itemAADPrefix)
        w.writeBytes(backupUUID)
        w.writeInteger(UInt32(entry), as: UInt32.self)
        w.writeInteger(UInt32(index), as: UInt32.self)
        w.writeBytes(clearPart())
        return w.bytes
    }

    package func encode(into out: inout [UInt8]) {
        out.append(contentsOf: clearPart())
        out.append(contentsOf: wrappedItemKey)
        out.append(contentsOf: ciphertext)
        out.append(contentsOf: tag)
    }

    package var encodedSize: Int { BackupConstants.itemRecordFixedSize + ciphertext.count }

    /// Seals `plaintext` for record `index` of items entry `entry`.
    /// - Parameter itemKey: a fresh random 32-byte key, used for this one encryption only.
    package static func seal(
        _ plaintext: ItemPlaintext, uuid: [UInt8], protectionClass: ProtectionClass, flags: UInt8,
        classKey: SecretKey, itemKey: [UInt8], backupUUID: [UInt8], entry: Int, index: Int
    ) throws -> BackupItemRecord {
        var body = plaintext.encode()
        defer { Crypto.cleanse(&body) }
        guard body.count <= BackupConstants.maxPlaintextSize else {
            throw FormatError.invalidField(
                field: "item", reason: "plaintext larger than \(BackupConstants.maxPlaintextSize) bytes")
        }
        var r = BackupItemRecord(
            uuid: uuid, protectionClass: protectionClass, flags: flags,
            wrappedItemKey: try Crypto.aesKeyWrap(kek: classKey, key: itemKey),
            ciphertext: ArraySlice(repeating: 0, count: body.count), tag: [])
        let sealed = try Crypto.aesGCMSeal(
            key: itemKey, nonce: FormatConstants.itemNonce,
            aad: r.aad(backupUUID: backupUUID, entry: entry, index: index), plaintext: body)
        r.ciphertext = sealed.ciphertext[...]
        r.tag = sealed.tag[...]
        return r
    }

    /// Opens the record with its backup class key.
    /// - Throws: `CryptoError.integrityCheckFailed` (wrong key or altered bytes); `FormatError`
    ///   for a plaintext that breaks spec/FORMAT.md §8.3.
    package func open(classKey: SecretKey, backupUUID: [UInt8], entry: Int, index: Int) throws -> ItemPlaintext {
        var itemKey = try Crypto.aesKeyUnwrap(kek: classKey, wrapped: wrappedItemKey)
        defer { Crypto.cleanse(&itemKey) }
        var body = try Crypto.aesGCMOpen(
            key: itemKey, nonce: FormatConstants.itemNonce,
            aad: aad(backupUUID: backupUUID, entry: entry, index: index),
            ciphertext: Array(ciphertext), tag: Array(tag))
        defer { Crypto.cleanse(&body) }
        return try ItemPlaintext.decode(body)
    }
}

/// An items entry (§5.1): a magic, its own number, and up to a bounded number of records.
package enum ItemsEntry {
    /// Encodes an entry from already encoded records.
    package static func encode(number: Int, count: Int, records: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: BackupConstants.itemsFixedSize + records.count)
        w.writeBytes(BackupConstants.itemsMagic)
        w.writeInteger(UInt32(number), as: UInt32.self)
        w.writeInteger(UInt32(count), as: UInt32.self)
        w.writeBytes(records)
        return w.bytes
    }

    /// Decodes an entry and checks every rule of §5.4 that needs no key.
    package static func decode(_ bytes: [UInt8], expectedNumber: Int) throws -> [BackupItemRecord] {
        var r = ByteReader(bytes)
        guard try r.readBytes(count: 8, "items entry magic") == BackupConstants.itemsMagic else {
            throw FormatError.badMagic(what: "Latchkey backup items entry")
        }
        let number = Int(try r.readInteger(as: UInt32.self, "items entry number"))
        guard number == expectedNumber else {
            throw FormatError.invalidField(
                field: "items entry number", reason: "\(number) in the entry named for \(expectedNumber)")
        }
        let count = Int(try r.readInteger(as: UInt32.self, "items entry record count"))
        guard count >= 1 else {
            throw FormatError.invalidField(
                field: "items entry record count", reason: "an items entry holds at least one record")
        }
        guard count <= r.remaining / BackupConstants.itemRecordFixedSize else {
            throw FormatError.truncated(field: "items entry records")
        }
        var out: [BackupItemRecord] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            let uuid = try r.readBytes(count: 16, "item UUID")
            let raw = try r.readInteger(as: UInt8.self, "item protection class")
            guard let pc = ProtectionClass(rawValue: raw), pc != .whenPasscodeSetThisDeviceOnly else {
                throw FormatError.invalidField(field: "item protection class", reason: "\(raw) is not one of 6-11")
            }
            let flags = try r.readInteger(as: UInt8.self, "item flags")
            guard flags & ~ItemPutPayload.userPresenceFlag == 0 else {
                throw FormatError.invalidField(field: "item flags", reason: "reserved bits are set")
            }
            try r.readReserved(count: 2, "item reserved bytes 18-19")
            let length = Int(try r.readInteger(as: UInt32.self, "item ciphertext length"))
            guard length <= BackupConstants.maxPlaintextSize else {
                throw FormatError.invalidField(
                    field: "item ciphertext length", reason: "larger than \(BackupConstants.maxPlaintextSize)")
            }
            let wrapped = try r.readBytes(count: 40, "wrapped item key")
            let ct = try r.readSlice(count: length, "item ciphertext")
            let tag = try r.readSlice(count: 16, "item tag")
            out.append(
                BackupItemRecord(
                    uuid: uuid, protectionClass: pc, flags: flags, wrappedItemKey: wrapped,
                    ciphertext: ct, tag: tag))
        }
        try r.expectEnd("items entry")
        return out
    }
}
