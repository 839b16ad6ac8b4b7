import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// The byte layouts of a backup (spec/BACKUP.md §3, §6) and the KDF parameters a backup and a
/// keychain share (spec/FORMAT.md §4.1): round trips, and each field at the spec's offset.
@Suite struct BackupLayoutTests {
    static let common = BackupCommon(
        mode: .password, backupUUID: (0..<16).map { UInt8($0) }, sourceDeviceUUID: Sample.deviceUUID,
        keychainUUID: Sample.fileUUID, createdAt: 0x0102_0304_0506_0708,
        kdf: .scrypt(salt: Sample.salt, logN: 15, r: 8, p: 2))

    static func keybag() -> BackupKeybag {
        BackupKeybag(
            common: common,
            entries: BackupConstants.exportedClasses.map { pc in
                BackupKeybagEntry(
                    protectionClass: pc, wrap: BackupKeybag.wrapKind(pc, mode: .password),
                    wrappedKey: [UInt8](repeating: pc.rawValue, count: 40))
            })
    }

    @Test func kdfParameters_areTheSame32BytesInBothKeybags() throws {
        let kdf = Self.common.kdf
        var w = ByteWriter()
        kdf.encode(into: &w)
        #expect(w.count == FormatConstants.kdfParametersSize)
        #expect(w.bytes[0] == 1 && w.bytes[1] == 15, "KDF id, logN")
        #expect(
            ByteReader(w.bytes).getInteger(at: 4, as: UInt32.self) == 8
                && ByteReader(w.bytes).getInteger(at: 8, as: UInt32.self) == 2)
        #expect(Array(w.bytes[16..<32]) == Sample.salt)
        var r = ByteReader(w.bytes)
        #expect(try KDFParameters.decode(&r, names: .backup) == kdf)
        let keychainBag = Keybag(kdf: kdf, entries: []).encode()
        #expect(Array(keychainBag.prefix(32)) == w.bytes, "spec/FORMAT.md §4.1")
        #expect(Array(Self.keybag().encode()[72..<104]) == w.bytes, "spec/BACKUP.md §3.1, bytes 72..<104")
    }

    @Test func kdfParameters_errorsNameTheFieldsOfTheirBag() {
        var none = ByteWriter()
        KDFParameters.none.encode(into: &none)
        let bytes = none.bytes.setting(UInt8(1), at: 1)  // logN without a KDF
        var r = ByteReader(bytes)
        #expect(
            throws: FormatError.invalidField(
                field: "keybag KDF", reason: "parameters must be zero when there is no passcode")
        ) {
            try KDFParameters.decode(&r)
        }
        r = ByteReader(bytes)
        #expect(
            throws: FormatError.invalidField(field: "KDF", reason: "parameters must be zero when there is no password")
        ) {
            try KDFParameters.decode(&r, names: .backup)
        }
    }

    @Test func keybag_roundTripsAtTheSpecsOffsets() throws {
        let bag = Self.keybag()
        let bytes = bag.encode()
        #expect(bytes.count == 360 + 32)
        #expect(try BackupKeybag.decode(bytes) == bag)
        #expect(Array(bytes[0..<8]) == Array("LKBACKUP".utf8))
        #expect(
            ByteReader(bytes).getInteger(at: 8, as: UInt16.self) == 1
                && ByteReader(bytes).getInteger(at: 10, as: UInt16.self) == 0)
        #expect(bytes[12] == BackupMode.password.rawValue)
        #expect(Array(bytes[16..<32]) == Self.common.backupUUID && Array(bytes[32..<48]) == Sample.deviceUUID)
        #expect(Array(bytes[48..<64]) == Sample.fileUUID)
        #expect(ByteReader(bytes).getInteger(at: 64, as: UInt64.self) == 0x0102_0304_0506_0708)
        #expect(bytes[104] == 6 && bytes[105..<108].allSatisfy { $0 == 0 })
        for (i, pc) in BackupConstants.exportedClasses.enumerated() {
            let at = 108 + 42 * i
            #expect(bytes[at] == pc.rawValue && bytes[at + 1] == BackupKeybag.wrapKind(pc, mode: .password).rawValue)
            #expect(bytes[at + 2..<at + 42].allSatisfy { $0 == pc.rawValue })
        }
        #expect(Array(bytes[360...]) == Crypto.sha256(Array(bytes[..<360])))
    }

    @Test func manifest_roundTripsAtTheSpecsOffsets() throws {
        let macKey = Sample.macKey
        let m = Manifest(
            common: Self.common, itemCount: 21, countsByClass: [1, 2, 3, 4, 5, 6], notExported: 7,
            entries: [
                ManifestEntry(name: "latchkey-backup/keybag", size: 392, sha256: [UInt8](repeating: 0xEE, count: 32))
            ])
        let bytes = m.encode(macKey: macKey)
        #expect(Manifest.verifyMAC(bytes, macKey: macKey))
        #expect(try Manifest.decode(bytes) == m)
        #expect(Array(bytes[0..<8]) == Array("LKBMANIF".utf8))
        #expect(
            Array(bytes[8..<104]) == Array(Self.keybag().encode()[8..<104]), "bytes 8..<104 repeat the keybag entry's")
        let r = ByteReader(bytes)
        #expect(r.getInteger(at: 104, as: UInt64.self) == 21)
        #expect((0..<6).map { r.getInteger(at: 112 + 8 * $0, as: UInt64.self) } == [1, 2, 3, 4, 5, 6])
        #expect(r.getInteger(at: 160, as: UInt64.self) == 7 && r.getInteger(at: 168, as: UInt32.self) == 1)
        #expect(bytes[176] == 22 && Array(bytes[177..<199]) == Array("latchkey-backup/keybag".utf8))
        #expect(r.getInteger(at: 199, as: UInt64.self) == 392)
        #expect(bytes.count == 176 + 1 + 22 + 8 + 32 + 32)
    }

    @Test func itemsEntry_roundTripsAtTheSpecsOffsets() throws {
        let classKey = SecretKey(copying: [UInt8](repeating: 0x33, count: 32))
        let plaintext = ItemPlaintext(itemClass: .genericPassword, attributes: ["acct": .string("a")], data: [1, 2, 3])
        let uuid: [UInt8] = (0..<16).map { UInt8(0xC0 + $0) }
        let record = try BackupItemRecord.seal(
            plaintext, uuid: uuid, protectionClass: .afterFirstUnlock, flags: 1, classKey: classKey,
            itemKey: [UInt8](repeating: 0x44, count: 32), backupUUID: Self.common.backupUUID,
            entry: 2, index: 0)
        var records: [UInt8] = []
        record.encode(into: &records)
        #expect(records.count == record.encodedSize)
        let bytes = ItemsEntry.encode(number: 2, count: 1, records: records)
        #expect(Array(bytes[0..<8]) == Array("LKBITEMS".utf8))
        let r = ByteReader(bytes)
        #expect(
            r.getInteger(at: 8, as: UInt32.self) == 2 && r.getInteger(at: 12, as: UInt32.self) == 1,
            "entry number, record count")
        #expect(Array(bytes[16..<32]) == uuid, "record: UUID at 0")
        #expect(
            bytes[32] == ProtectionClass.afterFirstUnlock.rawValue && bytes[33] == 1 && bytes[34] == 0 && bytes[35] == 0
        )
        #expect(r.getInteger(at: 36, as: UInt32.self) == UInt32(record.ciphertext.count), "ciphertext length at 20")
        #expect(Array(bytes[40..<80]) == record.wrappedItemKey, "wrapped key at 24")
        #expect(bytes.count == 16 + 64 + record.ciphertext.count + 16)
        let decoded = try ItemsEntry.decode(bytes, expectedNumber: 2)
        #expect(decoded.count == 1)
        #expect(
            try decoded[0].open(classKey: classKey, backupUUID: Self.common.backupUUID, entry: 2, index: 0) == plaintext
        )
        expectRejection(.invalidField) { try ItemsEntry.decode(bytes, expectedNumber: 3) }
    }

    /// The sizes named in BackupConstants are the spec's numbers.
    @Test func constants_areTheSpecsSizes() {
        #expect(BackupConstants.commonSize == 104)
        #expect(BackupConstants.keybagFixedSize == 108)
        #expect(BackupConstants.manifestFixedSize == 176)
        #expect(BackupConstants.itemRecordFixedSize == 64 + 16)
        #expect(BackupConstants.maxPlaintextSize == 16_777_120)
        #expect(FormatConstants.keybagFixedSize == 34)
    }
}
