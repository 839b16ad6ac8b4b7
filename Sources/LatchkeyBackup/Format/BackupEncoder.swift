import LatchkeyCrypto
import LatchkeyFormat

/// Where a backup writer takes its random bytes: the CSPRNG, or the fixture generator's
/// deterministic source.
package protocol BackupRandomSource: AnyObject {
    func bytes(_ count: Int) throws -> [UInt8]
}

/// The CSPRNG (OpenSSL's RAND_bytes).
package final class SystemRandomSource: BackupRandomSource {
    package init() {}
    package func bytes(_ count: Int) throws -> [UInt8] { try Crypto.randomBytes(count) }
}

/// Writes the entries of one backup, in order, to a sink (spec/BACKUP.md §2, §8): the keybag
/// entry at once, then items entries of at most 1,024 records or 4 MiB each as items arrive,
/// then the manifest. Memory holds one items entry at a time.
package final class BackupEncoder {
    package let common: BackupCommon
    package let keybag: BackupKeybag
    private let sink: BackupEntrySink
    private let random: BackupRandomSource
    private var classKeys: [ProtectionClass: SecretKey] = [:]
    private let macKey: SecretKey
    private var manifestEntries: [ManifestEntry] = []
    private var records: [UInt8] = []
    private var recordCount = 0
    private var entryNumber = 1
    private var countsByClass = [UInt64](repeating: 0, count: 6)
    private var itemCount: UInt64 = 0
    private var notExported: UInt64 = 0
    private var finished = false
    /// Records per items entry; the fixture generator lowers it to make several entries.
    private let itemsPerEntry: Int

    /// Draws the backup UUID, the salt (with a password) and six fresh class keys, wraps them
    /// (§4.2) and writes the keybag entry.
    /// - Parameters:
    ///   - password: nil for a device-only backup (`--no-password`).
    ///   - logN: scrypt cost of the password (r = 8, p = 1).
    package init(
        device: DeviceSecret, keychainUUID: [UInt8], createdAt: UInt64, password: [UInt8]?, logN: UInt8,
        random: BackupRandomSource, sink: BackupEntrySink,
        itemsPerEntry: Int = BackupConstants.writerItemsPerEntry
    ) throws {
        self.sink = sink
        self.itemsPerEntry = min(max(1, itemsPerEntry), BackupConstants.writerItemsPerEntry)
        self.random = random
        var uuid = try random.bytes(16)
        uuid[6] = (uuid[6] & 0x0f) | 0x40
        uuid[8] = (uuid[8] & 0x3f) | 0x80
        let mode: BackupMode = password == nil ? .deviceOnly : .password
        let kdf: KDFParameters = password == nil ? .none : .scrypt(salt: try random.bytes(16), logN: logN)
        try kdf.validate()
        common = BackupCommon(
            mode: mode, backupUUID: uuid, sourceDeviceUUID: device.uuid, keychainUUID: keychainUUID,
            createdAt: createdAt, kdf: kdf)
        let keys = BackupKeys(
            passwordKey: try password.map { try BackupKeys.passwordKey(password: $0, kdf: kdf, backupUUID: uuid) },
            deviceKey: try BackupKeys.deviceKey(device: device, backupUUID: uuid))
        var entries: [BackupKeybagEntry] = []
        for pc in BackupConstants.exportedClasses {
            var raw = try random.bytes(32)
            let key = SecretKey(consuming: &raw)
            classKeys[pc] = key
            let kind = BackupKeybag.wrapKind(pc, mode: mode)
            entries.append(
                BackupKeybagEntry(
                    protectionClass: pc, wrap: kind, wrappedKey: try Crypto.wrap(key, with: try keys.kek(kind)!)))
        }
        keybag = BackupKeybag(common: common, entries: entries)
        macKey = try keys.manifestMACKey(mode: mode)!
        try emit(BackupConstants.keybagName, keybag.encode())
    }

    /// Adds one item. akpu items are refused: they are never exported (§4.2); count them
    /// with `noteNotExported` instead.
    package func add(uuid: [UInt8], protection: ProtectionClass, flags: UInt8, plaintext: ItemPlaintext) throws {
        precondition(!finished)
        guard let classKey = classKeys[protection] else {
            throw FormatError.invalidField(
                field: "item protection class", reason: "\(protection.code) items are never exported")
        }
        var itemKey = try random.bytes(32)
        defer { Crypto.cleanse(&itemKey) }
        let record = try BackupItemRecord.seal(
            plaintext, uuid: uuid, protectionClass: protection, flags: flags,
            classKey: classKey, itemKey: itemKey, backupUUID: common.backupUUID,
            entry: entryNumber, index: recordCount)
        // A record that would overflow the entry goes to the next one; it must be sealed for
        // that entry's number and index, so seal again (only at entry boundaries).
        if recordCount > 0,
            recordCount >= itemsPerEntry
                || records.count + record.encodedSize > BackupConstants.writerEntryBytes
        {
            try flushEntry()
            try add(uuid: uuid, protection: protection, flags: flags, plaintext: plaintext)
            return
        }
        record.encode(into: &records)
        recordCount += 1
        itemCount += 1
        countsByClass[Int(protection.rawValue) - 6] += 1
    }

    /// Counts an item the backup leaves out (akpu).
    package func noteNotExported() { notExported += 1 }

    /// Writes the last items entry and the manifest.
    @discardableResult
    package func finish() throws -> Manifest {
        precondition(!finished)
        finished = true
        if recordCount > 0 { try flushEntry() }
        let manifest = Manifest(
            common: common, itemCount: itemCount, countsByClass: countsByClass,
            notExported: notExported, entries: manifestEntries)
        try sink.writeEntry(name: BackupConstants.manifestName, bytes: manifest.encode(macKey: macKey))
        return manifest
    }

    package var itemsWritten: UInt64 { itemCount }

    private func flushEntry() throws {
        let bytes = ItemsEntry.encode(number: entryNumber, count: recordCount, records: records)
        try emit(BackupConstants.itemsName(entryNumber), bytes)
        entryNumber += 1
        records.removeAll(keepingCapacity: true)
        recordCount = 0
    }

    private func emit(_ name: String, _ bytes: [UInt8]) throws {
        manifestEntries.append(ManifestEntry(name: name, size: UInt64(bytes.count), sha256: Crypto.sha256(bytes)))
        try sink.writeEntry(name: name, bytes: bytes)
    }
}
