import LatchkeyCrypto
import LatchkeyFormat

/// What `latchkey verify --repair` would do to a keychain that does not open because of damage:
/// cut the file back to the end of its last intact transaction (spec/FORMAT.md §10.4), and
/// exactly what that drops.
public struct RepairPlan: Sendable, Codable, Equatable {
    /// One record in the part that would be cut off that still authenticates at its offset.
    public struct DroppedRecord: Sendable, Codable, Equatable {
        public var offset: UInt64
        public var sequence: UInt64
        /// "put", "delete", "keybag change (retired)", or "type 0xNN".
        public var kind: String
        /// The item the record names (32 hex digits), for puts and deletes.
        public var item: String?
        /// The item's class code, protection class and a short summary of its attributes
        /// (account, service, server, label), when the put could be decrypted here.
        public var summary: String?
        /// What cutting does to that item: "loses this version", "comes back (its delete is
        /// dropped)", …
        public var effect: String
    }

    public var path: String
    /// What stops the keychain from opening.
    public var problem: String
    public var fileSize: UInt64
    /// The file is cut to this many bytes: the end of the last intact transaction.
    public var cutAt: UInt64
    /// The last change (sequence number) the keychain keeps.
    public var keepsThroughChange: UInt64
    /// Live items the keychain keeps.
    public var keptItems: Int
    public var dropped: [DroppedRecord]
    /// Bytes of the cut-off part that belong to no record that authenticates: what they held
    /// cannot be known.
    public var unverifiableBytes: UInt64

    public var droppedBytes: UInt64 { fileSize - cutAt }
}

extension KeychainStore {
    /// Works out the repair of the keychain at `path` without changing anything. nil when the
    /// file scans cleanly (nothing to cut; a rolled-back file is adopted with
    /// `--accept-rollback` instead). With the passcode, the plan names the items it would drop
    /// (the class keys come from the header's keybag; a wrong passcode names none of them).
    /// - Throws: what opening throws when the damage is in the header (nothing to cut back to).
    static func repairPlan(path: String, device: Device, passcode: [UInt8]? = nil) throws -> RepairPlan? {
        let fs = device.fs
        let fd = try io({ try fs.openReadOnly(path) }, "open the keychain")
        try requireRegularFile(fs: fs, fd: fd, path: path)
        defer { fs.close(fd) }
        let (header, headerSize, keys) = try readHeader(fs: fs, fd: fd, path: path, device: device)
        var classKeys: [ProtectionClass: SecretKey] = [:]
        let passKey = try passcode.flatMap {
            header.keybag.hasPasscode ? try keys.passcodeKey(passcode: $0, kdf: header.keybag.kdf) : nil
        }
        for e in header.keybag.entries {
            guard let kek = e.wrap == .device ? keys.deviceWrap : passKey else { continue }
            classKeys[e.protectionClass] = try? Crypto.unwrap(e.wrappedKey, with: kek)
        }
        var log = LogState(header: header, headerSize: headerSize)
        let problem: String
        let fileSize = try io({ try fs.size(fd) }, "read the keychain")
        do {
            let end = try io({ try log.scan(fs: fs, fd: fd, keys: keys) }, "read the keychain")
            guard let failure = end.failure else { return nil }
            let seen = (try device.state(fileUUID: header.fileUUID))?.newestSequence ?? 0
            guard seen > log.lastSequence else { return nil }  // a torn tail: open cuts it
            problem =
                "damage at byte \(failure.offset) (\(failure.reason)) in a change this device acknowledged (up to change \(seen))"
        } catch Corruption.damaged(let offset, let reason) {
            problem = "damage at byte \(offset) (\(reason))"
        } catch Corruption.retiredKeybagChange(let offset) {
            problem = "a passcode change appended as a keybag record at byte \(offset) (retired, spec/FORMAT.md §6.6)"
        } catch Corruption.newerVersion(let offset, let type) {
            throw KeychainError(
                .decode,
                "the keychain \(path) holds a record of type \(type) at byte \(offset) that this Latchkey does not know; upgrade Latchkey rather than cut it off"
            )
        }
        var plan = RepairPlan(
            path: path, problem: problem, fileSize: fileSize, cutAt: log.end,
            keepsThroughChange: log.lastSequence, keptItems: log.items.count, dropped: [],
            unverifiableBytes: 0)
        var found: [(UInt64, FrameHeader, [UInt8])] = []
        try io(
            {
                do {
                    try forEachAuthenticatedRecord(from: log.end, fileSize: fileSize, fs: fs, fd: fd, keys: keys) {
                        at, frame, record in
                        found.append(
                            (
                                at, frame,
                                Array(
                                    record.dropFirst(FormatConstants.frameHeaderSize).dropLast(
                                        FormatConstants.frameTagSize))
                            ))
                        return true
                    }
                } catch is SearchBudgetExceeded {
                    // Crafted frame headers (§10.2's budget): what follows is listed as bytes that
                    // do not verify.
                }
            }, "read the keychain")
        var covered: UInt64 = 0
        var live = Set(log.items.keys)
        for (offset, frame, payload) in found {
            covered += UInt64(frame.recordSize)
            var record = RepairPlan.DroppedRecord(offset: offset, sequence: frame.sequence, kind: "", effect: "")
            switch RecordType(rawValue: frame.type) {
            case .itemPut:
                guard let put = try? ItemPutPayload.decode(payload[...]) else {
                    record.kind = "put (undecodable)"
                    record.effect = "none known"
                    break
                }
                let id = ID16(put.uuid)
                record.kind = "put"
                record.item = hexString(put.uuid)
                if let key = classKeys[put.protectionClass],
                    let p = try? put.open(classKey: key, fileUUID: header.fileUUID)
                {
                    record.summary = summary(p, put.protectionClass)
                } else {
                    record.summary = "\(put.protectionClass.code), locked"
                }
                record.effect =
                    live.contains(id) ? "the item keeps its earlier version" : "the item is not in the keychain"
                live.insert(id)
            case .itemDelete:
                let uuid = Array(payload.prefix(16))
                record.kind = "delete"
                record.item = hexString(uuid)
                record.effect = log.items[ID16(uuid)] != nil ? "the item comes back (its delete is dropped)" : "none"
            case .attributeHashes:
                // Part of the put before it (spec §7.6): the put's line says what is dropped.
                continue
            case .history:
                record.kind = "history"
                record.item = hexString(payload.prefix(16))
                record.effect = "an earlier version of the item is forgotten"
            case .keybagChange:
                record.kind = "keybag change (retired)"
                record.effect = "the passcode in force before it applies again"
            case nil:
                record.kind = "type 0x" + hexString([frame.type])
                record.effect = RecordType.isAncillary(frame.type) ? "none (ancillary)" : "unknown"
            }
            plan.dropped.append(record)
        }
        plan.unverifiableBytes = plan.droppedBytes - min(covered, plan.droppedBytes)
        return plan
    }

    /// Carries out `plan`: under the exclusive lock, checks that the file is still the one
    /// planned for (same size, same intact prefix), truncates it at `plan.cutAt`, fsyncs it,
    /// and sets the device state to the change the keychain now ends at (as
    /// `--accept-rollback` adopts a file).
    /// - Throws: errSecDecode when the file changed since the plan was made; errSecIO.
    static func repair(_ plan: RepairPlan, device: Device) throws {
        let fs = device.fs
        let fd = try io({ try fs.open(plan.path, create: false, exclusive: false, mode: 0o600) }, "open the keychain")
        try requireRegularFile(fs: fs, fd: fd, path: plan.path)
        defer { fs.close(fd) }
        try io({ try fs.lock(fd) }, "lock the keychain")
        defer { fs.unlock(fd) }
        let (header, headerSize, keys) = try readHeader(fs: fs, fd: fd, path: plan.path, device: device)
        var log = LogState(header: header, headerSize: headerSize)
        _ = try? log.scan(fs: fs, fd: fd, keys: keys)
        let size = try io({ try fs.size(fd) }, "read the keychain")
        guard size == plan.fileSize, log.end == plan.cutAt, log.lastSequence == plan.keepsThroughChange else {
            throw KeychainError(
                .decode,
                "the keychain \(plan.path) changed since the repair was planned; nothing was cut; plan the repair again"
            )
        }
        try io(
            {
                try fs.truncate(fd, to: plan.cutAt)
                try fs.sync(fd)
            }, "cut the keychain back")
        // An index covering the part cut off is ignored anyway (§17.5); removing it keeps it
        // from ever meeting what is appended after the cut.
        try? fs.remove(IndexBase.path(of: plan.path))
        try? device.saveState(
            DeviceState(fileUUID: header.fileUUID, newestSequence: plan.keepsThroughChange), allowLower: true)
    }

    private static func summary(_ p: ItemPlaintext, _ pc: ProtectionClass) -> String {
        var parts = ["\(p.itemClass.rawValue) \(pc.code)"]
        for name in ["acct", "svce", "srvr", "labl"] {
            if case .string(let v)? = p.attributes[name] { parts.append("\(name)=\(v)") }
        }
        return parts.joined(separator: " ")
    }
}
