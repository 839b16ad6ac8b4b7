import LatchkeyCrypto
import LatchkeyFormat

/// One item as the fixture writes it and as a reader must find it.
struct FixtureItem {
    var uuid: [UInt8]
    var plaintext: ItemPlaintext
    var protection: ProtectionClass
    var flags: UInt8 = 0
}

/// One record of a transaction.
enum Change {
    case put(FixtureItem)
    case delete(uuid: [UInt8])
    case keybag(Keybag)
    /// Any record type with any payload, framed and tagged correctly.
    case raw(type: UInt8, payload: [UInt8])
    /// A history record (spec §7.7) keeping the item's newest put before this transaction, its
    /// payload copied byte for byte, with the bound and time given; it goes right before the
    /// put or delete of the item in the same transaction, as a writer places it.
    case history(uuid: [UInt8], kind: HistoryRecord.Kind, keepVersions: UInt8, keepDays: UInt16, at: UInt64)
}

/// A history record the builder wrote (spec §7.7), and the version it keeps.
struct FixtureVersion {
    var record: HistoryRecord
    /// The item as it was before the transaction that replaced or deleted it.
    var item: FixtureItem
    var offset: Int
    var sequence: UInt64
}

/// Where a record landed in the file.
struct RecordInfo {
    var offset: Int
    var size: Int
    var type: UInt8
    var sequence: UInt64
}

/// The file as it stood after a committed transaction.
struct Snapshot {
    var fileSize: Int
    var sequence: UInt64
    var live: [FixtureItem]
}

/// A second, independent writer of the keychain format: it composes the LatchkeyFormat
/// encoders directly (no KeychainStore), draws every random byte from `DeterministicRandom`,
/// and keeps the whole file in memory so fixtures can be cut and damaged afterwards.
final class KeychainBuilder {
    /// Creation time of every fixture: 2025-01-01T00:00:00Z (Unix seconds).
    static let createdAt: UInt64 = 1_735_689_600
    /// The same instant as a CFAbsoluteTime (seconds since 2001-01-01), for cdat/mdat.
    static let createdAtAbsolute: Double = Double(createdAt) - 978_307_200
    /// scrypt cost of every fixture: N = 2^10, the smallest a reader accepts, so tests are fast.
    static let logN: UInt8 = 10

    private(set) var rng: DeterministicRandom
    let device: DeviceSecret
    let fileUUID: [UInt8]
    let keys: FileKeys
    private(set) var header: FileHeader
    private(set) var passcode: String?
    /// The keybag in force (the header's).
    private(set) var keybag: Keybag
    private(set) var classKeys: [ProtectionClass: SecretKey] = [:]
    /// Item keys by item UUID hex, for the annotated dump.
    private(set) var itemKeys: [String: [UInt8]] = [:]
    /// Everything after the header.
    private(set) var body: [UInt8] = []
    private(set) var records: [RecordInfo] = []
    private(set) var sequence: UInt64 = 0
    private(set) var live: [String: FixtureItem] = [:]
    /// The newest put record of each live item, by item UUID hex.
    private(set) var livePut: [String: RecordInfo] = [:]
    private(set) var snapshots: [Snapshot] = []
    /// Every history record written, in file order.
    private(set) var versions: [FixtureVersion] = []
    /// Whether each put is followed, in its transaction, by its attribute-hash record (spec
    /// §7.6), as a writer that knows the record writes it.
    var hashRecords = false
    /// The header's size: fixed at creation, and again by a passcode change, which rewrites the
    /// file (removing the passcode removes the akpu entry, spec §4.2).
    private(set) var headerSize: Int
    /// Bytes 48..<56 of the header (flags and reserved), when a fixture sets them; the header
    /// MAC is computed over them.
    let flagsAndReserved: [UInt8]?

    /// - Parameters:
    ///   - minor, extensionBytes, flagsAndReserved: header fields a newer minor version may use (§12).
    init(
        seed: String, passcode: String?, minor: UInt16 = FormatConstants.fileMinor, extensionBytes: [UInt8] = [],
        flagsAndReserved: [UInt8]? = nil
    ) throws {
        rng = DeterministicRandom(label: seed)
        let deviceUUID = rng.uuid()
        device = DeviceSecret(uuid: deviceUUID, secret: SecretKey(copying: rng.bytes(FormatConstants.deviceSecretSize)))
        fileUUID = rng.uuid()
        keys = try FileKeys(device: device, fileUUID: fileUUID)
        self.passcode = passcode
        let kdf: KDFParameters =
            passcode == nil
            ? .none : .scrypt(salt: rng.bytes(FormatConstants.saltSize), logN: KeychainBuilder.logN)
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || passcode != nil {
            classKeys[pc] = SecretKey(copying: rng.bytes(32))
        }
        let bag = try KeychainBuilder.wrap(classKeys, kdf: kdf, passcode: passcode, keys: keys)
        keybag = bag
        header = FileHeader(
            fileUUID: fileUUID, deviceUUID: deviceUUID, baseSequence: 0,
            createdAt: KeychainBuilder.createdAt, keybag: bag)
        header.minor = minor
        header.extensionBytes = extensionBytes
        self.flagsAndReserved = flagsAndReserved
        headerSize = header.encode(macKey: keys.headerMAC).count
        snapshots.append(Snapshot(fileSize: headerSize, sequence: 0, live: []))
    }

    /// Wraps each class key as spec §4.2 says: dk/dku by the device wrap key; the others by the
    /// passcode key when there is a passcode (akpu exists only then), else by the device key.
    static func wrap(
        _ classKeys: [ProtectionClass: SecretKey], kdf: KDFParameters, passcode: String?,
        keys: FileKeys
    ) throws -> Keybag {
        let passKey = try passcode.map { try keys.passcodeKey(passcode: Array($0.utf8), kdf: kdf) }
        var entries: [KeybagEntry] = []
        for pc in ProtectionClass.allCases {
            guard let key = classKeys[pc] else { continue }
            let byPasscode = passKey != nil && !pc.isAlwaysAvailable
            let kek = byPasscode ? passKey! : keys.deviceWrap
            entries.append(
                KeybagEntry(
                    protectionClass: pc, wrap: byPasscode ? .passcode : .device,
                    wrappedKey: try Crypto.wrap(key, with: kek)))
        }
        return Keybag(kdf: kdf, entries: entries)
    }

    var headerBytes: [UInt8] {
        var bytes = header.encode(macKey: keys.headerMAC)
        if let patch = flagsAndReserved {
            bytes.replaceSubrange(48..<56, with: patch)
            KeychainBuilder.recomputeHeaderMAC(&bytes, headerSize: headerSize, keys: keys)
        }
        return bytes
    }

    /// Rewrites the header MAC (the header's last 32 bytes) over the bytes before it.
    static func recomputeHeaderMAC(_ file: inout [UInt8], headerSize: Int, keys: FileKeys) {
        let macAt = headerSize - FormatConstants.headerMACSize
        file.replaceSubrange(
            macAt..<headerSize, with: Crypto.hmacSHA256(key: keys.headerMAC, parts: [Array(file[0..<macAt])]))
    }
    var file: [UInt8] { headerBytes + body }

    // MARK: Items

    /// A new item with a deterministic UUID; cdat = mdat = the fixture epoch plus `minute` minutes.
    func makeItem(
        _ itemClass: ItemClass, _ attributes: [String: AttributeValue], data: String,
        protection: ProtectionClass, minute: Int
    ) -> FixtureItem {
        var attrs = attributes
        let t = KeychainBuilder.createdAtAbsolute + Double(minute * 60)
        attrs["cdat"] = .date(t)
        attrs["mdat"] = .date(t)
        return FixtureItem(
            uuid: rng.uuid(),
            plaintext: ItemPlaintext(itemClass: itemClass, attributes: attrs, data: Array(data.utf8)),
            protection: protection)
    }

    /// A fresh deterministic UUID.
    func newUUID() -> [UInt8] { rng.uuid() }

    /// A fresh deterministic 32-byte key.
    func newKey() -> SecretKey { SecretKey(copying: rng.bytes(32)) }

    func item(_ uuid: [UInt8]) -> FixtureItem { live[hexString(uuid)]! }

    // MARK: Writing

    /// Appends one transaction: every record but the last carries the continues flag (§6.1).
    func commit(_ changes: [Change]) throws {
        var payloads: [(RecordType.RawValue, [UInt8], uuid: String?)] = []
        var next = live
        /// The history records of this transaction, by index in `payloads`.
        var kept: [Int: FixtureVersion] = [:]
        for change in changes {
            switch change {
            case .history(let uuid, let kind, let keepVersions, let keepDays, let at):
                // The newest put before this transaction: `livePut` and `live` change only
                // once the transaction is written.
                let record = HistoryRecord(
                    uuid: uuid, kind: kind, keepVersions: keepVersions, keepDays: keepDays, supersededAt: at,
                    put: newestPutPayload(uuid))
                kept[payloads.count] = FixtureVersion(
                    record: record, item: live[hexString(uuid)]!, offset: 0, sequence: 0)
                payloads.append((RecordType.history.rawValue, record.encode(), nil))
            case .put(let item):
                let itemKey = rng.bytes(32)
                itemKeys[hexString(item.uuid)] = itemKey
                let sealed = try ItemPutPayload.seal(
                    item.plaintext, uuid: item.uuid, protectionClass: item.protection,
                    flags: item.flags, keys: keys, classKey: classKeys[item.protection]!,
                    fileUUID: fileUUID, itemKey: itemKey)
                let encoded = sealed.encode()
                payloads.append((RecordType.itemPut.rawValue, encoded, hexString(item.uuid)))
                if hashRecords {
                    payloads.append(
                        (
                            RecordType.attributeHashes.rawValue,
                            keys.attributeHashRecord(for: item.plaintext, putPayload: encoded).encode(), nil
                        ))
                }
                next[hexString(item.uuid)] = item
            case .delete(let uuid):
                precondition(next.removeValue(forKey: hexString(uuid)) != nil, "fixture deletes a missing item")
                payloads.append(
                    (RecordType.itemDelete.rawValue, ItemDeletePayload(uuid: uuid).encode(), hexString(uuid)))
            case .keybag(let bag):
                // Retired record type (spec §6.6): only negative fixtures write one.
                payloads.append((RecordType.keybagChange.rawValue, bag.encode(), nil))
            case .raw(let type, let payload):
                payloads.append((type, payload, nil))
            }
        }
        for (i, (type, payload, uuid)) in payloads.enumerated() {
            sequence += 1
            let offset = headerSize + body.count
            let flags = i < payloads.count - 1 ? FrameHeader.continuesFlag : 0
            let record = RecordFrame.encode(
                type: type, flags: flags, sequence: sequence, payload: payload,
                offset: UInt64(offset), macKey: keys.recordMAC)
            let info = RecordInfo(offset: offset, size: record.count, type: type, sequence: sequence)
            records.append(info)
            if var version = kept[i] {
                version.offset = offset
                version.sequence = sequence
                versions.append(version)
            }
            if let uuid, type == RecordType.itemPut.rawValue { livePut[uuid] = info }
            if let uuid, type == RecordType.itemDelete.rawValue { livePut[uuid] = nil }
            body += record
        }
        live = next
        snapshots.append(Snapshot(fileSize: headerSize + body.count, sequence: sequence, live: liveItems))
    }

    /// An item-put payload whose plaintext carries `plaintextVersion` in its version byte
    /// (§8.1), sealed and wrapped correctly otherwise; for `.raw(type: 1, …)`.
    func putPayload(_ item: FixtureItem, plaintextVersion: UInt8) throws -> [UInt8] {
        let itemKey = rng.bytes(32)
        var p = try ItemPutPayload.seal(
            item.plaintext, uuid: item.uuid, protectionClass: item.protection, flags: item.flags,
            keys: keys, classKey: classKeys[item.protection]!, fileUUID: fileUUID, itemKey: itemKey)
        var body = item.plaintext.encode()
        body[0] = plaintextVersion
        let sealed = try Crypto.aesGCMSeal(
            key: itemKey, nonce: FormatConstants.itemNonce, aad: p.aad(fileUUID: fileUUID), plaintext: body)
        p.ciphertext = sealed.ciphertext
        p.tag = sealed.tag
        return p.encode()
    }

    /// The payload of the newest put record of the live item `uuid`, as the file holds it.
    func newestPutPayload(_ uuid: [UInt8]) -> [UInt8] {
        let put = livePut[hexString(uuid)]!
        let start = put.offset - headerSize
        return Array(body[start + FormatConstants.frameHeaderSize..<start + put.size - FormatConstants.frameTagSize])
    }

    /// Makes the next record skip one sequence number (§6.5 forbids it).
    func skipSequenceNumber() { sequence += 1 }

    /// The live items in a stable order (UUID).
    var liveItems: [FixtureItem] { live.keys.sorted().map { live[$0]! } }

    /// Changes or removes the passcode as spec §11.6 describes: new random class keys for every
    /// class but dk and dku (whose keybag entries stay byte for byte), a fresh salt for a new
    /// passcode (KDF id 0 and no akpu entry when `newPasscode` is nil), each live item's newest
    /// put record copied with its item key rewrapped under the new class key (payload bytes
    /// [40..80); ciphertext and tag unchanged), live akpu items left out when the passcode is
    /// removed, and the file rewritten with base sequence number = the old last sequence
    /// number + 1.
    func changePasscode(to newPasscode: String?) throws {
        precondition(passcode != nil, "the fixtures change or remove an existing passcode")
        precondition(versions.isEmpty, "history records are not rewrapped here (spec §11.6): no such fixture keeps any")
        var newKeys: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases {
            if pc.isAlwaysAvailable {
                newKeys[pc] = classKeys[pc]
            } else if pc != .whenPasscodeSetThisDeviceOnly || newPasscode != nil {
                newKeys[pc] = SecretKey(copying: rng.bytes(32))
            }
        }
        let kdf: KDFParameters =
            newPasscode == nil
            ? .none : .scrypt(salt: rng.bytes(FormatConstants.saltSize), logN: KeychainBuilder.logN)
        var bag = try KeychainBuilder.wrap(newKeys, kdf: kdf, passcode: newPasscode, keys: keys)
        bag.entries = bag.entries.map { e in
            e.protectionClass.isAlwaysAvailable ? keybag.entry(for: e.protectionClass)! : e
        }
        let old = file
        header.keybag = bag
        header.baseSequence = sequence + 1
        headerSize = header.encode(macKey: keys.headerMAC).count
        sequence = header.baseSequence
        body = []
        records = []
        var rewritten: [String: RecordInfo] = [:]
        for (uuid, put) in livePut.sorted(by: { $0.value.offset < $1.value.offset }) {
            var payload = Array(
                old[put.offset + FormatConstants.frameHeaderSize..<put.offset + put.size - FormatConstants.frameTagSize]
            )
            let pc = ProtectionClass(rawValue: payload[20])!
            guard let newKey = newKeys[pc] else {
                live[uuid] = nil  // akpu, when the passcode is removed: deleted, as iOS does
                continue
            }
            if !pc.isAlwaysAvailable {
                let itemKey = try Crypto.unwrap(Array(payload[40..<80]), with: classKeys[pc]!)
                payload.replaceSubrange(40..<80, with: try Crypto.wrap(itemKey, with: newKey))
            }
            sequence += 1
            let offset = headerSize + body.count
            let record = RecordFrame.encode(
                type: RecordType.itemPut.rawValue, flags: 0, sequence: sequence, payload: payload,
                offset: UInt64(offset), macKey: keys.recordMAC)
            let info = RecordInfo(
                offset: offset, size: record.count, type: RecordType.itemPut.rawValue, sequence: sequence)
            records.append(info)
            rewritten[uuid] = info
            body += record
        }
        livePut = rewritten
        classKeys = newKeys
        keybag = bag
        passcode = newPasscode
        // Earlier snapshots describe the old file; cuts are only meaningful in the new one.
        snapshots = [Snapshot(fileSize: headerSize + body.count, sequence: sequence, live: liveItems)]
    }

    /// A put payload for `item` sealed under `classKey`, a key that need not be in the keybag:
    /// for `.raw(type: 1, …)` records that a reader must refuse (an item of a class the keybag
    /// has no entry for, spec §10.3).
    func putPayload(_ item: FixtureItem, classKey: SecretKey) throws -> [UInt8] {
        try ItemPutPayload.seal(
            item.plaintext, uuid: item.uuid, protectionClass: item.protection, flags: item.flags,
            keys: keys, classKey: classKey, fileUUID: fileUUID, itemKey: rng.bytes(32)
        ).encode()
    }

    /// The keybag-change record that Latchkey 0.1's passwd appended (type 0x03, retired in
    /// spec §6.6): the same class keys rewrapped under `newPasscode`, dk and dku unchanged.
    func legacyKeybagChange(to newPasscode: String) throws -> Keybag {
        let kdf = KDFParameters.scrypt(salt: rng.bytes(FormatConstants.saltSize), logN: KeychainBuilder.logN)
        var bag = try KeychainBuilder.wrap(classKeys, kdf: kdf, passcode: newPasscode, keys: keys)
        bag.entries = bag.entries.map { e in
            e.protectionClass.isAlwaysAvailable ? keybag.entry(for: e.protectionClass)! : e
        }
        return bag
    }

    /// The device state file (§9) remembering `newestSequence`.
    func stateFile(newestSequence: UInt64) throws -> [UInt8] {
        DeviceState(fileUUID: fileUUID, newestSequence: newestSequence).encode(
            macKey: try DeviceState.macKey(device: device))
    }
}
